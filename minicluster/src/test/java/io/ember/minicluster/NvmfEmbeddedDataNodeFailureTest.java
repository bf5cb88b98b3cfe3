package io.ember.minicluster;

/** Data-node failures on the NVMf tier over embedded targets. */
class NvmfEmbeddedDataNodeFailureTest extends DataNodeFailureTest {
  @Override
  TestTier tier() {
    return TestTier.NVMF_EMBEDDED;
  }
}
