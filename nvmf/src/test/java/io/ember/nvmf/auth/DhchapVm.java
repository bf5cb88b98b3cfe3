package io.ember.nvmf.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The kernel-nvmet VM whose Linux has NVMe in-band authentication (Debian 12's 6.12), for the
 * DH-HMAC-CHAP interoperability tests: {@code EMBER_TEST_DHCHAP_VM} is its port and {@code
 * EMBER_TEST_KNVMET} the tool that runs commands in it; {@code .ci/run} sets both.
 */
public final class DhchapVm {
  private DhchapVm() {}

  /** The VM's forwarded NVMe/TCP port. */
  public static String port() {
    return System.getenv("EMBER_TEST_DHCHAP_VM");
  }

  /** Skips the calling test unless the tool that runs commands in the VM is there. */
  public static void assumeTool() {
    String tool = System.getenv("EMBER_TEST_KNVMET");
    assumeTrue(tool != null && new File(tool).canExecute(), "EMBER_TEST_KNVMET names no tool");
  }

  /** Runs a shell command in the VM as root, asserts that it succeeded and returns its output. */
  public static String exec(String command) throws Exception {
    Process p =
        new ProcessBuilder(
                System.getenv("EMBER_TEST_KNVMET"), "exec", "--port", port(), "--", command)
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(10, TimeUnit.MINUTES), "kernel-nvmet exec did not finish");
    assertEquals(0, p.exitValue(), "in the VM: " + command + "\n" + out);
    return out;
  }
}
