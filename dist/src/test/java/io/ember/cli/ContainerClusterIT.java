package io.ember.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The image and the compose cluster of {@code docker/}, as a user runs them: {@code
 * docker/build-image}, then {@code docker/compose.yaml} up, then the client container. It puts and
 * gets 200 MB on each storage class, kills the DRAM data node holding a file's first block, and
 * restarts the name node container. Runs after {@code package} (it needs the distribution).
 *
 * <p>Uses the Docker engine that answers (DOCKER_HOST or the default socket); where none does, it
 * starts a private {@code dockerd} as root, with the vfs storage driver and its data under {@code
 * target/}. It reports itself skipped, saying why, where neither can be had or no compose command
 * is installed.
 */
class ContainerClusterIT {
  private static final long PATIENCE_SECONDS = 600;
  private static final Path MODULE = Path.of("").toAbsolutePath();
  private static final Path ROOT = MODULE.getParent();
  private static final Path WORK = MODULE.resolve("target/container-it");

  private static final Map<String, String> env = new HashMap<>();
  private static Process privateEngine;
  private static Path privateExecRoot;
  private static List<String> compose;
  private static String project;
  private static String image;
  private static String sparkImage;
  private static int commands;

  @BeforeAll
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  static void engine() throws Exception {
    Files.createDirectories(WORK);
    assumeTrue(onPath("docker"), "the docker command is not installed");
    compose =
        run(List.of("docker", "compose", "version")).code == 0
            ? List.of("docker", "compose")
            : onPath("docker-compose") ? List.of("docker-compose") : null;
    assumeTrue(
        compose != null,
        "neither 'docker compose' nor docker-compose is installed (apt-get install"
            + " docker-compose)");
    if (run(List.of("docker", "info")).code != 0) {
      assumeTrue(
          onPath("dockerd") && "root".equals(System.getProperty("user.name")),
          "no Docker engine answers, and none can be started here (needs root and dockerd:"
              + " apt-get install docker.io)");
      startPrivateEngine();
    }
    String tag = String.format("%06x", ThreadLocalRandom.current().nextInt(0x1000000));
    project = "ember-it-" + tag;
    image = "ember:it-" + tag;
    env.put("EMBER_IMAGE", image);
    // This build packaged the distribution just now: building it again would rewrite its jars.
    env.put("EMBER_SKIP_BUILD", "1");
    sparkImage = "ember-spark:it-" + tag;
    env.put("EMBER_SPARK_IMAGE", sparkImage);
    Ran built =
        run(
            List.of(
                ROOT.resolve("docker/build-image").toString(),
                "--tag",
                image,
                "--spark",
                "--spark-tag",
                sparkImage));
    assertEquals(0, built.code, "docker/build-image:\n" + built.output);
  }

  private static void startPrivateEngine() throws Exception {
    Path dataRoot = WORK.resolve("engine");
    Files.createDirectories(dataRoot);
    // A socket path must stay short: the exec root and the socket live in /tmp.
    privateExecRoot = Files.createTempDirectory("ember-dockerd");
    String socket = privateExecRoot.resolve("docker.sock").toString();
    privateEngine =
        new ProcessBuilder(
                "dockerd",
                "--storage-driver",
                "vfs",
                "--data-root",
                dataRoot.toString(),
                "--exec-root",
                privateExecRoot.resolve("exec").toString(),
                "--pidfile",
                privateExecRoot.resolve("dockerd.pid").toString(),
                "-H",
                "unix://" + socket)
            .redirectErrorStream(true)
            .redirectOutput(WORK.resolve("dockerd.log").toFile())
            .start();
    env.put("DOCKER_HOST", "unix://" + socket);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (run(List.of("docker", "info")).code != 0) {
      // A machine where dockerd cannot run (an unprivileged container, say) has no engine.
      String tail = tail(WORK.resolve("dockerd.log"));
      assumeTrue(privateEngine.isAlive(), "dockerd cannot run here: " + tail);
      if (System.nanoTime() - deadline > 0) {
        privateEngine.destroyForcibly();
        assumeTrue(false, "dockerd does not answer: " + tail);
      }
      Thread.sleep(200);
    }
  }

