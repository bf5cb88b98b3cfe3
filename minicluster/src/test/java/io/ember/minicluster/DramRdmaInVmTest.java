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
 * Runs the DRAM-over-RDMA suites inside the kernel-nvmet VM started with {@code --rdma}, where the
 * data nodes and the client share the soft-RoCE device (see {@link RdmaVm}).
 */
@RequiresRdmaVm
class DramRdmaInVmTest {
  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void dramSuitesOverRdma() throws Exception {
    String out =
        RdmaVm.runInVm(
            List.of(
                DramRdmaFileTest.class.getName(),
                DramRdmaSafetyTest.class.getName(),
                DramRdmaGrantTest.class.getName(),
                DramRdmaDataNodeFailureTest.class.getName()));
    assertEquals(0, RdmaVm.count(out, "tests failed"), out);
    assertEquals(
        0, RdmaVm.count(out, "tests aborted"), "a skipped RDMA suite proves nothing:\n" + out);
    assertTrue(RdmaVm.count(out, "tests successful") >= 25, out);
  }
}
