package io.ember.minicluster;

import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** Data-node failures on the NVMf tier over the Linux kernel's target. */
@EnabledIfEnvironmentVariable(
    named = TestTier.KERNEL_TARGET_ENV,
    matches = ".+",
    disabledReason = TestTier.NO_KERNEL_TARGET)
class NvmfKernelDataNodeFailureTest extends DataNodeFailureTest {
  @Override
  TestTier tier() {
    return TestTier.NVMF_KERNEL;
  }
}