  @AfterAll
  static void stopEngine() throws Exception {
    if (project != null) {
      run(composeArgs("--profile", "spark", "down", "-v", "--remove-orphans"));
      if (privateEngine == null) {
        run(List.of("docker", "image", "rm", sparkImage, image));
      }
    }
    if (privateEngine != null) {
      privateEngine.destroy();
      if (!privateEngine.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS)) {
        privateEngine.destroyForcibly();
      }
      run(List.of("rm", "-rf", privateExecRoot.toString()));
    }
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void theComposeClusterServesBothClassesAndSaysWhatALostNodeCosts() throws Exception {
    Ran up = run(composeArgs("up", "-d"));
    assertEquals(0, up.code, up.output);
    awaitHealthy("namenode", "dram1", "dram2", "target", "nvmf");

    Path data = WORK.resolve("data");
    // Files of an earlier run would make the gets below refuse to overwrite them.
    run(List.of("rm", "-rf", data.toString()));
    Files.createDirectories(data);
    Path in = data.resolve("in.bin");
    writeRandom(in, 200_000_000L, 29);
    for (String storageClass : List.of("dram", "nvmf")) {
      Ran put =
          client(
              data,
              "fs",
              "put",
              "--storage-class",
              storageClass,
              "/data/in.bin",
              "/" + storageClass + ".bin");
      assertEquals(0, put.code, put.output);
      Path out = data.resolve("out-" + storageClass + ".bin");
      Ran get =
          client(data, "fs", "get", "/" + storageClass + ".bin", "/data/" + out.getFileName());
      assertEquals(0, get.code, get.output);
      assertEquals(-1L, Files.mismatch(in, out), storageClass + " read back other bytes");
      Files.delete(out);
    }

    // A TeraSort across containers: input and output on the NVMf target, map outputs in the DRAM
    // data nodes, executors on two worker hosts, the driver on a third.
    Ran spark = run(composeArgs("--profile", "spark", "up", "-d"));
    assertEquals(0, spark.code, spark.output);
    awaitHealthy("spark-master", "spark-worker1", "spark-worker2");
    List<Long> readBefore = List.of(dramBytesRead("dram1"), dramBytesRead("dram2"));
    String[] where = {
      "--namenode", "namenode:9060",
      "--master", "spark://spark-master:7077",
      "--executor-memory", "1g",
      "--work-dir", "/tmp/bench",
      "--data-class", "nvmf"
    };
    Ran teragen = sparkBench("teragen", where, "--size", "200m");
    assertEquals(0, teragen.code, teragen.output);
    Ran terasort = sparkBench("terasort", where, "--shuffle", "ember-dram", "--partitions", "8");
    assertEquals(0, terasort.code, terasort.output);
    Ran validate = sparkBench("teravalidate", where);
    assertEquals(0, validate.code, validate.output);
    assertTrue(validate.output.contains("teravalidate: OK"), validate.output);
    // Only the shuffle used DRAM, and its reducers ran on the worker hosts: each data node served
    // reads to executors on other hosts.
    List<Long> readAfter = List.of(dramBytesRead("dram1"), dramBytesRead("dram2"));
    for (int i = 0; i < 2; i++) {
      assertTrue(
          readAfter.get(i) > readBefore.get(i),
          "dram" + (i + 1) + " served no shuffle reads: " + readBefore + " then " + readAfter);
    }

    // Kill the DRAM data node that holds the DRAM file's first block: reading it says so.
    Ran stat = client(data, "fs", "stat", "/dram.bin");
    assertEquals(0, stat.code, stat.output);
    Matcher first =
        Pattern.compile("block 0: id \\d+, DRAM on data node (\\d+) \\((dram\\d):9070\\)")
            .matcher(stat.output);
    assertTrue(first.find(), stat.output);
    String holder = first.group(2);
    Ran kill = run(List.of("docker", "kill", container(holder)));
    assertEquals(0, kill.code, kill.output);
    String expected =
        "ember fs get: data node "
            + first.group(1)
            + " ("
            + holder
            + ":9070) lost: block 0 of /dram.bin unavailable";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (true) {
      Ran lost = client(data, "fs", "get", "/dram.bin", "/data/lost.bin");
      assertEquals(1, lost.code, lost.output);
      if (lost.output.contains(expected)) {
        break;
      }
      // Until the name node notices the silence, the read fails on the connection instead.
      assertTrue(lost.output.contains(holder + ":9070"), lost.output);
      assertTrue(System.nanoTime() - deadline < 0, "never said lost: " + lost.output);
    }

    // The name node's namespace is on a volume: a restarted container still serves the files.
    Ran restart = run(composeArgs("restart", "namenode"));
    assertEquals(0, restart.code, restart.output);
    awaitHealthy("namenode");
    Path again = data.resolve("again.bin");
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (true) {
      Ran get = client(data, "fs", "get", "/nvmf.bin", "/data/again.bin");
      if (get.code == 0) {
        break;
      }
      // The NVMf data node registers again at its next heartbeat; until then its blocks are lost.
      assertTrue(System.nanoTime() - deadline < 0, "the file never came back: " + get.output);
    }
    assertEquals(-1L, Files.mismatch(in, again));
  }

