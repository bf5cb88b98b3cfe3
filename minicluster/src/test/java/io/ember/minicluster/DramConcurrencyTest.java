package io.ember.minicluster;

/** Many clients at once on DRAM data nodes. */
class DramConcurrencyTest extends ConcurrencyTest {
  @Override
  TestTier tier() {
    return TestTier.DRAM;
  }
}
