package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.rdma.RdmaVm;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Runs {@link NvmfRdmaFileTest} inside the kernel-nvmet VM started with {@code --rdma}, where the
 * NVMf tier reaches Linux's nvmet-rdma over soft-RoCE (see {@link RdmaVm}).
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_RDMA_VM",
    matches = "[0-9]+",
    disabledReason =
        "EMBER_TEST_RDMA_VM is not set (the port of a kernel-nvmet VM started with --rdma;"
            + " .ci/run starts one)")
class NvmfRdmaInVmTest {
  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void fileSuiteOnTheNvmfTierOverRdma() throws Exception {
    String out = RdmaVm.runInVm(List.of(NvmfRdmaFileTest.class.getName()));
    assertEquals(0, RdmaVm.count(out, "tests failed"), out);
    assertEquals(
        0, RdmaVm.count(out, "tests aborted"), "a skipped RDMA suite proves nothing:\n" + out);
    assertTrue(RdmaVm.count(out, "tests successful") >= 5, out);
  }
}
