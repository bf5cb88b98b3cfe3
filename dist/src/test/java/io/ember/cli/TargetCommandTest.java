package io.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.StorageClass;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ember target} run as a storage host runs it: its own process, serving a name node and an
 * NVMf data node in other processes, keeping a file namespace's bytes across a SIGTERM and a
 * restart, and refusing bad start-up input in one line.
 */
class TargetCommandTest {
  private static final long PATIENCE_SECONDS = 120;
  private static final Pattern FIRST_NAMESPACE =
      Pattern.compile("namespace 1 (nvmf\\+tcp://\\S+/1) ");

  private final EmberProcesses processes = new EmberProcesses(PATIENCE_SECONDS);

  @AfterEach
  void stop() {
    processes.close();
  }

  /** {@code ember target} on a free loopback port, with {@code options}. */
  private Process onLoopback(Path log, String... options) throws Exception {
    List<String> args =
        new java.util.ArrayList<>(List.of("target", "--bind", "127.0.0.1", "--port", "0"));
    args.addAll(List.of(options));
    return processes.start(log, args.toArray(new String[0]));
  }

  private Process target(Path log, Path file) throws Exception {
    return onLoopback(
        log,
        "--nqn",
        "nqn.2026-11.io.ember:target-test",
        "--namespace",
        "file:" + file + ":64m",
        "--namespace",
        "memory:16m");
  }

  @Test
  void servesAClusterOfOtherProcessesAndKeepsItsFileAcrossSigterm(@TempDir Path tmp)
      throws Exception {
    Path file = tmp.resolve("ns1.img");
    Path targetLog = tmp.resolve("target.log");
    Process target = target(targetLog, file);
    String uri = processes.awaitLine(targetLog, FIRST_NAMESPACE, target);
    assertTrue(uri.startsWith("nvmf+tcp://127.0.0.1:"), uri);
    processes.awaitLine(
        targetLog, Pattern.compile("namespace 2 (\\S+) \\(16777216 bytes\\)"), target);

    Path nnLog = tmp.resolve("namenode.log");
    Process nn =
        processes.start(
            nnLog, "namenode", "--bind", "127.0.0.1", "--port", "0", "--http-port", "off");
    String namenode =
        "127.0.0.1:"
            + processes.awaitLine(
                nnLog, Pattern.compile("name node listening on 127\\.0\\.0\\.1:(\\d+)"), nn);
    Path dnLog = tmp.resolve("datanode.log");
    Process dn =
        processes.start(
            dnLog,
            "datanode",
            "nvmf",
            "--target",
            uri,
            "--namenode",
            namenode,
            "-D",
            "ember.datanode.nvmf.http-port=off");
    processes.awaitLine(dnLog, Pattern.compile("(NVMf data node serving)"), dn);
    // The name node took the registration only after reaching the target the node advertises.
    processes.awaitLine(nnLog, Pattern.compile("(registered data node 1)"), nn);

    byte[] content = new byte[3_000_000];
    new Random(17).nextBytes(content);
    EmberConfig config = EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode);
    try (EmberClient client = EmberClient.connect(config)) {
      try (EmberOutputStream out =
          client.create(
              "/on-target.bin", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
        out.write(content);
      }
      try (EmberInputStream in = client.open("/on-target.bin")) {
        assertArrayEquals(content, in.readAllBytes());
      }
    }
    dn.destroy();
    assertTrue(dn.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS), "the data node stops at SIGTERM");

