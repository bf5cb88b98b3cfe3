package io.ember.minicluster;

import org.junit.jupiter.api.BeforeEach;

/**
 * Data-node failures on DRAM data nodes serving one-sided RDMA. Run inside the kernel-nvmet VM by
 * {@link DramRdmaInVmTest}; skipped, saying so, elsewhere.
 */
@RequiresRdmaAddress
class DramRdmaDataNodeFailureTest extends DataNodeFailureTest {
  @BeforeEach
  void needsRdma() {
    TestTier.assumeRdmaRuns();
  }

  @Override
  TestTier tier() {
    return TestTier.DRAM_RDMA;
  }
}
