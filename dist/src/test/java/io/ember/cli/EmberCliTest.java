package io.ember.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.minicluster.MiniCluster;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ember command line against a real cluster: output, one-line errors and exit codes. */
class EmberCliTest {
  private static MiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster =
        MiniCluster.builder()
            .blockSize("64k")
            .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, "16m")
            .nvmfDatanode("")
            .build();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  /**
   * Exit code, output and error output of one command; {@code stdout} is what it wrote to {@code
   * System.out} itself (the bytes of {@code cat}).
   */
  static final class Result {
    private final int code;
    private final String out;
    private final String err;
    private final byte[] stdout;

    Result(int code, String out, String err, byte[] stdout) {
      this.code = code;
      this.out = out;
      this.err = err;
      this.stdout = stdout;
    }

    int code() {
      return code;
    }

    String out() {
      return out;
    }

    String err() {
      return err;
    }

    byte[] stdout() {
      return stdout;
    }
  }

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    PrintStream saved = System.out;
    ByteArrayOutputStream raw = new ByteArrayOutputStream();
    System.setOut(new PrintStream(raw, true));
    int code;
    try {
      code = EmberCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    } finally {
      System.setOut(saved);
    }
    return new Result(code, out.toString(), err.toString(), raw.toByteArray());
  }

  static Result fs(String... args) {
    List<String> all =
        new ArrayList<>(List.of("fs", "--namenode", cluster.namenodeAddress().toString()));
    all.addAll(Arrays.asList(args));
    return run(all.toArray(new String[0]));
  }

  @Test
  void fileSystemShellRoundTrip(@TempDir Path tmp) throws Exception {
    byte[] content = new byte[300_000];
    new Random(1).nextBytes(content);
    Path local = tmp.resolve("data.bin");
    Files.write(local, content);

    assertEquals(0, fs("mkdir", "-p", "/cli/a/b").code());
    assertEquals(0, fs("mkdir", "-p", "/cli/a/b").code()); // -p: existing is fine
    Result exists = fs("mkdir", "/cli/a/b");
    assertEquals(1, exists.code());
    assertEquals("ember fs mkdir: /cli/a/b exists\n", exists.err());

    assertEquals(0, fs("put", local.toString(), "/cli/a/data.bin").code());
    assertEquals(1, fs("put", local.toString(), "/cli/a/data.bin").code());
    assertEquals(0, fs("put", "-f", local.toString(), "/cli/a/data.bin").code());
    assertEquals(0, fs("put", local.toString(), "/cli/a/b").code()); // into a directory
    Result missingLocal = fs("put", tmp.resolve("nope").toString(), "/cli/x");
    assertEquals(1, missingLocal.code());
    assertTrue(missingLocal.err().contains("no such local file"), missingLocal.err());

    Result ls = fs("ls", "-R", "/cli");
    assertEquals(0, ls.code());
    assertTrue(ls.out().contains("/cli/a/data.bin"), ls.out());
    assertTrue(ls.out().contains("/cli/a/b/data.bin"), ls.out());
    assertTrue(ls.out().contains("300000"), ls.out());

    Result cat = fs("cat", "/cli/a/data.bin");
    assertEquals(0, cat.code());
    assertArrayEquals(content, cat.stdout());

    Path back = tmp.resolve("back.bin");
    assertEquals(0, fs("get", "/cli/a/data.bin", back.toString()).code());
    assertArrayEquals(content, Files.readAllBytes(back));
    Result again = fs("get", "/cli/a/data.bin", back.toString());
    assertEquals(1, again.code());
    assertTrue(again.err().contains("local file exists"), again.err());

    Result stat = fs("stat", "/cli/a/data.bin");
    assertEquals(0, stat.code());
    assertTrue(stat.out().contains("blocks:        5 of 65536 bytes"), stat.out());
    assertTrue(stat.out().contains("block 4: id"), stat.out());

    assertEquals(0, fs("mv", "/cli/a/data.bin", "/cli/moved.bin").code());
    Result mvMissing = fs("mv", "/cli/a/data.bin", "/cli/x");
    assertEquals(1, mvMissing.code());
    assertEquals("ember fs mv: /cli/a/data.bin does not exist\n", mvMissing.err());
    assertEquals(0, fs("mv", "/cli/moved.bin", "/cli/a").code()); // into a directory
    assertEquals(0, fs("stat", "/cli/a/moved.bin").code());

    Result df = fs("df");
    assertEquals(0, df.code());
    assertTrue(df.out().contains("DRAM"), df.out());

    Result rmDir = fs("rm", "/cli/a");
    assertEquals(1, rmDir.code());
    assertTrue(rmDir.err().contains("is a directory"), rmDir.err());
    assertEquals(0, fs("rm", "-r", "/cli").code());
    Result rmMissing = fs("rm", "/cli");
    assertEquals(1, rmMissing.code());
    assertEquals("ember fs rm: /cli does not exist\n", rmMissing.err());
    assertEquals(0, fs("rm", "-f", "/cli").code());
    assertEquals(1, fs("ls", "/cli").code());
  }

  @Test
  void putChoosesTheStorageClassAndStatAndDfShowIt(@TempDir Path tmp) throws Exception {
    byte[] content = new byte[200_000];
    new Random(2).nextBytes(content);
    Path local = tmp.resolve("n.bin");
    Files.write(local, content);
    assertEquals(
        0, fs("put", "-p", "--storage-class", "nvmf", local.toString(), "/classes/n.bin").code());
    assertEquals(0, fs("put", local.toString(), "/classes/d.bin").code());

    Result nvmf = fs("stat", "/classes/n.bin");
    assertEquals(0, nvmf.code());
    assertTrue(nvmf.out().contains("storage class: NVMf"), nvmf.out());
    assertEquals(
        4, nvmf.out().lines().filter(l -> l.contains(", NVMf on data node")).count(), nvmf.out());
    Result dram = fs("stat", "/classes/d.bin");
    assertEquals(
        4, dram.out().lines().filter(l -> l.contains(", DRAM on data node")).count(), dram.out());

    Result df = fs("df");
    assertEquals(0, df.code());
    java.util.Map<String, String> rows = new java.util.HashMap<>();
    for (String line : df.out().lines().skip(1).toList()) {
      String[] cols = line.trim().split("\\s+", -1); // trimmed: no empty field at either end
      rows.put(cols[0], cols[2]); // class -> used bytes
    }
    assertTrue(Long.parseLong(rows.get("NVMf")) >= 4 * 65536, df.out());
    assertTrue(Long.parseLong(rows.get("DRAM")) >= 4 * 65536, df.out());
    Path back = tmp.resolve("back.bin");
    assertEquals(0, fs("get", "/classes/n.bin", back.toString()).code());
    assertArrayEquals(content, Files.readAllBytes(back));

    Result bad = fs("put", "--storage-class", "tape", local.toString(), "/classes/t.bin");
    assertEquals(1, bad.code());
    assertTrue(bad.err().contains("unknown storage class 'tape'"), bad.err());
    assertEquals(1, bad.err().lines().count(), bad.err());
    assertEquals(0, fs("rm", "-r", "/classes").code());
  }

  @Test
  void chmodAndChownChangeWhatLsAndStatShow() throws Exception {
    assertEquals(0, fs("mkdir", "-p", "/perm/d").code());
    assertEquals(0, fs("chmod", "1750", "/perm/d").code());
    assertEquals(0, fs("chown", "alice:staff", "/perm/d").code());
    Result ls = fs("ls", "/perm");
    assertEquals(0, ls.code());
    assertTrue(
        java.util.regex.Pattern.compile("(?m)^drwxr-x--T alice +staff +- +0 .* /perm/d$")
            .matcher(ls.out())
            .find(),
        ls.out());
    assertEquals(0, fs("chown", ":eng", "/perm/d").code());
    Result stat = fs("stat", "/perm/d");
    assertTrue(stat.out().contains("owner:         alice:eng rwxr-x--T (1750)"), stat.out());

    Result badMode = fs("chmod", "u+x", "/perm/d");
    assertEquals(1, badMode.code());
    assertTrue(badMode.err().contains("'u+x' is not an octal mode"), badMode.err());
    Result missing = fs("chmod", "700", "/perm/none", "/perm/d");
    assertEquals(1, missing.code());
    assertEquals("ember fs chmod: /perm/none does not exist", missing.err().strip(), missing.err());
    assertTrue(fs("stat", "/perm/d").out().contains("rwx------ (700)"), "the rest still applied");
    assertEquals(1, fs("chown", ":", "/perm/d").code());
    assertEquals(0, fs("rm", "-r", "/perm").code());
  }

  @Test
  void aReplacingPutThatFillsItsTierKeepsTheOldFileAndLeavesNoCopy(@TempDir Path tmp)
      throws Exception {
    byte[] old = new byte[100_000];
    new Random(3).nextBytes(old);
    Path small = tmp.resolve("small.bin");
    Files.write(small, old);
    Result first = fs("put", "-p", "--storage-class", "nvmf", small.toString(), "/full/f.bin");
    assertEquals(0, first.code(), first.err());
    // More than the whole NVMf tier (16m), and NVMf is last in the spill order: the copy fails.
    Path big = tmp.resolve("big.bin");
    Files.write(big, new byte[20 << 20]);
    Result r = fs("put", "-f", "--storage-class", "nvmf", big.toString(), "/full/f.bin");
    assertEquals(1, r.code(), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    Path back = tmp.resolve("back.bin");
    assertEquals(0, fs("get", "/full/f.bin", back.toString()).code());
    assertArrayEquals(old, Files.readAllBytes(back), "the old file is untouched");
    try (io.ember.client.EmberClient c = cluster.newClient()) {
      assertEquals(
          List.of("f.bin"),
          c.list("/full").stream().map(e -> e.name()).toList(),
          "no partial copy left");
    }
    assertEquals(0, fs("rm", "-r", "/full").code());
  }

  @Test
  void usageErrorsExit255AndUnreachableNameNodeIsOneLine() throws Exception {
    Result bogus = fs("ls", "--bogus");
    assertEquals(EmberCli.USAGE_ERROR, bogus.code());
    assertTrue(bogus.err().startsWith("ember: Unknown option: '--bogus'"), bogus.err());
    assertEquals(EmberCli.USAGE_ERROR, run("fs").code());
    assertEquals(EmberCli.USAGE_ERROR, run().code());
    assertEquals(EmberCli.USAGE_ERROR, run("fs", "--namenode", "h:1", "put", "onlyone").code());

    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Result r = run("fs", "--namenode", "127.0.0.1:" + port, "ls", "/");
    assertEquals(1, r.code());
    assertTrue(
        r.err()
            .startsWith(
                "ember fs ls: cannot connect to the name node at 127.0.0.1:"
                    + port
                    + ": connection refused"),
        r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    Result unknown = run("fs", "--namenode", "no-such-host.invalid:9060", "ls", "/");
    assertEquals(1, unknown.code());
    assertTrue(
        unknown
            .err()
            .startsWith(
                "ember fs ls: cannot connect to the name node at no-such-host.invalid:9060:"
                    + " unknown host"),
        unknown.err());
    // An address that is not HOST[:PORT] is a usage error, found before anything connects.
    Result badAddress = run("fs", "--namenode", "127.0.0.1:abc", "ls", "/");
    assertEquals(EmberCli.USAGE_ERROR, badAddress.code(), badAddress.err());
    assertTrue(badAddress.err().contains("'127.0.0.1:abc' is not HOST[:PORT]"), badAddress.err());

    Result badSetting =
        run("fs", "--namenode", "127.0.0.1:" + port, "-D", "ember.rpc.timout=1s", "ls");
    assertEquals(1, badSetting.code());
    assertTrue(
        badSetting.err().contains("unknown setting(s) [ember.rpc.timout]"), badSetting.err());
  }

  @Test
  void everyCommandHasHelp() {
    for (String cmd :
        List.of(
            "ls", "mkdir", "put", "get", "cp", "cat", "rm", "mv", "stat", "chmod", "chown", "df")) {
      Result help = fs(cmd, "--help");
      assertEquals(0, help.code(), cmd + ": " + help.err());
      assertTrue(help.out().startsWith("Usage: ember fs " + cmd), help.out());
      Result viaHelp = fs("help", cmd);
      assertEquals(0, viaHelp.code(), cmd + ": " + viaHelp.err());
      assertEquals(help.out(), viaHelp.out());
    }
    assertTrue(fs("ls", "-h").out().contains("-R, --recursive"));
    assertTrue(fs("put", "--help").out().contains("--storage-class=CLASS"));
    assertTrue(fs("get", "--help").out().contains("Never overwrites"));
    assertTrue(fs("cp", "--help").out().contains("unless -f"));
    assertTrue(fs("put", "--help").out().contains("--no-progress"));
    assertTrue(run("--help").out().contains("NVMf data node"), run("--help").out());
    assertTrue(run("local", "--help").out().contains("NVMf data node"));
    Result namenodeHelp = run("namenode", "--help");
    assertTrue(!namenodeHelp.out().contains("null"), namenodeHelp.out());
  }

  @Test
  void cpCopiesWithinEmberAndNeverOverwritesUnlessTold(@TempDir Path tmp) throws Exception {
    byte[] data = new byte[300_000];
    new Random(5).nextBytes(data);
    Path local = Files.write(tmp.resolve("src"), data);
    assertEquals(0, fs("put", "-p", local.toString(), "/cp/a").code());

    Result copy = fs("cp", "/cp/a", "/cp/b");
    assertEquals(0, copy.code(), copy.err());
    assertEquals("", copy.err(), "no progress bar when the output is no terminal");
    assertArrayEquals(data, fs("cat", "/cp/b").stdout());

    Result exists = fs("cp", "/cp/a", "/cp/b");
    assertEquals(1, exists.code());
    assertTrue(exists.err().startsWith("ember fs cp: "), exists.err());
    assertTrue(exists.err().contains("/cp/b"), exists.err());
    assertEquals(0, fs("cp", "-f", "--storage-class", "nvmf", "/cp/a", "/cp/b").code());
    assertTrue(fs("stat", "/cp/b").out().contains("storage class: NVMf"));
    assertArrayEquals(data, fs("cat", "/cp/b").stdout());

    assertEquals(0, fs("mkdir", "/cp/into").code());
    assertEquals(0, fs("cp", "/cp/a", "/cp/b", "/cp/into").code());
    assertArrayEquals(data, fs("cat", "/cp/into/b").stdout());
    assertTrue(fs("stat", "/cp/into/b").out().contains("storage class: NVMf"), "kept");

    Result dir = fs("cp", "/cp/into", "/cp/dir-copy");
    assertEquals(1, dir.code());
    assertEquals("ember fs cp: /cp/into is a directory", dir.err().strip());
    Result missing = fs("cp", "/cp/none", "/cp/c");
    assertEquals(1, missing.code());
    assertTrue(missing.err().contains("/cp/none"), missing.err());
    assertEquals(1, fs("stat", "/cp/dir-copy").code(), "nothing left behind");
    assertEquals(1, fs("stat", "/cp/c").code(), "nothing left behind");
    assertEquals(1, fs("cp", "/cp/a", "/cp/a").code());
    Result notDir = fs("cp", "/cp/a", "/cp/b", "/cp/a");
    assertEquals(1, notDir.code());
    assertEquals("ember fs cp: /cp/a is not a directory (copying 2 files)", notDir.err().strip());
    Result mvNotDir = fs("mv", "/cp/a", "/cp/b", "/cp/a");
    assertEquals("ember fs mv: /cp/a is not a directory (moving 2 paths)", mvNotDir.err().strip());
    assertArrayEquals(data, fs("cat", "/cp/a").stdout(), "left as it was");
    assertEquals(0, fs("rm", "-r", "/cp").code());
  }

  @Test
  void putAndGetDrawAProgressBarOnlyAtATerminal(@TempDir Path tmp) throws Exception {
    Path script = Path.of("/usr/bin/script");
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.isExecutable(script), "no script(1) (util-linux) to give the command a terminal");
    byte[] data = new byte[3 << 20];
    new Random(6).nextBytes(data);
    Path local = Files.write(tmp.resolve("big"), data);
    Path back = tmp.resolve("back");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String ember =
        String.join(
            " ",
            java,
            "-cp",
            System.getProperty("java.class.path"),
            EmberCli.class.getName(),
            "fs",
            "--namenode",
            cluster.namenodeAddress().toString());
    for (String command :
        List.of(
            ember + " put " + local + " /progress",
            ember + " get /progress " + back,
            ember + " cp /progress /progress-copy")) {
      // script(1) runs the command on a pseudo-terminal, as a person's shell would.
      Path screen = tmp.resolve("screen.txt");
      ProcessBuilder pb =
          new ProcessBuilder(script.toString(), "-qefc", command, "/dev/null")
              .redirectErrorStream(true)
              .redirectOutput(screen.toFile())
              .redirectInput(ProcessBuilder.Redirect.PIPE);
      pb.environment().put("TERM", "xterm-256color");
      Process p = pb.start();
      p.getOutputStream().close();
      boolean ended = p.waitFor(5, TimeUnit.MINUTES);
      String shown = Files.readString(screen, UTF_8);
      if (!ended) {
        p.destroyForcibly();
      }
      assertTrue(ended, command + " ended: " + shown);
      assertEquals(0, p.exitValue(), shown);
      assertTrue(shown.contains("100%"), command + " drew no finished bar: " + shown);
      // The rate's column; its value is "?" for a copy under a second.
      assertTrue(shown.contains("MiB/s"), command + " has no rate column: " + shown);
      assertTrue(shown.contains("3/3 MiB"), command + " shows no size: " + shown);
    }
    assertArrayEquals(data, Files.readAllBytes(back));
    assertArrayEquals(data, fs("cat", "/progress-copy").stdout());
    assertEquals(0, fs("rm", "/progress", "/progress-copy").code());
  }

  @Test
  void adminReportAndDatanodesListEveryDataNode() throws Exception {
    String at = cluster.namenodeAddress().toString();
    Result datanodes = run("admin", "datanodes", "--namenode", at);
    assertEquals(0, datanodes.code(), datanodes.err());
    List<String> lines = datanodes.out().lines().toList();
    assertEquals(3, lines.size(), datanodes.out());
    assertTrue(lines.get(0).contains("state"), lines.get(0));
    String dram = cluster.datanodes().get(0).endpoint();
    String nvmf = cluster.nvmfDatanodes().get(0).endpoint();
    assertTrue(
        lines.stream().anyMatch(l -> l.contains(" live ") && l.endsWith(dram)), lines.toString());
    assertTrue(
        lines.stream().anyMatch(l -> l.contains(" live ") && l.endsWith(nvmf)), lines.toString());

    Result report = run("admin", "--namenode", at, "report");
    assertEquals(0, report.code(), report.err());
    assertTrue(report.out().contains("Data nodes: 2 (2 live, 0 not)"), report.out());
    assertTrue(report.out().contains("Data node 1: "), report.out());
    long dramBytes = cluster.datanodes().get(0).capacity();
    assertTrue(report.out().contains("  Capacity: " + dramBytes + " "), report.out());

    Result down = run("admin", "report", "--namenode", "127.0.0.1:1");
    assertEquals(1, down.code());
    assertEquals(1, down.err().strip().lines().count(), down.err());
    assertTrue(
        down.err().startsWith("ember admin report: cannot connect to the name node"), down.err());
    assertEquals(255, run("admin").code());
    assertTrue(run("admin", "report", "--help").out().startsWith("Usage: ember admin report"));
  }

  @Test
  void badLocalAndRemotePathsAreOneClearLineAndLeaveNothingBehind(@TempDir Path tmp)
      throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("a-directory"));
    Result putDir = fs("put", dir.toString(), "/from-dir");
    assertEquals(1, putDir.code());
    assertEquals(
        "ember fs put: " + dir + ": is a local directory (put copies files)", putDir.err().strip());
    assertEquals(1, fs("stat", "/from-dir").code(), "nothing left behind");

    Path file = Files.write(tmp.resolve("f"), new byte[] {1, 2, 3});
    assertEquals(0, fs("put", file.toString(), "/for-get").code());
    Path missing = tmp.resolve("no-dir").resolve("f");
    Result get = fs("get", "/for-get", missing.toString());
    assertEquals(1, get.code());
    assertEquals(
        "ember fs get: " + missing.getParent() + ": no such local directory", get.err().strip());
    assertEquals(0, fs("rm", "/for-get").code());

    // Checked on the client, with the same words for every command.
    String longPath = "/" + "a".repeat(5000);
    for (String cmd : List.of("cat", "ls", "stat", "rm")) {
      Result r = fs(cmd, longPath);
      assertEquals(1, r.code(), cmd);
      assertTrue(r.err().startsWith("ember fs " + cmd + ": invalid path '/aaa"), r.err());
      assertTrue(r.err().contains("longer than 4096 bytes"), r.err());
    }

    Result newline = fs("mkdir", "/a\nb");
    assertEquals(1, newline.code());
    assertEquals(
        "ember fs mkdir: invalid path '/a\\nb': control character U+000A in a name",
        newline.err().strip());
    Result tab = fs("put", file.toString(), "/t\tab");
    assertEquals(1, tab.code());
    assertTrue(tab.err().contains("control character U+0009"), tab.err());
    assertEquals(1, tab.err().lines().count(), tab.err());
  }

  @Test
  void unexpectedErrorsAreOneLineWithTheTraceInTheLog() throws Exception {
    String line = "ember test: boom";
    java.nio.file.Path log = EmberCli.writeLog(line, new IllegalStateException("boom"));
    assertTrue(log != null && Files.readString(log).contains("IllegalStateException: boom"));
    assertTrue(
        EmberCli.expected(
            new io.ember.protocol.EmberException(io.ember.protocol.ErrorCode.NOT_FOUND, "x")));
    assertTrue(!EmberCli.expected(new NullPointerException()));
  }

  @Test
  void localDemoRunsAndVerifiesItsData() {
    Result r = run("local", "--demo", "--port", "0", "--capacity", "64m", "--nvmf-size", "64m");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("3 MiB on NVMf, over NVMe/TCP): matches"), r.out());
    assertTrue(r.out().contains("name node listening on 127.0.0.1:"), r.out());
    assertTrue(r.out().contains(": matches"), r.out());
    assertTrue(r.out().contains("4000 records (expected 4000)"), r.out());
  }

  @Test
  void benchPrintsFiguresBesideBaselinesAndDrawsThemInItsReport(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("report");
    Result r =
        run(
            "bench",
            "--size",
            "2m",
            "--ops",
            "50",
            "--rounds",
            "2",
            "--threads",
            "1,2",
            "--warmup",
            "0",
            "--report",
            dir.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("write 1 MiB ops"), r.out());
    assertTrue(r.out().contains("read 4 KiB ops (buffered stream)"), r.out());
    assertTrue(r.out().contains("lookup, 2 threads"), r.out());
    assertTrue(r.err().contains("bench: throughput 1 MiB ops, round 1/2"), r.err());
    Path page = dir.resolve("index.html");
    assertTrue(r.err().contains("bench: report written to " + page.toAbsolutePath()), r.err());
    String html = Files.readString(page);
    // The page's table holds the printed table's rows, cell for cell.
    String row =
        r.out().lines().filter(l -> l.startsWith("lookup, 1 thread")).findFirst().orElseThrow();
    List<String> cells =
        List.of(row.substring("lookup, 1 thread".length()).trim().split("\\s{2,}"));
    assertEquals(4, cells.size(), row);
    StringBuilder expected = new StringBuilder("<tr><td>lookup, 1 thread</td>");
    cells.subList(0, 3).forEach(c -> expected.append("<td class=\"n\">").append(c).append("</td>"));
    assertTrue(html.contains(expected + "<td>&gt;= 0.50</td></tr>"), html);
    assertTrue(html.contains("ember bench --size 2m --ops 50"), "the command line is on the page");
    // A chart each of MiB/s, ops/s, the receiver's CPU ms and the caller's CPU us per lookup
    // beside their baselines, and one of the ratios.
    assertTrue(r.out().contains("receiver CPU per GiB written, 1 MiB ops"), r.out());
    assertTrue(r.out().contains("caller CPU per lookup, 1 thread"), r.out());
    assertEquals(5, html.split("<img alt=", -1).length - 1, html);
    assertTrue(html.contains("<img alt=\"DRAM tier on loopback: Ember / baseline\""), html);
  }

  @Test
  void devCaRefusesABadHostBeforeWritingAnythingAndReusesItsCa(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("tls");
    Result bad =
        run("security", "dev-ca", "--dir", dir.toString(), "--server", "nn=nn.example.net:9060");
    assertEquals(EmberCli.USAGE_ERROR, bad.code(), bad.err());
    assertTrue(
        bad.err().contains("not a host name or an IP address: 'nn.example.net:9060'"), bad.err());
    assertFalse(Files.exists(dir), "nothing written");

    Result first = run("security", "dev-ca", "--dir", dir.toString(), "--server", "nn= local ,::1");
    assertEquals(0, first.code(), first.err());
    assertTrue(first.out().contains("for localhost,127.0.0.1,::1"), first.out());
    String ca = Files.readString(dir.resolve("ca.pem"));
    Result second = run("security", "dev-ca", "--dir", dir.toString(), "--user", "alice");
    assertEquals(0, second.code(), second.err());
    assertEquals(ca, Files.readString(dir.resolve("ca.pem")), "the CA in DIR is reused");
    assertTrue(Files.readString(dir.resolve("alice.pem")).endsWith(ca), "the chain ends at the CA");
  }

  /** {@code ember security add-user NAME} into {@code credentials}, the password from a file. */
  private static Result addUser(String name, Path credentials, Path password) {
    return run(
        "security",
        "add-user",
        name,
        "--credentials",
        credentials.toString(),
        "--password-file",
        password.toString());
  }

  @Test
  void securityAddUserWritesVerifiersThatAPasswordClusterTakes(@TempDir Path tmp) throws Exception {
    Path credentials = tmp.resolve("conf").resolve("credentials");
    Path password = tmp.resolve("alice.pw");
    Files.writeString(password, "correct horse\n");
    Result added = addUser("alice", credentials, password);
    assertEquals(0, added.code(), added.err());
    assertTrue(added.out().contains("added alice"), added.out());
    String file = Files.readString(credentials);
    assertTrue(file.startsWith(":unknown-users "), file);
    assertTrue(file.contains("\nalice SCRAM-SHA-256$4096:"), file);
    assertFalse(file.contains("correct horse"), "no password in the file");
    assertEquals(
        "rw-------",
        java.nio.file.attribute.PosixFilePermissions.toString(
            Files.getPosixFilePermissions(credentials)));
    Path nodePassword = tmp.resolve("node.pw");
    Files.writeString(nodePassword, "node secret\n");
    assertEquals(0, addUser("node", credentials, nodePassword).code());
    // Refused before anything is written: a name that cannot be a user, an empty password.
    Result badName = addUser("a:b", credentials, password);
    assertEquals(1, badName.code());
    assertTrue(badName.err().contains("cannot be a user name"), badName.err());
    Path empty = tmp.resolve("empty.pw");
    Files.writeString(empty, "\n");
    Result noPassword = addUser("bob", credentials, empty);
    assertTrue(
        noPassword.code() != 0 && noPassword.err().contains("no password"), noPassword.err());
    assertFalse(Files.readString(credentials).contains("bob "), "nothing written for bob");

    io.ember.protocol.EmberConfig node =
        io.ember.protocol.EmberConfig.defaults()
            .with(io.ember.protocol.EmberKeys.SCRAM, "true")
            .with(io.ember.protocol.EmberKeys.USER, "node")
            .with(io.ember.protocol.EmberKeys.PASSWORD_FILE, nodePassword.toString())
            .with(io.ember.namenode.NameNodeKeys.CREDENTIALS, credentials.toString());
    try (MiniCluster secured = MiniCluster.builder().dramDatanodes(1).config(node).build()) {
      String nn = secured.namenodeAddress().toString();
      java.util.function.Function<String, Result> asAlice =
          command -> {
            List<String> args =
                new ArrayList<>(
                    List.of(
                        "fs",
                        "--namenode",
                        nn,
                        "-D",
                        "ember.security.scram=true",
                        "-D",
                        "ember.security.user=alice",
                        "-D",
                        "ember.security.password-file=" + password));
            args.addAll(List.of(command.split(" ", -1)));
            return run(args.toArray(new String[0]));
          };
      Result mkdir = asAlice.apply("mkdir /alice");
      assertEquals(0, mkdir.code(), mkdir.err());
      Result ls = asAlice.apply("ls /");
      assertTrue(ls.out().contains("alice"), ls.out());
      // A changed password takes effect without a restart; the old one is then one line.
      Path changed = tmp.resolve("new.pw");
      Files.writeString(changed, "battery staple\n");
      Result change = addUser("alice", credentials, changed);
      assertTrue(change.out().contains("changed the password of alice"), change.out());
      Result old = asAlice.apply("ls /");
      assertEquals(1, old.code());
      assertTrue(old.err().contains("unknown user or wrong password"), old.err());
      assertEquals(1, old.err().strip().lines().count(), old.err());
    }
  }

  @Test
  void securityTokenGivesAProcessWithoutACertificateItsOwnersAccess(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("tls");
    assertEquals(
        0,
        run(
                "security",
                "dev-ca",
                "--dir",
                dir.toString(),
                "--server",
                "node=localhost,127.0.0.1",
                "--user",
                "alice")
            .code());
    io.ember.protocol.EmberConfig node =
        io.ember.protocol.EmberConfig.defaults()
            .with(io.ember.protocol.EmberKeys.TLS, "true")
            .with(io.ember.protocol.EmberKeys.TLS_CERTIFICATE, dir.resolve("node.pem").toString())
            .with(io.ember.protocol.EmberKeys.TLS_KEY, dir.resolve("node.key").toString())
            .with(io.ember.protocol.EmberKeys.TLS_CA, dir.resolve("ca.pem").toString());
    try (MiniCluster secured = MiniCluster.builder().dramDatanodes(1).config(node).build()) {
      String nn = secured.namenodeAddress().toString();
      // Every command: this name node, over TLS, trusting the CA; then who it is, and what to do.
      // The settings follow the command that takes them: `fs`, or `security token`.
      java.util.function.BiFunction<List<String>, List<String>, Result> as =
          (identity, command) -> {
            int takesSettings = command.get(0).equals("fs") ? 1 : 2;
            List<String> args = new ArrayList<>(command.subList(0, takesSettings));
            args.addAll(
                List.of(
                    "--namenode",
                    nn,
                    "-D",
                    "ember.security.tls=true",
                    "-D",
                    "ember.security.tls.ca=" + dir.resolve("ca.pem")));
            for (String setting : identity) {
              args.addAll(List.of("-D", setting));
            }
            args.addAll(command.subList(takesSettings, command.size()));
            return run(args.toArray(new String[0]));
          };
      List<String> alice =
          List.of(
              "ember.security.tls.certificate=" + dir.resolve("alice.pem"),
              "ember.security.tls.key=" + dir.resolve("alice.key"));
      Result token = as.apply(alice, List.of("security", "token"));
      assertEquals(0, token.code(), token.err());
      String text = token.out().strip();
      Path tokenFile = tmp.resolve("job.token");
      Files.writeString(tokenFile, text);
      Result renewed =
          as.apply(alice, List.of("security", "token", "--renew", tokenFile.toString()));
      assertEquals(0, renewed.code(), renewed.err());
      assertTrue(renewed.out().contains("renewed delegation token"), renewed.out());
      assertFalse(renewed.out().contains(text), "no token in the output");

      List<String> holder = List.of("ember.security.delegation-token=" + text);
      Result mkdir = as.apply(holder, List.of("fs", "mkdir", "/from-token"));
      assertEquals(0, mkdir.code(), mkdir.err());
      Result ls = as.apply(holder, List.of("fs", "ls", "/"));
      assertTrue(ls.out().contains("alice"), ls.out());
      Result without = as.apply(List.of(), List.of("fs", "ls", "/"));
      assertNotEquals(0, without.code(), without.err());
      assertTrue(without.err().contains("delegation token"), without.err());
      assertFalse(without.err().contains(text), "no token in an error");
    }
  }

  @Test
  void benchJmhDrawsJmhsResults(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("jmh");
    Result r =
        run(
            "bench",
            "jmh",
            "TcpPingPongBenchmark",
            "-p",
            "shape=read",
            "-p",
            "size=4096",
            "-f",
            "0",
            "-wi",
            "0",
            "-i",
            "2",
            "-r",
            "200ms",
            "--report",
            dir.toString());
    assertEquals(0, r.code(), r.err());
    String html = Files.readString(dir.resolve("index.html"));
    assertTrue(
        html.contains("<td>TcpPingPongBenchmark.pingPong shape=read,size=4096</td><td>sample</td>"),
        html);
    assertTrue(html.contains("<img alt=\"Sampling time, us/op\""), html);
    // The host's and the target's CPU time per operation, from the JVM's thread clocks.
    for (String side : List.of("host", "target")) {
      assertTrue(
          html.contains("<td>TcpPingPongBenchmark.pingPong shape=read,size=4096 cpu." + side),
          html);
    }
  }

  @Test
  void benchMetricsComparesMetricsOnAndOff() {
    Result r =
        run("bench", "metrics", "--rounds", "1", "--seconds", "1", "--warmup", "0", "--size", "2m");
    assertEquals(0, r.code(), r.err());
    for (String figure : List.of("lookups, 1 thread", "1 MiB writes", "1 MiB reads")) {
      assertTrue(r.out().lines().anyMatch(l -> l.startsWith(figure)), r.out());
    }
    assertTrue(r.err().contains("bench: round 1/1, metrics off: "), r.err());
  }

  @Test
  void benchNvmfComparesTheTierWithABareHostPollingOrNot() {
    Result r =
        run(
            "bench",
            "nvmf",
            "--size",
            "1m",
            "--ops",
            "20",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--busy-poll",
            "1ms",
            "--bare-busy-poll",
            "1ms");
    assertEquals(0, r.code(), r.err());
    for (String figure :
        List.of("seq 1 MiB write, async", "random 4 KiB read", "4 KiB write, one at a time")) {
      assertTrue(r.out().lines().anyMatch(l -> l.startsWith(figure)), r.out());
    }
    assertTrue(r.out().contains("polling after each event for 1ms"), r.out());
    Result bad = run("bench", "nvmf", "--bare-busy-poll", "2s");
    assertEquals(EmberCli.USAGE_ERROR, bad.code(), bad.err());
    assertTrue(bad.err().startsWith("ember: --bare-busy-poll: 2s is not between"), bad.err());
    Result overflow = run("bench", "nvmf", "--busy-poll", "9223372036854775807h");
    assertEquals(EmberCli.USAGE_ERROR, overflow.code(), overflow.err());
    assertTrue(
        overflow.err().startsWith("ember: --busy-poll: '9223372036854775807h' is not a duration"),
        overflow.err());
  }

  @Test
  void aMistypedSizeOrDurationIsAUsageErrorNamingTheOption() {
    // Each is refused before anything starts: these used to end in Java's own "For input
    // string" with no option named, or, for a negative scrape interval, after a cluster started.
    for (String[] wrong :
        new String[][] {
          {"bench --size lots", "--size: 'lots' is not a size such as 512m or 4g"},
          {"bench --size 512k", "--size: 512k is less than 1m"},
          {"bench nvmf --size 1.5g", "--size: '1.5g' is not a size such as 512m or 4g"},
          {"bench hadoop --size -1m", "--size: '-1m' is not a size such as 512m or 4g"},
          {"bench security --size lots", "--size: 'lots' is not a size such as 512m or 4g"},
          {"bench metrics --scrape-interval -1s", "--scrape-interval: -1s is not between 0 and 1h"},
          {"bench metrics --scrape-interval often", "--scrape-interval: 'often' is not a duration"},
          {"local --nvmf-size lots", "--nvmf-size: 'lots' is not a size such as 512m or 4g"},
          {"local --nvmf-size 4k", "--nvmf-size: 4k is less than 1m (0: no NVMf tier)"},
          {"local --nvmf-size 32t", "--nvmf-size: 32t is not between 0 and 16t"},
        }) {
      Result r = run(wrong[0].split(" "));
      assertEquals(EmberCli.USAGE_ERROR, r.code(), wrong[0] + ": " + r.err());
      assertTrue(r.err().startsWith("ember: " + wrong[1]), wrong[0] + ": " + r.err());
      // The error and where to find help, nothing else: no stack trace, no cluster started.
      assertEquals(2, r.err().lines().count(), r.err());
    }
  }

  @Test
  void benchTakesSettingsAndRefusesUnknownOnes() {
    Result ok =
        run(
            "bench",
            "--size",
            "2m",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--only",
            "throughput",
            "-D",
            "ember.client.read-ahead=0");
    assertEquals(0, ok.code(), ok.err());
    assertTrue(ok.out().contains("read 1 MiB ops"), ok.out());
    Result unknown = run("bench", "-D", "ember.client.read-ahaed=0");
    assertEquals(EmberCli.USAGE_ERROR, unknown.code(), unknown.err());
    assertTrue(
        unknown.err().contains("unknown setting(s) [ember.client.read-ahaed]"), unknown.err());
    Result bad = run("bench", "-D", "ember.client.read-ahead=lots");
    assertEquals(EmberCli.USAGE_ERROR, bad.code(), bad.err());
    assertTrue(bad.err().contains("ember.client.read-ahead"), bad.err());
  }
}
