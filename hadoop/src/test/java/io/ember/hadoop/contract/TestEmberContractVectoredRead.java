package io.ember.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/** Hadoop's vectored read contract against Ember, for each buffer type Hadoop lists. */
public class TestEmberContractVectoredRead extends AbstractContractVectoredReadTest {
  /** Called by JUnit's Parameterized runner with "direct" or "array". */
  public TestEmberContractVectoredRead(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new EmberContract(conf);
  }
}
