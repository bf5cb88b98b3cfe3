package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.rdma.RdmaVm;
import io.ember.nvmf.rdma.RequiresRdmaVm;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs {@link NvmfRdmaFileTest} inside the kernel-nvmet VM started with {@code --rdma}, where the
 * NVMf tier reaches Linux's nvmet-rdma over soft-RoCE (see {@link RdmaVm}).
 */
@RequiresRdmaVm
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
