package io.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientKeys;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real multi-process cluster started the way a user does: {@code ember namenode} and {@code ember
 * datanode dram} as separate JVMs on loopback ports, then {@code ember fs} against them, and a data
 * node killed with SIGKILL.
 */
class MultiProcessClusterTest {
  /**
   * How long a test waits for the processes to do something (start a JVM, notice a death): far
   * longer than it takes on a starved machine. Tests wait for the event, never for a fixed time.
   */
  private static final long PATIENCE_SECONDS = 120;

  private final EmberProcesses processes = new EmberProcesses(PATIENCE_SECONDS);

  @AfterEach
  void stop() {
    processes.close();
  }

  private Process ember(Path log, String... args) throws Exception {
    return processes.start(log, args);
  }

  private String awaitLine(Path log, Pattern pattern) throws Exception {
    return processes.awaitLine(log, pattern, null);
  }

  /** Waits until the name node counts no live DRAM data node and {@code lost} lost ones. */
  private static void awaitLost(String namenode, int lost) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    try (EmberClient c =
        EmberClient.connect(EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode))) {
      while (true) {
        List<ClassUsage> usage = c.df();
        if (usage.stream()
            .anyMatch(
                u ->
                    u.storageClass().equals(StorageClass.DRAM)
                        && u.liveNodes() == 0
                        && u.lostNodes() == lost)) {
          return;
        }
        assertTrue(
            System.nanoTime() - deadline < 0,
            "no DRAM data node lost after " + PATIENCE_SECONDS + " s: " + usage);
        Thread.sleep(50);
      }
    }
  }

  private static int fs(
      String namenode, ByteArrayOutputStream stdout, StringWriter err, String... args) {
    List<String> all = new ArrayList<>(List.of("fs", "--namenode", namenode));
    all.addAll(List.of(args));
    PrintStream saved = System.out;
    System.setOut(new PrintStream(stdout, true));
    try {
      return EmberCli.run(
          all.toArray(new String[0]),
          new PrintWriter(new StringWriter(), true),
          new PrintWriter(err, true));
    } finally {
      System.setOut(saved);
    }
  }

  @Test
  void namenodeAndDatanodeProcessesServeTheShell(@TempDir Path tmp) throws Exception {
    Path nnLog = tmp.resolve("namenode.log");
    // Long enough that a data node starved of CPU is not taken for dead before the kill.
    ember(
        nnLog,
        "namenode",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "-D",
        "ember.namenode.datanode-timeout=5s");
    String port =
        awaitLine(nnLog, Pattern.compile("name node listening on 127\\.0\\.0\\.1:(\\d+)"));
    String namenode = "127.0.0.1:" + port;
    Path dnLog = tmp.resolve("datanode.log");
    Process dn =
        ember(
            dnLog,
            "datanode",
            "dram",
            "--capacity",
            "64m",
            "--namenode",
            namenode,
            "--host",
            "127.0.0.1",
            "-D",
            "ember.datanode.heartbeat-interval=100ms");
    String statusPage =
        awaitLine(
            dnLog,
            Pattern.compile(
                "DRAM data node serving .*status page and metrics at (http://[^;\\s]+)"));
    awaitLine(nnLog, Pattern.compile("(registered data node 1)"));
    HttpResponse<String> page =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(statusPage))
                    .timeout(Duration.ofSeconds(PATIENCE_SECONDS))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(200, page.statusCode(), statusPage);
    assertTrue(page.body().contains("<h1>Ember DRAM data node "), page.body());

    byte[] content = new byte[3_000_000];
    new Random(5).nextBytes(content);
    Path local = tmp.resolve("in.bin");
    Files.write(local, content);
    StringWriter err = new StringWriter();
    assertEquals(
        0,
        fs(namenode, new ByteArrayOutputStream(), err, "put", "-p", local.toString(), "/mp/in.bin"),
        err.toString());
    ByteArrayOutputStream cat = new ByteArrayOutputStream();
    assertEquals(0, fs(namenode, cat, err, "cat", "/mp/in.bin"), err.toString());
    assertArrayEquals(content, cat.toByteArray());

    dn.destroyForcibly().waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS);
    awaitLost(namenode, 1);
    awaitLine(nnLog, Pattern.compile("(data node 1 \\(127\\.0\\.0\\.1:\\d+\\) lost)"));
    StringWriter lostErr = new StringWriter();
    assertEquals(1, fs(namenode, new ByteArrayOutputStream(), lostErr, "cat", "/mp/in.bin"));
    assertTrue(
        lostErr
            .toString()
            .matches(
                "(?s)ember fs cat: data node 1 \\(127\\.0\\.0\\.1:\\d+\\) lost: block 0 of /mp/in\\.bin "
                    + "unavailable\\s*"),
        lostErr.toString());
  }

  /** A properties file of TLS settings presenting {@code name}'s certificate from {@code dir}. */
  private static Path tlsConfig(Path dir, String name) throws Exception {
    Path file = dir.resolve(name + ".properties");
    Files.writeString(
        file,
        String.join(
            "\n",
            "ember.security.tls=true",
            "ember.security.tls.certificate=" + dir.resolve(name + ".pem"),
            "ember.security.tls.key=" + dir.resolve(name + ".key"),
            "ember.security.tls.ca=" + dir.resolve("ca.pem"),
            ""));
    return file;
  }

  @Test
  void aSecuredClusterOfProcessesServesOnlyClientsWithItsCertificates(@TempDir Path tmp)
      throws Exception {
    Path tls = tmp.resolve("tls");
    StringWriter caOut = new StringWriter();
    StringWriter caErr = new StringWriter();
    assertEquals(
        0,
        EmberCli.run(
            new String[] {
              "security",
              "dev-ca",
              "--dir",
              tls.toString(),
              "--server",
              "node=local",
              "--user",
              "alice"
            },
            new PrintWriter(caOut, true),
            new PrintWriter(caErr, true)),
        caErr.toString());
    assertTrue(caOut.toString().contains("node " + tls.resolve("node.pem")), caOut.toString());
    assertTrue(caOut.toString().contains("for localhost,127.0.0.1"), caOut.toString());
    Path node = tlsConfig(tls, "node");
    Path alice = tlsConfig(tls, "alice");

    Path nnLog = tmp.resolve("namenode.log");
    ember(nnLog, "namenode", "--bind", "127.0.0.1", "--port", "0", "--config", node.toString());
    String namenode =
        "127.0.0.1:"
            + awaitLine(nnLog, Pattern.compile("name node listening on 127\\.0\\.0\\.1:(\\d+)"));
    ember(
        tmp.resolve("datanode.log"),
        "datanode",
        "dram",
        "--capacity",
        "64m",
        "--namenode",
        namenode,
        "--bind",
        "127.0.0.1",
        "--config",
        node.toString());
    awaitLine(nnLog, Pattern.compile("(registered data node 1)"));

    byte[] content = new byte[2_500_000];
    new Random(11).nextBytes(content);
    Path local = tmp.resolve("in.bin");
    Files.write(local, content);
    StringWriter err = new StringWriter();
    assertEquals(
        0,
        fs(
            namenode,
            new ByteArrayOutputStream(),
            err,
            "--config",
            alice.toString(),
            "put",
            local.toString(),
            "/secured.bin"),
        err.toString());
    ByteArrayOutputStream cat = new ByteArrayOutputStream();
    assertEquals(
        0,
        fs(namenode, cat, err, "--config", alice.toString(), "cat", "/secured.bin"),
        err.toString());
    assertArrayEquals(content, cat.toByteArray());

    // A client without TLS is told, in one line, what the server needs.
    StringWriter plainErr = new StringWriter();
    assertEquals(1, fs(namenode, new ByteArrayOutputStream(), plainErr, "ls", "/"));
    assertTrue(
        plainErr
            .toString()
            .matches(
                "(?s)ember fs ls: .*this server requires TLS: set ember\\.security\\.tls=true.*"),
        plainErr.toString());
    assertEquals(1, plainErr.toString().strip().lines().count(), plainErr.toString());
  }

  private static void signal(Process p, String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start();
    assertEquals(0, kill.waitFor(), "kill -" + signal + " " + p.pid());
  }

  @Test
  void stalledDataNodeTimesReadsOutAndTheStreamReadsOnOnceItAnswers(@TempDir Path tmp)
      throws Exception {
    Path nnLog = tmp.resolve("namenode.log");
    // The name node must not declare the node lost while it is stopped: this is a slow peer.
    ember(
        nnLog,
        "namenode",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "-D",
        "ember.namenode.datanode-timeout=60s");
    String namenode =
        "127.0.0.1:"
            + awaitLine(nnLog, Pattern.compile("name node listening on 127\\.0\\.0\\.1:(\\d+)"));
    Path dnLog = tmp.resolve("datanode.log");
    Process dn =
        ember(
            dnLog,
            "datanode",
            "dram",
            "--capacity",
            "64m",
            "--namenode",
            namenode,
            "--host",
            "127.0.0.1");
    awaitLine(dnLog, Pattern.compile("(DRAM data node serving)"));
    awaitLine(nnLog, Pattern.compile("(registered data node 1)"));

    int block = 1 << 20;
    byte[] content = new byte[4 * block];
    new Random(8).nextBytes(content);
    EmberConfig config = EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode);
    try (EmberClient writer = EmberClient.connect(config)) {
      try (EmberOutputStream out = writer.create("/slow.bin", CreateOptions.DEFAULT)) {
        out.write(content);
      }
    }
    // Short enough for a quick test, long enough that no call before the stop runs out of it.
    EmberConfig readerConfig =
        config
            .with(EmberKeys.RPC_TIMEOUT, "5s")
            .with(ClientKeys.READ_AHEAD, "0"); // each block fetched when read, not before the stop
    try (EmberClient client = EmberClient.connect(readerConfig)) {
      try (EmberInputStream in = client.open("/slow.bin")) {
        byte[] buf = new byte[block];
        assertEquals(block, in.read(buf, 0, block));
        assertArrayEquals(Arrays.copyOfRange(content, 0, block), buf);
        Arrays.fill(buf, (byte) 0);
        signal(dn, "STOP");
        try {
          EmberException e = assertThrows(EmberException.class, () -> in.read(buf, 0, block));
          assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
          assertTrue(e.getMessage().contains("block 1 of /slow.bin"), e.getMessage());
          // The read's own timeout ended it.
          assertTrue(e.getMessage().contains("no answer within 5000 ms"), e.getMessage());
          // A reader interrupted while it waits gives up the same way, and claims the copy too.
          AtomicReference<Throwable> failure = new AtomicReference<>();
          Thread reader =
              new Thread(
                  () -> {
                    try {
                      in.read(buf, 0, block);
                    } catch (Throwable t) {
                      failure.set(t);
                    }
                  });
          reader.start();
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
          while (reader.getState() != Thread.State.WAITING
              && reader.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(
                reader.isAlive() && System.nanoTime() - deadline < 0,
                "the reader never waited: " + failure.get());
            Thread.sleep(10);
          }
          reader.interrupt();
          reader.join(TimeUnit.SECONDS.toMillis(PATIENCE_SECONDS));
          assertFalse(reader.isAlive(), "an interrupted read kept waiting");
          // CLOSED, not TIMEOUT: the interrupt ended the wait, not the read's timeout.
          EmberException interrupted = assertInstanceOf(EmberException.class, failure.get());
          assertEquals(ErrorCode.CLOSED, interrupted.code(), interrupted.getMessage());
        } finally {
          signal(dn, "CONT");
        }
        // The stream reads on from where it was once the node answers again.
        assertArrayEquals(Arrays.copyOfRange(content, block, content.length), in.readAllBytes());
        // The node answered the stalled reads before these, on the same connection, so their
        // late answers have been handled by now: none may have landed in the array.
        assertArrayEquals(new byte[block], buf, "a failed read wrote the caller's array");
      }
    }
  }
}
