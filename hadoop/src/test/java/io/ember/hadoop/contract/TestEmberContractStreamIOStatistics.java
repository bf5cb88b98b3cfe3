package io.ember.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractStreamIOStatisticsTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/** Hadoop's {@code AbstractContractStreamIOStatisticsTest} against Ember. */
public class TestEmberContractStreamIOStatistics extends AbstractContractStreamIOStatisticsTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new EmberContract(conf);
  }
}
