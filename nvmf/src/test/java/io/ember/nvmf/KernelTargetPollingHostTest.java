package io.ember.nvmf;

import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The behaviour suite against the real target of {@link KernelTargetTest}, with the host on one
 * thread that polls its connections instead of sleeping ({@link
 * NvmfHostOptions.Builder#pollThreads}).
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_TARGET",
    matches = ".+",
    disabledReason = "EMBER_TEST_NVMF_TARGET is not set (see KernelTargetTest)")
class KernelTargetPollingHostTest extends KernelTargetTest {
  @Override
  protected NvmfHostOptions.Builder options() {
    return super.options().pollThreads(1);
  }
}