  /** Waits until the containers of {@code services} report themselves healthy. */
  private static void awaitHealthy(String... services) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    String last = "";
    while (System.nanoTime() - deadline < 0) {
      List<String> states = new ArrayList<>();
      for (String service : services) {
        String id = container(service);
        states.add(
            service
                + " "
                + (id.isEmpty()
                    ? "missing"
                    : run(List.of("docker", "inspect", "-f", "{{.State.Health.Status}}", id))
                        .output
                        .strip()));
      }
      last = String.join(", ", states);
      if (states.stream().allMatch(s -> s.endsWith(" healthy"))) {
        return;
      }
      Thread.sleep(500);
    }
    throw new AssertionError("containers not healthy: " + last);
  }

  /** Runs the Spark suite's driver in a container of its own. */
  private static Ran sparkBench(String command, String[] where, String... more) throws Exception {
    List<String> all = new ArrayList<>(List.of("run", "--rm", "spark-bench", command));
    all.addAll(List.of(where));
    all.addAll(List.of(more));
    return run(composeArgs(all.toArray(new String[0])));
  }

  /** What a DRAM data node's /metrics says it served to readers, read inside its container. */
  private static long dramBytesRead(String service) throws Exception {
    Ran metrics =
        run(
            List.of(
                "docker",
                "exec",
                container(service),
                "bash",
                "-c",
                "exec 3<>/dev/tcp/127.0.0.1/9071; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3;"
                    + " cat <&3"));
    Matcher m =
        Pattern.compile("(?m)^ember_datanode_read_bytes_total\\{tier=\"dram\"\\} (\\S+)$")
            .matcher(metrics.output);
    assertTrue(m.find(), metrics.output);
    return (long) Double.parseDouble(m.group(1));
  }

  private static String container(String service) throws Exception {
    Ran id = run(composeArgs("ps", "-q", service));
    assertEquals(0, id.code, id.output);
    return id.output.strip();
  }

  /** Runs {@code ember ARGS} in the client container, with {@code data} as its /data. */
  private static Ran client(Path data, String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of("run", "--rm", "-v", data + ":/data", "client"));
    all.addAll(List.of(args));
    return run(composeArgs(all.toArray(new String[0])));
  }

  private static List<String> composeArgs(String... args) {
    List<String> all = new ArrayList<>(compose);
    all.addAll(List.of("-p", project, "-f", ROOT.resolve("docker/compose.yaml").toString()));
    all.addAll(List.of(args));
    return all;
  }

  private static void writeRandom(Path file, long size, long seed) throws IOException {
    Random random = new Random(seed);
    byte[] chunk = new byte[1 << 20];
    try (OutputStream out = Files.newOutputStream(file)) {
      for (long left = size; left > 0; left -= chunk.length) {
        random.nextBytes(chunk);
        out.write(chunk, 0, (int) Math.min(left, chunk.length));
      }
    }
  }

  private record Ran(int code, String output) {}

  /**
   * Runs a command to its end, its output in a numbered log under target/container-it; one that has
   * not ended after the test's patience is killed and fails the test.
   */
  private static Ran run(List<String> command) throws Exception {
    Path log = WORK.resolve(String.format("command-%03d.log", ++commands));
    Path output = WORK.resolve(String.format("command-%03d.out", commands));
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(output.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      return new Ran(127, e.getMessage());
    }
    boolean ended = p.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly();
    }
    String text = Files.readString(output, UTF_8);
    Files.writeString(log, String.join(" ", command) + "\n" + text, UTF_8);
    Files.delete(output);
    if (!ended) {
      throw new AssertionError(String.join(" ", command) + " did not end; see " + log);
    }
    return new Ran(p.exitValue(), text);
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.exists(log) ? Files.readAllLines(log, UTF_8) : List.of();
    return String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
  }

  private static boolean onPath(String command) throws Exception {
    return run(List.of("sh", "-c", "command -v " + command)).code == 0;
  }
}
