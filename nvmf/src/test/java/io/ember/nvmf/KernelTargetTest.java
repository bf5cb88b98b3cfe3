package io.ember.nvmf;

import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The behaviour suite against a real target, typically the Linux kernel's nvmet started by {@code
 * ../shared/tools/kernel-nvmet/kernel-nvmet start --port 4420}, named by {@code
 * EMBER_TEST_NVMF_TARGET=nvmf+tcp://127.0.0.1:4420/nqn.2014-08.org.nvmexpress:test-target}.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_TARGET",
    matches = ".+",
    disabledReason =
        "EMBER_TEST_NVMF_TARGET is not set (e.g. nvmf+tcp://127.0.0.1:4420/"
            + "nqn.2014-08.org.nvmexpress:test-target after kernel-nvmet start --port 4420)")
class KernelTargetTest extends NvmfHostBehaviourTest {
  @Override
  protected String targetUri() {
    return System.getenv("EMBER_TEST_NVMF_TARGET");
  }

  @Override
  protected boolean strictLbaRangeCheck() {
    // nvmet's bdev back end leaves the range check to the block layer ("ram0: rw=0, sector=...
    // limit=..."
    // in dmesg) and answers Internal Error.
    return false;
  }
}
