package io.ember.minicluster;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Data-node failures on DRAM data nodes serving one-sided RDMA. Run inside the kernel-nvmet VM by
 * {@link DramRdmaInVmTest}; skipped, saying so, elsewhere.
 */
@EnabledIfEnvironmentVariable(
    named = TestTier.RDMA_ADDRESS_ENV,
    matches = ".+",
    disabledReason =
        TestTier.RDMA_ADDRESS_ENV
            + " is not set (an RDMA device's address; DramRdmaInVmTest sets it inside the"
            + " kernel-nvmet VM)")
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
