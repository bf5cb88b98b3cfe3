package io.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ember across hosts: the name node, two DRAM data nodes, an {@code ember target}, the NVMf data
 * node using it and the client each run as a separate process in a network namespace of its own,
 * with its own address on a private bridge, so that no process can reach another over loopback.
 * Needs root (CI runs as root); without it the test says why it skipped.
 */
class NetworkNamespaceClusterTest {
  private static final long PATIENCE_SECONDS = 180;
  private static final int NAMENODE_PORT = 9060;

  private final EmberProcesses processes = new EmberProcesses(PATIENCE_SECONDS);

  @AfterEach
  void stop() {
    processes.close();
  }

  /** Exit code and output of one {@code ember} command run to its end. */
  private record Ran(int code, String output) {}

  private Ran run(NetworkNamespaces net, String host, Path log, String... args) throws Exception {
    Process p = processes.start(net.on(host), log, args);
    assertTrue(p.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS), "ember " + String.join(" ", args));
    return new Ran(p.exitValue(), Files.readString(log));
  }

  @Test
  @Timeout(value = 15, unit = TimeUnit.MINUTES)
  void processesOnSeparateHostsServeEachOtherAndACutLinkFailsOnlyItsReads(@TempDir Path tmp)
      throws Exception {
    String unavailable = NetworkNamespaces.unavailable();
    assumeTrue(unavailable == null, unavailable);
    try (NetworkNamespaces net = NetworkNamespaces.create()) {
      try {
        runCluster(net, tmp);
      } finally {
        // The processes end before their namespaces go.
        processes.close();
      }
    }
  }

  private void runCluster(NetworkNamespaces net, Path tmp) throws Exception {
    String nnAddress = net.add("namenode");
    List<String> dramAddresses = List.of(net.add("dram1"), net.add("dram2"));
    String targetAddress = net.add("target");
    net.add("nvmf");
    net.add("client");
    net.add("misconfigured");
    String namenode = nnAddress + ":" + NAMENODE_PORT;

    Path nnLog = tmp.resolve("namenode.log");
    Process nn =
        processes.start(
            net.on("namenode"),
            nnLog,
            "namenode",
            "--bind",
            nnAddress,
            "--port",
            Integer.toString(NAMENODE_PORT),
            "--http-port",
            "off",
            // A node cut off for the test's read stays live: its reads fail by timeout.
            "-D",
            "ember.namenode.datanode-timeout=600s");
    processes.awaitLine(nnLog, Pattern.compile("(name node listening on \\S+)"), nn);

    // A data node advertising loopback, which is not where anyone reaches it, is refused.
    Path lonerLog = tmp.resolve("misconfigured.log");
    Process loner =
        processes.start(
            net.on("misconfigured"),
            lonerLog,
            dramNode(namenode, "0.0.0.0", "--advertise", "127.0.0.1"));
    String refusal =
        processes.awaitLine(lonerLog, Pattern.compile("(registration refused: .*)"), loner);
    assertTrue(refusal.contains("advertises, 127.0.0.1:"), refusal);
    assertTrue(refusal.contains("a loopback address, and the node is on another host"), refusal);
    assertTrue(refusal.contains("--advertise"), refusal);
    loner.destroyForcibly().waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS);

    for (int i = 0; i < dramAddresses.size(); i++) {
      Path log = tmp.resolve("dram" + (i + 1) + ".log");
      processes.awaitLine(
          log,
          Pattern.compile("(DRAM data node serving)"),
          processes.start(net.on("dram" + (i + 1)), log, dramNode(namenode, dramAddresses.get(i))));
    }
    Path targetLog = tmp.resolve("target.log");
    Process target =
        processes.start(
            net.on("target"),
            targetLog,
            "target",
            "--bind",
            targetAddress,
            "--namespace",
            "memory:256m");
    String uri =
        processes.awaitLine(targetLog, Pattern.compile("namespace 1 (nvmf\\+tcp://\\S+) "), target);
    assertTrue(uri.startsWith("nvmf+tcp://" + targetAddress + ":4420/"), uri);
    Path nvmfLog = tmp.resolve("nvmf.log");
    processes.awaitLine(
        nvmfLog,
        Pattern.compile("(NVMf data node serving)"),
        processes.start(
            net.on("nvmf"),
            nvmfLog,
            "datanode",
            "nvmf",
            "--target",
            uri,
            "--namenode",
            namenode,
            "-D",
            "ember.datanode.nvmf.http-port=off"));
    processes.awaitLine(nnLog, Pattern.compile("registered data node \\d+ \\((nvmf\\+tcp)"), nn);

    byte[] content = new byte[8 << 20];
    new Random(23).nextBytes(content);
    Path local = tmp.resolve("local.bin");
    Files.write(local, content);
    for (String storageClass : List.of("dram", "nvmf")) {
      Ran put =
          run(
              net,
              "client",
              tmp.resolve("put-" + storageClass + ".log"),
              fs(
                  namenode,
                  "put",
                  "--storage-class",
                  storageClass,
                  local.toString(),
                  "/" + storageClass + ".bin"));
      assertEquals(0, put.code(), put.output());
      Path back = tmp.resolve("back-" + storageClass + ".bin");
      Ran get =
          run(
              net,
              "client",
              tmp.resolve("get-" + storageClass + ".log"),
              fs(namenode, "get", "/" + storageClass + ".bin", back.toString()));
      assertEquals(0, get.code(), get.output());
      assertArrayEquals(content, Files.readAllBytes(back), storageClass);
    }

    // The DRAM file's first block names the host that holds it: cut that host's link.
    Ran stat = run(net, "client", tmp.resolve("stat.log"), fs(namenode, "stat", "/dram.bin"));
    assertEquals(0, stat.code(), stat.output());
    Matcher first =
        Pattern.compile("block 0: id \\d+, DRAM on data node (\\d+) \\((\\S+):(\\d+)\\)")
            .matcher(stat.output());
    assertTrue(first.find(), stat.output());
    String holder = first.group(2);
    String holderHost = "dram" + (dramAddresses.indexOf(holder) + 1);
    assertTrue(dramAddresses.contains(holder), holder + " in " + stat.output());
    String endpoint = holder + ":" + first.group(3);

    net.cut(holderHost);
    Path cutBack = tmp.resolve("cut-back.bin");
    Ran cut =
        run(
            net,
            "client",
            tmp.resolve("get-cut.log"),
            fs(
                namenode,
                "-D",
                "ember.rpc.timeout=5s",
                "-D",
                "ember.rpc.connect-timeout=5s",
                "get",
                "/dram.bin",
                cutBack.toString()));
    assertEquals(1, cut.code(), cut.output());
    String error = lastLine(cut.output());
    assertTrue(error.startsWith("ember fs get: "), cut.output());
    assertTrue(error.contains(endpoint), "names the node: " + cut.output());
    assertTrue(
        error.contains("no answer within 5000 ms") || error.contains("no answer (timed out)"),
        "the configured timeout ended it: " + cut.output());

    net.mend(holderHost);
    Path mendedBack = tmp.resolve("mended-back.bin");
    Ran mended =
        run(
            net,
            "client",
            tmp.resolve("get-mended.log"),
            fs(namenode, "get", "/dram.bin", mendedBack.toString()));
    assertEquals(0, mended.code(), mended.output());
    assertArrayEquals(content, Files.readAllBytes(mendedBack));
  }

  private static String[] dramNode(String namenode, String bind, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "datanode",
                "dram",
                "--capacity",
                "64m",
                "--namenode",
                namenode,
                "--bind",
                bind,
                "--port",
                "9070",
                "-D",
                "ember.datanode.http-port=off"));
    args.addAll(List.of(more));
    return args.toArray(new String[0]);
  }

  private static String[] fs(String namenode, String... args) {
    List<String> all = new ArrayList<>(List.of("fs", "--namenode", namenode));
    all.addAll(List.of(args));
    return all.toArray(new String[0]);
  }

  private static String lastLine(String output) {
    String stripped = output.strip();
    return stripped.substring(stripped.lastIndexOf('\n') + 1);
  }
}
