package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.nvmf.auth.DhchapVm;
import io.ember.nvmf.rdma.RdmaVm;
import java.io.File;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Linux's own NVMe/TCP host (nvme-tcp with CONFIG_NVME_HOST_AUTH) authenticates to Ember's embedded
 * target with DH-HMAC-CHAP, one way and both ways, and is refused with a wrong or missing secret;
 * the kernel host itself refuses an Ember target holding the wrong controller secret. The VM cannot
 * reach this machine, so the target runs inside it (this build's class path, through the VM's view
 * of the host's files) and the kernel connects over the VM's loopback, as {@code nvme connect
 * --dhchap-secret} does. Needs a kernel-nvmet VM started with {@code --host-root} and {@code
 * KNVMET_KPKG=linux-image-6.12.100+deb12-amd64}: {@code EMBER_TEST_DHCHAP_VM} is its port, {@code
 * EMBER_TEST_KNVMET} the tool; {@code .ci/run} sets both.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_DHCHAP_VM",
    matches = "[0-9]+",
    disabledReason =
        "EMBER_TEST_DHCHAP_VM is not set (the port of a kernel-nvmet VM started with --host-root and"
            + " KNVMET_KPKG=linux-image-6.12.100+deb12-amd64, whose kernel has DH-HMAC-CHAP)")
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class KernelHostDhchapTest {
  static final String NQN = "nqn.2024-01.io.ember:dhchap-kernel-host";
  static final String PORT_IN_VM = "4431";
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final DhchapSecret KEY_A = DhchapSecret.generate(null, 32, RANDOM);
  private static final DhchapSecret KEY_B = DhchapSecret.generate(DhchapHash.SHA384, 48, RANDOM);
  private static final DhchapSecret CTRL_B = DhchapSecret.generate(DhchapHash.SHA384, 48, RANDOM);
  private static final DhchapSecret KEY_C = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
  private static final DhchapSecret CTRL_C = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
  private static final DhchapSecret KEY_D = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
  private static final DhchapSecret CTRL_D = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
  private static String port;

  /** One host NQN per case: the target keeps each host's key, hash and group. */
  private static String host(String name) {
    return "nqn.2024-01.io.ember:kernel-host-" + name;
  }

  @BeforeAll
  static void startOurTargetInTheVm() throws Exception {
    DhchapVm.assumeTool();
    port = DhchapVm.port();
    assumeTrue(
        DhchapVm.exec("[ -d /host/usr ] && echo yes || echo no").contains("yes"),
        "the kernel-nvmet VM was started without --host-root");
    String kver = DhchapVm.exec("uname -r").trim();
    String cache = System.getenv("KNVMET_CACHE");
    if (cache == null) {
      String xdg = System.getenv("XDG_CACHE_HOME");
      cache = (xdg != null ? xdg : System.getProperty("user.home") + "/.cache") + "/kernel-nvmet";
    }
    String mods = cache + "/kernel/" + kver + "/lib/modules/" + kver + "/kernel/drivers/nvme/host";
    String cp =
        RdmaVm.freshCopies(
            System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    List<String> paths = new ArrayList<>(List.of(cp.split(File.pathSeparator, -1)));
    String args =
        " --listen 127.0.0.1:"
            + PORT_IN_VM
            + " --nqn "
            + NQN
            + " --memory 67108864 --block-size 512"
            + " --allow-host "
            + host("a")
            + " --dhchap-secret "
            + KEY_A.encoded()
            + " --dhchap-hash sha256 --dhchap-group null"
            + " --allow-host "
            + host("b")
            + " --dhchap-secret "
            + KEY_B.encoded()
            + " --dhchap-ctrl-secret "
            + CTRL_B.encoded()
            + " --dhchap-hash sha384 --dhchap-group ffdhe3072"
            + " --allow-host "
            + host("c")
            + " --dhchap-secret "
            + KEY_C.encoded()
            + " --dhchap-ctrl-secret "
            + CTRL_C.encoded()
            + " --dhchap-hash sha512 --dhchap-group ffdhe2048"
            + " --allow-host "
            + host("d")
            + " --dhchap-secret "
            + KEY_D.encoded()
            + " --dhchap-ctrl-secret "
            + CTRL_D.encoded()
            + " --dhchap-hash sha256 --dhchap-group ffdhe8192,ffdhe4096";
    // A target left by an earlier run would hold the port with other keys: stop it first. The wait
    // ends early when the new one dies, and then shows its log.
    DhchapVm.exec(
        RdmaVm.hostMounts(paths)
            + "[ -f /host/tmp/dhchap-target.pid ] && kill $(cat /host/tmp/dhchap-target.pid)"
            + " 2>/dev/null; rm -f /host/tmp/dhchap-target.log; for m in nvme-fabrics nvme-tcp; do"
            + " grep -q \"^$(echo $m | tr - _) \" /proc/modules || insmod /host"
            + mods
            + "/$m.ko.xz || exit 1; done; chroot /host sh -c 'nohup java -Xmx200m"
            + " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
            + " -Dorg.slf4j.simpleLogger.log.io.ember.nvmf.target.TargetConnection=debug -cp "
            + cp
            + " io.ember.nvmf.target.NvmfTargetMain"
            + args
            + " > /tmp/dhchap-target.log 2>&1 & echo $! > /tmp/dhchap-target.pid'; i=0; until grep -q"
            + " READY /host/tmp/dhchap-target.log 2>/dev/null; do i=$((i+1)); if [ $i -gt 300 ] || !"
            + " kill -0 $(cat /host/tmp/dhchap-target.pid) 2>/dev/null; then cat"
            + " /host/tmp/dhchap-target.log; exit 1; fi; sleep 1; done");
  }

  @AfterAll
  static void stopOurTarget() throws Exception {
    if (port != null && System.getenv("EMBER_TEST_KNVMET") != null) {
      DhchapVm.exec(
          "pkill -f NvmfTargetMain || true; for c in /sys/class/nvme/nvme*; do [ -e $c/delete_controller ] && echo 1 > $c/delete_controller; done; true");
    }
  }

  /**
   * Connects Linux's host as {@code host} with the given secrets (null: none), as {@code nvme
   * connect} does through /dev/nvme-fabrics, and returns whether the kernel created the controller.
   * On success, writes and reads back 1 MiB through the block device, checks it, and disconnects.
   */
  private static boolean kernelConnects(
      String host, int hostIdTail, DhchapSecret secret, DhchapSecret ctrlSecret, String expectLog)
      throws Exception {
    String opts =
        "transport=tcp,traddr=127.0.0.1,trsvcid="
            + PORT_IN_VM
            + ",nqn="
            + NQN
            + ",hostnqn="
            + host
            + String.format(",hostid=5f0b6f3c-5d8e-4c39-9a0d-%012x", hostIdTail)
            + (secret == null ? "" : ",dhchap_secret=" + secret.encoded())
            + (ctrlSecret == null ? "" : ",dhchap_ctrl_secret=" + ctrlSecret.encoded());
    String out =
        DhchapVm.exec(
            "dmesg -c > /dev/null; if echo '"
                + opts
                + "' > /dev/nvme-fabrics; then echo CONNECTED; else echo REFUSED; dmesg | tail -n 5;"
                + " exit 0; fi; dmesg | grep -i 'authenticated' ; d=$(ls -d /sys/class/nvme/nvme* |"
                + " tail -n 1); n=$(basename $d); i=0; until [ -b /dev/${n}n1 ]; do i=$((i+1)); [ $i"
                + " -gt 60 ] && exit 1; sleep 1; done; chroot /host sh -c \"head -c 1048576"
                + " /dev/urandom > /tmp/dhchap-pat && dd if=/tmp/dhchap-pat of=/dev/${n}n1 bs=64k"
                + " oflag=direct 2>/dev/null && dd if=/dev/${n}n1 of=/tmp/dhchap-back bs=64k count=16"
                + " iflag=direct 2>/dev/null && cmp /tmp/dhchap-pat /tmp/dhchap-back && echo"
                + " DATA-OK\"; echo 1 > $d/delete_controller");
    System.out.println(host + ":\n" + out);
    if (!out.contains("CONNECTED")) {
      return false;
    }
    assertTrue(out.contains("DATA-OK"), out);
    assertTrue(out.contains(expectLog), "the kernel says how it authenticated:\n" + out);
    return true;
  }

  @Test
  void linuxsHostAuthenticatesToOurTargetOneWayAndBothWays() throws Exception {
    assertTrue(
        kernelConnects(
            host("a"), 0xa, KEY_A, null, "authenticated with hash hmac(sha256) dhgroup null"));
    assertTrue(
        kernelConnects(
            host("b"),
            0xb,
            KEY_B,
            CTRL_B,
            "authenticated with hash hmac(sha384) dhgroup ffdhe3072"));
    assertTrue(
        kernelConnects(
            host("c"),
            0xc,
            KEY_C,
            CTRL_C,
            "authenticated with hash hmac(sha512) dhgroup ffdhe2048"));
    // The largest group, which the target prefers here and Linux's host offers.
    assertTrue(
        kernelConnects(
            host("d"),
            0xd,
            KEY_D,
            CTRL_D,
            "authenticated with hash hmac(sha256) dhgroup ffdhe8192"));
    String log = DhchapVm.exec("cat /host/tmp/dhchap-target.log");
    assertTrue(log.contains("host " + host("b") + " authenticated on qid 1"), log);
  }

  @Test
  void ourTargetRefusesLinuxsHostWithAWrongOrMissingSecret() throws Exception {
    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA384, 48, RANDOM);
    assertTrue(!kernelConnects(host("b"), 0x1b, wrong, null, ""), "a wrong secret got in");
    assertTrue(!kernelConnects(host("b"), 0x2b, null, null, ""), "no secret got in");
    // Linux's host refuses our target when it proves a controller secret other than the expected.
    DhchapSecret otherCtrl = DhchapSecret.generate(DhchapHash.SHA384, 48, RANDOM);
    assertTrue(
        !kernelConnects(host("b"), 0x3b, KEY_B, otherCtrl, ""),
        "the kernel host accepted a controller that proved the wrong secret");
    String log = DhchapVm.exec("cat /host/tmp/dhchap-target.log");
    assertTrue(log.contains("failed DH-HMAC-CHAP"), log);
  }
}
