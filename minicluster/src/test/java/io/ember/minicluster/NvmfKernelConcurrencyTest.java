package io.ember.minicluster;

import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** Many clients at once on an NVMf data node over the Linux kernel's target. */
@EnabledIfEnvironmentVariable(
    named = TestTier.KERNEL_TARGET_ENV,
    matches = ".+",
    disabledReason = TestTier.NO_KERNEL_TARGET)
class NvmfKernelConcurrencyTest extends ConcurrencyTest {
  @Override
  TestTier tier() {
    return TestTier.NVMF_KERNEL;
  }
}
