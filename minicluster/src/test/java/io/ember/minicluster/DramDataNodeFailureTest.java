package io.ember.minicluster;

/** Data-node failures on the DRAM tier. */
class DramDataNodeFailureTest extends DataNodeFailureTest {
  @Override
  TestTier tier() {
    return TestTier.DRAM;
  }
}
