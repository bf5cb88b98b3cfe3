package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An independent host against the embedded target: the stdlib-Python NVMe/TCP host that ships with
 * the kernel-nvmet tool (known to work against Linux nvmet). Discovery, connect, identify,
 * in-capsule and R2T writes, read back, flush. Skipped where the script or python3 is missing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PythonProbeInteropTest {
  static File probe() {
    String env = System.getenv("EMBER_NVME_TCP_PROBE");
    File f = new File(env != null ? env : "../../shared/tools/kernel-nvmet/nvme_tcp_probe.py");
    return f.getAbsoluteFile();
  }

  @Test
  void pythonHostWorksAgainstTheEmbeddedTarget() throws Exception {
    File script = probe();
    assumeTrue(
        script.isFile(), "no NVMe/TCP probe script at " + script + " (set EMBER_NVME_TCP_PROBE)");
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:python-probe");
    s.addNamespace(new MemoryNamespace(16L << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start()) {
      Process p;
      try {
        p =
            new ProcessBuilder(
                    "python3",
                    script.getPath(),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    Integer.toString(t.port()),
                    "--subnqn",
                    s.nqn(),
                    "--discover")
                .redirectErrorStream(true)
                .start();
      } catch (java.io.IOException e) {
        assumeTrue(false, "python3 is not available: " + e.getMessage());
        return;
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "probe finished");
      assertEquals(0, p.exitValue(), out);
      assertTrue(out.contains("subnqn=" + s.nqn()), "discovery log lists the subsystem:\n" + out);
      assertTrue(out.contains("(R2T + H2CData) OK"), out);
      assertTrue(out.contains("MATCH"), out);
    }
  }
}
