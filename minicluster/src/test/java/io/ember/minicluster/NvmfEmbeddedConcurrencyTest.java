package io.ember.minicluster;

/** Many clients at once on NVMf data nodes over embedded targets. */
class NvmfEmbeddedConcurrencyTest extends ConcurrencyTest {
  @Override
  TestTier tier() {
    return TestTier.NVMF_EMBEDDED;
  }
}
