package io.ember.nvmf.auth;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Ember's host authenticates to Linux's own target (nvmet with CONFIG_NVME_TARGET_AUTH), with the
 * keys, hash and group set in the target's configfs as an administrator sets them. Needs a
 * kernel-nvmet VM booted with a kernel that has NVMe in-band authentication ({@code
 * KNVMET_KPKG=linux-image-6.12.100+deb12-amd64}): {@code EMBER_TEST_DHCHAP_VM} is its port and
 * {@code EMBER_TEST_KNVMET} the tool that runs commands in it; {@code .ci/run} sets both.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_DHCHAP_VM",
    matches = "[0-9]+",
    disabledReason =
        "EMBER_TEST_DHCHAP_VM is not set (the port of a kernel-nvmet VM started with"
            + " KNVMET_KPKG=linux-image-6.12.100+deb12-amd64, whose nvmet has DH-HMAC-CHAP)")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class KernelDhchapTest {
  static final String SUB = "nqn.2014-08.org.nvmexpress:test-target";
  static final String HOST = "nqn.2024-01.io.ember:dhchap-kernel-test";
  static final String CFS = "/sys/kernel/config/nvmet";
  private static final SecureRandom RANDOM = new SecureRandom();
  private static String port;

  @BeforeAll
  static void allowOnlyOurHost() throws Exception {
    DhchapVm.assumeTool();
    port = DhchapVm.port();
    // Linux refuses a listed host while any host may connect, and the reverse: order matters.
    DhchapVm.exec(
        "set -e; mkdir -p "
            + CFS
            + "/hosts/"
            + HOST
            + "; echo 0 > "
            + CFS
            + "/subsystems/"
            + SUB
            + "/attr_allow_any_host; [ -e "
            + CFS
            + "/subsystems/"
            + SUB
            + "/allowed_hosts/"
            + HOST
            + " ] || ln -s "
            + CFS
            + "/hosts/"
            + HOST
            + " "
            + CFS
            + "/subsystems/"
            + SUB
            + "/allowed_hosts/"
            + HOST);
  }

  @AfterAll
  static void allowAnyHostAgain() throws Exception {
    if (port != null && System.getenv("EMBER_TEST_KNVMET") != null) {
      DhchapVm.exec(
          "rm -f "
              + CFS
              + "/subsystems/"
              + SUB
              + "/allowed_hosts/"
              + HOST
              + "; echo 1 > "
              + CFS
              + "/subsystems/"
              + SUB
              + "/attr_allow_any_host; rmdir "
              + CFS
              + "/hosts/"
              + HOST
              + " || true");
    }
  }

  /**
   * Sets what the kernel target demands of our host. A null controller key leaves the old one:
   * Linux cannot clear it, and a host that does not ask the controller to authenticate never uses
   * it.
   */
  static void configure(DhchapSecret hostKey, DhchapSecret ctrlKey, DhchapHash h, DhGroup g)
      throws Exception {
    String dir = CFS + "/hosts/" + HOST;
    DhchapVm.exec(
        "set -e; echo '"
            + hostKey.encoded()
            + "' > "
            + dir
            + "/dhchap_key; "
            + (ctrlKey == null
                ? ""
                : "echo '" + ctrlKey.encoded() + "' > " + dir + "/dhchap_ctrl_key; ")
            + "echo 'hmac("
            + h.label()
            + ")' > "
            + dir
            + "/dhchap_hash; echo '"
            + g.label()
            + "' > "
            + dir
            + "/dhchap_dhgroup");
  }

  private static NvmfHostOptions.Builder host() {
    return NvmfHostOptions.builder()
        .hostNqn(HOST)
        .ioQueues(2)
        .connectTimeout(Duration.ofSeconds(60))
        .commandTimeout(Duration.ofSeconds(60));
  }

  private static String uri() {
    return "nvmf+tcp://127.0.0.1:" + port + "/" + SUB;
  }

  private static void writeAndReadBack(NvmfController c) throws Exception {
    byte[] data = new byte[16 * 1024];
    RANDOM.nextBytes(data);
    for (int q = 0; q < c.ioQueueCount(); q++) {
      c.ioQueue(q).write(1, 4096L + q * 64L, ByteBuffer.wrap(data)).get(60, TimeUnit.SECONDS);
      ByteBuffer back = ByteBuffer.allocate(data.length);
      c.ioQueue(q).read(1, 4096L + q * 64L, back).get(60, TimeUnit.SECONDS);
      assertArrayEquals(data, back.array(), "queue " + q);
    }
  }

  @Test
  void ourHostAuthenticatesToLinuxsTargetForEachHashAndGroup() throws Exception {
    record Case(DhchapHash hash, DhGroup group, boolean bidirectional, DhchapHash transform) {}
    List<Case> cases =
        List.of(
            new Case(DhchapHash.SHA256, DhGroup.NULL, false, DhchapHash.SHA256),
            new Case(DhchapHash.SHA256, DhGroup.FFDHE2048, true, null),
            new Case(DhchapHash.SHA384, DhGroup.FFDHE3072, true, DhchapHash.SHA384),
            new Case(DhchapHash.SHA512, DhGroup.FFDHE2048, false, DhchapHash.SHA512),
            new Case(DhchapHash.SHA512, DhGroup.FFDHE4096, true, DhchapHash.SHA256),
            new Case(DhchapHash.SHA384, DhGroup.FFDHE6144, false, DhchapHash.SHA384),
            new Case(DhchapHash.SHA512, DhGroup.FFDHE8192, true, DhchapHash.SHA512));
    for (Case c : cases) {
      int len = c.transform() == null ? 32 : c.transform().length();
      DhchapSecret hostKey = DhchapSecret.generate(c.transform(), len, RANDOM);
      DhchapSecret ctrlKey = DhchapSecret.generate(c.transform(), len, RANDOM);
      configure(hostKey, c.bidirectional() ? ctrlKey : null, c.hash(), c.group());
      NvmfHostOptions.Builder b = host().dhchapSecret(hostKey.encoded());
      if (c.bidirectional()) {
        b.dhchapControllerSecret(ctrlKey.encoded());
      }
      try (NvmfController ctrl = NvmfHost.connect(uri(), b.build())) {
        // Linux's target challenges with the hash and group its configuration names.
        assertEquals(
            c.hash().label()
                + "/"
                + c.group().label()
                + (c.bidirectional() ? ", bidirectional" : ""),
            ctrl.authentication(),
            c.toString());
        writeAndReadBack(ctrl);
      }
    }
  }

  @Test
  void linuxsTargetRefusesAWrongOrMissingKeyAndAnImpostorIsCaught() throws Exception {
    DhchapSecret hostKey = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    DhchapSecret ctrlKey = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    configure(hostKey, ctrlKey, DhchapHash.SHA256, DhGroup.FFDHE2048);

    DhchapException none =
        assertThrows(DhchapException.class, () -> NvmfHost.connect(uri(), host().build()));
    assertTrue(none.getMessage().contains("requires in-band authentication"), none.getMessage());

    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    DhchapException refused =
        assertThrows(
            DhchapException.class,
            () -> NvmfHost.connect(uri(), host().dhchapSecret(wrong.encoded()).build()));
    assertTrue(refused.getMessage().contains("refused"), refused.getMessage());

    // The target holds a controller key other than the one the host expects: not the real one.
    DhchapSecret expected = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    DhchapException impostor =
        assertThrows(
            DhchapException.class,
            () ->
                NvmfHost.connect(
                    uri(),
                    host()
                        .dhchapSecret(hostKey.encoded())
                        .dhchapControllerSecret(expected.encoded())
                        .build()));
    assertTrue(impostor.getMessage().contains("did not prove"), impostor.getMessage());

    // And the right keys still work after all of that.
    try (NvmfController ctrl =
        NvmfHost.connect(
            uri(),
            host()
                .dhchapSecret(hostKey.encoded())
                .dhchapControllerSecret(ctrlKey.encoded())
                .build())) {
      writeAndReadBack(ctrl);
    }
  }
}
