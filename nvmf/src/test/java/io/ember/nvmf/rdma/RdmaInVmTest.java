package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the RDMA suites where RDMA exists: inside the kernel-nvmet VM started with {@code --rdma}
 * (soft-RoCE and Linux's nvmet-rdma), through {@code kernel-nvmet exec -- chroot /host}, with this
 * build's test class path (the VM sees the host's files under {@code /host}). {@code .ci/run}
 * starts the VM and sets {@code EMBER_TEST_RDMA_VM} (its port), {@code EMBER_TEST_KNVMET} (the
 * tool) and {@code EMBER_TEST_LIBDISNI} (the folder holding libdisni.so).
 */
@RequiresRdmaVm
class RdmaInVmTest {
  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void behaviourSuiteOverRdma() throws Exception {
    String out =
        RdmaVm.runInVm(
            List.of(RdmaKernelTargetTest.class.getName(), RdmaTargetFailureTest.class.getName()));
    assertEquals(0, RdmaVm.count(out, "tests failed"), out);
    // Only the two NVMe/TCP-only tests (digests, discovery) may be skipped: a skipped RDMA suite
    // proves nothing.
    assertEquals(2, RdmaVm.count(out, "tests aborted"), out);
    assertTrue(RdmaVm.count(out, "tests successful") >= 14, out);
  }
}
