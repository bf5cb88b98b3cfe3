package io.ember.nvmf;

import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The behaviour suite against the real target of {@link KernelTargetTest}, with the host's network
 * threads polling for 200 µs after each event before they sleep ({@link
 * NvmfHostOptions.Builder#busyPoll}).
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_TARGET",
    matches = ".+",
    disabledReason = "EMBER_TEST_NVMF_TARGET is not set (see KernelTargetTest)")
class KernelTargetPollingHostTest extends KernelTargetTest {
  @Override
  protected NvmfHostOptions.Builder options() {
    return super.options().busyPoll(java.time.Duration.ofNanos(200_000));
  }
}