    // Bytes written straight to the target, then a SIGTERM: the restarted target has them.
    byte[] pattern = new byte[1 << 20];
    new Random(18).nextBytes(pattern);
    long lba = 1000;
    try (NvmfController c = NvmfHost.connect(uri, NvmfHostOptions.builder().build())) {
      c.ioQueue(0)
          .write(1, lba, ByteBuffer.allocateDirect(pattern.length).put(pattern).flip())
          .get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    }
    target.destroy();
    assertTrue(target.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS), "the target stops at SIGTERM");
    // The JVM's exit status after SIGTERM: 128 + 15.
    assertEquals(143, target.exitValue());

    Path againLog = tmp.resolve("target-again.log");
    Process again = target(againLog, file);
    String againUri = processes.awaitLine(againLog, FIRST_NAMESPACE, again);
    try (NvmfController c = NvmfHost.connect(againUri, NvmfHostOptions.builder().build())) {
      ByteBuffer read = ByteBuffer.allocateDirect(pattern.length);
      c.ioQueue(0).read(1, lba, read).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
      byte[] got = new byte[pattern.length];
      read.clear().get(got);
      assertArrayEquals(pattern, got);
    }
  }

  /**
   * {@code ember target} on loopback with a 16 MiB namespace, admitting the hosts of {@code hosts}.
   */
  private Process startWithHostsFile(Path log, Path hosts) throws Exception {
    return onLoopback(log, "--namespace", "memory:16m", "--hosts-file", hosts.toString());
  }

  @Test
  void aHostsFileAdmitsOnlyHostsThatAuthenticate(@TempDir Path tmp) throws Exception {
    EmberCliTest.Result key = EmberCliTest.run("security", "dhchap-key", "--hmac", "sha384");
    assertEquals(0, key.code(), key.err());
    String secret = key.out().strip();
    assertTrue(secret.matches("DHHC-1:02:[A-Za-z0-9+/=]{72}:"), secret);
    String host = "nqn.2026-11.io.ember:authenticated-host";
    Path hosts = tmp.resolve("hosts");
    java.nio.file.Files.writeString(hosts, host + " " + secret + " hash=sha384 group=ffdhe3072\n");
    Path log = tmp.resolve("target.log");
    Process target = startWithHostsFile(log, hosts);
    String uri = processes.awaitLine(log, FIRST_NAMESPACE, target);
    assertTrue(java.nio.file.Files.readString(log).contains(host + " (DH-HMAC-CHAP)"));
    try (NvmfController c =
        NvmfHost.connect(
            uri, NvmfHostOptions.builder().hostNqn(host).dhchapSecret(secret).build())) {
      assertEquals("sha384/ffdhe3072", c.authentication());
    }
    io.ember.nvmf.auth.DhchapException refused =
        org.junit.jupiter.api.Assertions.assertThrows(
            io.ember.nvmf.auth.DhchapException.class,
            () -> NvmfHost.connect(uri, NvmfHostOptions.builder().hostNqn(host).build()));
    assertTrue(
        refused.getMessage().contains("requires in-band authentication"), refused.getMessage());

    // A malformed file is refused before anything starts, naming the line and not the secret.
    java.nio.file.Files.writeString(hosts, "# hosts\n" + host + " DHHC-1:01:bm90IGEga2V5:\n");
    EmberCliTest.Result bad =
        EmberCliTest.run("target", "--namespace", "memory:16m", "--hosts-file", hosts.toString());
    assertEquals(EmberCli.USAGE_ERROR, bad.code(), bad.err());
    assertTrue(
        bad.err()
            .startsWith(
                "ember: --hosts-file: "
                    + hosts
                    + " line 2: the DH-HMAC-CHAP secret holds 5 key bytes; it must hold 32, 48 or"
                    + " 64"),
        bad.err());
    assertTrue(!bad.err().contains("bm90IGEga2V5"), bad.err());
  }

  private static String dhchapKey() throws Exception {
    EmberCliTest.Result key = EmberCliTest.run("security", "dhchap-key");
    assertEquals(0, key.code(), key.err());
    return key.out().strip();
  }

  private static String authenticatedAs(String uri, String host, String secret) throws Exception {
    try (NvmfController c =
        NvmfHost.connect(
            uri, NvmfHostOptions.builder().hostNqn(host).dhchapSecret(secret).build())) {
      return c.authentication();
    }
  }

  /** Puts {@code text} in place of {@code file} in one step, as the README asks operators to. */
  private static void replace(Path file, String text) throws Exception {
    Path next = file.resolveSibling(file.getFileName() + ".next");
    java.nio.file.Files.writeString(next, text);
    java.nio.file.Files.move(
        next,
        file,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  void aChangedHostsFileTakesEffectWithoutARestart(@TempDir Path tmp) throws Exception {
    String alice = "nqn.2026-11.io.ember:alice";
    String bob = "nqn.2026-11.io.ember:bob";
    String aliceOld = dhchapKey();
    String aliceNew = dhchapKey();
    String bobs = dhchapKey();
    Path hosts = tmp.resolve("hosts");
    java.nio.file.Files.writeString(hosts, alice + " " + aliceOld + "\n");
    Path log = tmp.resolve("target.log");
    Process target = startWithHostsFile(log, hosts);
    String uri = processes.awaitLine(log, FIRST_NAMESPACE, target);
    assertTrue(authenticatedAs(uri, alice, aliceOld).startsWith("sha"));

    // A key changed and a host added: the next connects prove the new keys.
    replace(hosts, alice + " " + aliceNew + "\n" + bob + " " + bobs + "\n");
    processes.awaitLine(log, Pattern.compile("read again: (2) hosts authenticate"), target);
    Exception old =
        org.junit.jupiter.api.Assertions.assertThrows(
            Exception.class, () -> authenticatedAs(uri, alice, aliceOld));
    assertTrue(old instanceof io.ember.nvmf.auth.DhchapException, String.valueOf(old));
    assertTrue(authenticatedAs(uri, alice, aliceNew).startsWith("sha"));
    assertTrue(authenticatedAs(uri, bob, bobs).startsWith("sha"));

    // A file that no longer parses changes nothing, and says so on one line naming the line.
    replace(hosts, alice + " DHHC-1:01:bm90IGEga2V5:\n");
    String why =
        processes.awaitLine(
            log, Pattern.compile("^(ember target: --hosts-file: .*still hold)$"), target);
    assertTrue(why.contains("line 1"), why);
    assertTrue(!why.contains("bm90IGEga2V5"), why);
    assertTrue(authenticatedAs(uri, alice, aliceNew).startsWith("sha"));

    // A host left out is no longer admitted, with or without its key; the target does not open
    // to every host because fewer are listed.
    replace(hosts, bob + " " + bobs + "\n");
    processes.awaitLine(log, Pattern.compile("no longer admitted: \\[(" + alice + ")\\]"), target);
    Exception gone =
        org.junit.jupiter.api.Assertions.assertThrows(
            Exception.class, () -> authenticatedAs(uri, alice, aliceNew));
    assertTrue(
        String.valueOf(gone.getMessage()).contains("Connect Invalid Host"), String.valueOf(gone));
    Exception anonymous =
        org.junit.jupiter.api.Assertions.assertThrows(
            Exception.class,
            () -> NvmfHost.connect(uri, NvmfHostOptions.builder().hostNqn(alice).build()).close());
    assertTrue(
        String.valueOf(anonymous.getMessage()).contains("Connect Invalid Host"),
        String.valueOf(anonymous));
    assertTrue(authenticatedAs(uri, bob, bobs).startsWith("sha"));

    // The last host withdrawn: nobody is admitted, rather than everybody.
    replace(hosts, "# every key withdrawn\n");
    processes.awaitLine(log, Pattern.compile("read again: (0) hosts authenticate"), target);
    Exception none =
        org.junit.jupiter.api.Assertions.assertThrows(
            Exception.class, () -> authenticatedAs(uri, bob, bobs));
    assertTrue(
        String.valueOf(none.getMessage()).contains("Connect Invalid Host"), String.valueOf(none));
  }

  @Test
  void aPollingTargetServesWritesAndReads(@TempDir Path tmp) throws Exception {
    Path log = tmp.resolve("target.log");
    Process target = onLoopback(log, "--busy-poll", "10ms", "--namespace", "memory:16m");
    String uri = processes.awaitLine(log, FIRST_NAMESPACE, target);
    assertTrue(java.nio.file.Files.readString(log).contains("polling 10ms after each event"));
    byte[] data = new byte[3 * 4096];
    new Random(11).nextBytes(data);
    try (NvmfController c = NvmfHost.connect(uri, NvmfHostOptions.defaults())) {
      c.ioQueue(0).write(1, 2, ByteBuffer.wrap(data)).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
      ByteBuffer back = ByteBuffer.allocate(data.length);
      c.ioQueue(0).read(1, 2, back).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
      assertArrayEquals(data, back.array());
    }
  }

  @Test
  void badStartUpInputIsOneLineEach(@TempDir Path tmp) throws Exception {
    EmberCliTest.Result noDirectory =
        EmberCliTest.run(
            "target",
            "--port",
            "0",
            "--namespace",
            "file:" + tmp.resolve("no/such/ns.img") + ":8m");
    assertEquals(1, noDirectory.code());
    assertEquals(
        "ember target: cannot open or create the namespace file "
            + tmp.resolve("no/such/ns.img")
            + ": its directory does not exist",
        noDirectory.err().strip());

    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      EmberCliTest.Result inUse =
          EmberCliTest.run(
              "target",
              "--bind",
              "127.0.0.1",
              "--port",
              Integer.toString(taken.getLocalPort()),
              "--namespace",
              "file:" + tmp.resolve("kept.img") + ":8m");
      assertEquals(1, inUse.code());
      assertEquals(
          "ember target: cannot listen on 127.0.0.1:" + taken.getLocalPort() + ": address in use",
          inUse.err().strip());
    }

    for (String[] wrong :
        new String[][] {
          {"--namespace", "disk:8m", "write it file:PATH:SIZE or memory:SIZE"},
          {"--namespace", "memory:lots", "'lots' is not a size such as 8g or 512m"},
          {"--namespace", "file:8m", "write it file:PATH:SIZE"},
          {"--namespace", "memory:1000", "size 1000 is not a positive multiple of 4096"},
        }) {
      EmberCliTest.Result r = EmberCliTest.run("target", wrong[0], wrong[1]);
      assertEquals(EmberCli.USAGE_ERROR, r.code(), r.err());
      assertTrue(r.err().startsWith("ember: --namespace " + wrong[1] + ": " + wrong[2]), r.err());
    }
    // A file larger than the size asked for keeps its bytes: the target refuses to start.
    java.nio.file.Files.write(tmp.resolve("big.img"), new byte[3 << 20]);
    EmberCliTest.Result shrink =
        EmberCliTest.run("target", "--namespace", "file:" + tmp.resolve("big.img") + ":1m");
    assertEquals(EmberCli.USAGE_ERROR, shrink.code(), shrink.err());
    assertTrue(shrink.err().contains("holds 3145728 bytes, more than 1048576"), shrink.err());
    assertEquals(3 << 20, java.nio.file.Files.size(tmp.resolve("big.img")));

    for (String[] wrong :
        new String[][] {
          {"lots", "'lots' is not a duration such as 10ms or 200us"},
          {"2s", "2s is not between 0 and 1s"},
          {"-5ms", "-5ms is not between 0 and 1s"},
        }) {
      EmberCliTest.Result r =
          EmberCliTest.run("target", "--busy-poll", wrong[0], "--namespace", "memory:16m");
      assertEquals(EmberCli.USAGE_ERROR, r.code(), r.err());
      assertTrue(r.err().startsWith("ember: --busy-poll: " + wrong[1]), r.err());
    }

    EmberCliTest.Result none = EmberCliTest.run("target");
    assertEquals(EmberCli.USAGE_ERROR, none.code());
    assertTrue(none.err().contains("--namespace"), none.err());
  }
}
