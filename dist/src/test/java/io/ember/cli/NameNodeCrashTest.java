package io.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A name node process killed with SIGKILL while eight writers put files on DRAM and NVMf, then
 * started again on its directory: every file whose close was acknowledged is there with its exact
 * bytes, and blocks handed out afterwards never overwrite one of them. The data nodes are separate
 * processes that keep running, as they would on other hosts.
 */
class NameNodeCrashTest {
  private static final long PATIENCE_SECONDS = 180;
  private static final int WRITERS = 8;
  private static final int FILES = 1000;
  private static final int KILLS = 3;
  private static final int MAX_FILE = 3 << 20;

  private final EmberProcesses processes = new EmberProcesses(PATIENCE_SECONDS);

  @AfterEach
  void stop() {
    processes.close();
  }

  private Process ember(Path log, String... args) throws IOException {
    return processes.start(log, args);
  }

  private String awaitLine(Path log, Pattern pattern, Process process) throws Exception {
    return processes.awaitLine(log, pattern, process);
  }

  private Process namenode(Path tmp, Path dir, String port, int run) throws Exception {
    Path log = tmp.resolve("namenode-" + run + ".log");
    Process p =
        namenodeProcess(
            log,
            dir,
            port,
            "ember.namenode.datanode-timeout=60s",
            "ember.namenode.checkpoint.records=150",
            "ember.namenode.checkpoint.interval=1s");
    awaitLine(log, Pattern.compile("name node listening on (127\\.0\\.0\\.1:\\d+)"), p);
    return p;
  }

  private static long crc(byte[] b) {
    CRC32C c = new CRC32C();
    c.update(b);
    return c.getValue();
  }

  private static byte[] content(int file) {
    Random r = new Random(file * 7919L);
    // Mostly small files, some empty, some several blocks long.
    int size = file % 10 == 0 ? 0 : r.nextInt(file % 3 == 0 ? MAX_FILE : 64 << 10);
    byte[] b = new byte[size];
    r.nextBytes(b);
    return b;
  }

  private static byte[] read(EmberClient c, String path) throws IOException {
    try (EmberInputStream in = c.open(path)) {
      return in.readAllBytes();
    }
  }

  /** Waits until the name node counts one live data node of each class. */
  private static void awaitDatanodes(EmberClient c) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (true) {
      List<ClassUsage> usage;
      try {
        usage = c.df();
      } catch (EmberException e) {
        usage = List.of();
      }
      long live = usage.stream().filter(u -> u.liveNodes() == 1).count();
      if (live == 2) {
        return;
      }
      assertTrue(System.nanoTime() - deadline < 0, "data nodes did not come back: " + usage);
      Thread.sleep(50);
    }
  }

  @Test
  void acknowledgedFilesSurviveSigkillOfTheNameNode(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("nn");
    Process format =
        ember(tmp.resolve("format.log"), "namenode", "--dir", dir.toString(), "--format");
    assertEquals(0, format.waitFor(), Files.readString(tmp.resolve("format.log")));
    Process nn = namenode(tmp, dir, "0", 0);
    String address =
        awaitLine(
            tmp.resolve("namenode-0.log"),
            Pattern.compile("name node listening on (127\\.0\\.0\\.1:\\d+)"),
            nn);
    String port = address.substring(address.indexOf(':') + 1);
    Path dramLog = tmp.resolve("dram.log");
    Process dram =
        ember(
            dramLog,
            "datanode",
            "dram",
            "--capacity",
            "1g",
            "--namenode",
            address,
            "--host",
            "127.0.0.1",
            "-D",
            "ember.datanode.heartbeat-interval=200ms");
    Path nvmfLog = tmp.resolve("nvmf.log");
    Process nvmf =
        ember(
            nvmfLog,
            "datanode",
            "nvmf",
            "--embedded-target",
            tmp.resolve("target.img").toString(),
            "--size",
            "1g",
            "--namenode",
            address,
            "-D",
            "ember.datanode.heartbeat-interval=200ms");
    EmberConfig config =
        EmberConfig.defaults()
            .with(EmberKeys.NAMENODE_ADDRESS, address)
            .with(EmberKeys.RPC_TIMEOUT, "30s");
    Map<String, Long> acknowledged = new ConcurrentHashMap<>();
    Random random = new Random();
    AtomicInteger next = new AtomicInteger();
    try (EmberClient c = EmberClient.connect(config)) {
      awaitDatanodes(c);
      for (int round = 0; round < KILLS; round++) {
        int until = FILES * (round + 1) / KILLS;
        // The kill comes after a random number of this round's files are acknowledged.
        int killAfter = acknowledged.size() + 20 + random.nextInt(FILES / KILLS - 40);
        ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
        List<Future<?>> running = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
          running.add(
              writers.submit(
                  () -> {
                    for (int i; (i = next.getAndIncrement()) < until; ) {
                      String path = "/crash/f" + i;
                      byte[] bytes = content(i);
                      StorageClass sc = i % 2 == 0 ? StorageClass.DRAM : StorageClass.NVMF;
                      try (EmberOutputStream out =
                          c.create(
                              path,
                              CreateOptions.DEFAULT.withStorageClass(sc).withCreateParents(true))) {
                        out.write(bytes);
                      } catch (IOException e) {
                        return null; // the name node went away: this writer stops
                      }
                      acknowledged.put(path, crc(bytes));
                    }
                    return null;
                  }));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
        while (acknowledged.size() < killAfter && running.stream().anyMatch(f -> !f.isDone())) {
          assertTrue(System.nanoTime() - deadline < 0, "writers stalled");
          Thread.sleep(5);
        }
        nn.destroyForcibly();
        assertTrue(nn.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS));
        writers.shutdown();
        assertTrue(writers.awaitTermination(PATIENCE_SECONDS, TimeUnit.SECONDS));
        next.set(until);
        nn = namenode(tmp, dir, port, round + 1);
        System.out.printf(
            "kill %d: %d files acknowledged; restart: %s%n",
            round + 1,
            acknowledged.size(),
            awaitLine(
                tmp.resolve("namenode-" + (round + 1) + ".log"),
                Pattern.compile("name node: (loaded checkpoint .*)"),
                nn));
        awaitDatanodes(c);
        for (Map.Entry<String, Long> f : acknowledged.entrySet()) {
          assertEquals(
              (long) f.getValue(),
              crc(read(c, f.getKey())),
              f.getKey() + " after kill " + (round + 1));
        }
      }
      assertTrue(acknowledged.size() >= KILLS * 20, "acknowledged " + acknowledged.size());
      // Blocks handed out after the restarts are free ones: fill every class (fresh blocks first,
      // then the ones files freed), then read everything.
      int filled = 0;
      for (StorageClass sc : new StorageClass[] {StorageClass.NVMF, StorageClass.DRAM}) {
        for (int i = 0; ; i++) {
          String path = "/fill/" + sc.displayName() + i;
          try (EmberOutputStream out =
              c.create(path, CreateOptions.DEFAULT.withStorageClass(sc).withCreateParents(true))) {
            out.write(new byte[1 << 20]);
            filled++;
          } catch (EmberException e) {
            if (e.code() != ErrorCode.NO_CAPACITY || i == 0) {
              throw e;
            }
            break;
          }
        }
      }
      assertTrue(filled > 0);
      for (Map.Entry<String, Long> f : acknowledged.entrySet()) {
        assertArrayEquals(
            new long[] {f.getValue()}, new long[] {crc(read(c, f.getKey()))}, f.getKey());
      }
    } finally {
      dram.destroyForcibly();
      nvmf.destroyForcibly();
    }
  }

  /** A name node on {@code dir}, any port, whose leases expire after 10 s (renewed every 2.5 s). */
  private Process shortLeaseNamenode(Path log, Path dir) throws IOException {
    return namenodeProcess(log, dir, "0", "ember.namenode.lease-timeout=10s");
  }

  /** {@code ember namenode} on {@code dir} and loopback {@code port}, with these settings. */
  private Process namenodeProcess(Path log, Path dir, String port, String... settings)
      throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of("namenode", "--dir", dir.toString(), "--host", "127.0.0.1", "--port", port));
    for (String setting : settings) {
      args.add("-D");
      args.add(setting);
    }
    return ember(log, args.toArray(new String[0]));
  }

  @Test
  void aWriterKilledMidPutHasItsFileClosedAtWhatItsDataNodesAcknowledged(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("nn");
    Path nnLog = tmp.resolve("namenode.log");
    Process nn = shortLeaseNamenode(nnLog, dir);
    // An unformatted directory is refused with what to do.
    awaitLine(nnLog, Pattern.compile("(run 'ember namenode --format' first)"), nn);
    assertTrue(nn.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS));
    assertEquals(1, nn.exitValue());
    Process format =
        ember(tmp.resolve("format.log"), "namenode", "--dir", dir.toString(), "--format");
    assertEquals(0, format.waitFor(), Files.readString(tmp.resolve("format.log")));
    Process again =
        ember(tmp.resolve("format2.log"), "namenode", "--dir", dir.toString(), "--format");
    assertEquals(1, again.waitFor());
    assertTrue(
        Files.readString(tmp.resolve("format2.log")).contains("add --force to wipe it"),
        Files.readString(tmp.resolve("format2.log")));
    Path nnLog2 = tmp.resolve("namenode-2.log");
    nn = shortLeaseNamenode(nnLog2, dir);
    String address =
        awaitLine(nnLog2, Pattern.compile("name node listening on (127\\.0\\.0\\.1:\\d+)"), nn);
    ember(
        tmp.resolve("dram.log"),
        "datanode",
        "dram",
        "--capacity",
        "256m",
        "--namenode",
        address,
        "--host",
        "127.0.0.1");
    ember(
        tmp.resolve("nvmf.log"),
        "datanode",
        "nvmf",
        "--embedded-target",
        tmp.resolve("target.img").toString(),
        "--size",
        "256m",
        "--namenode",
        address);
    try (EmberClient c =
        EmberClient.connect(EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, address))) {
      awaitDatanodes(c);
      List<ClassUsage> before = c.df();
      byte[] fed = new byte[8 << 20];
      new Random(11).nextBytes(fed);
      List<Process> writers = new ArrayList<>();
      for (String sc : new String[] {"dram", "nvmf"}) {
        Process put =
            ember(
                tmp.resolve("put-" + sc + ".log"),
                "fs",
                "--namenode",
                address,
                "put",
                "--storage-class",
                sc,
                "-",
                "/w-" + sc);
        put.getOutputStream().write(fed);
        put.getOutputStream().flush(); // and stdin stays open: the put is mid-file
        writers.add(put);
      }
      for (String sc : new String[] {"dram", "nvmf"}) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
        while (true) {
          io.ember.protocol.NodeStatus st = null;
          try {
            st = c.lookup("/w-" + sc);
          } catch (EmberException e) {
            assertEquals(ErrorCode.NOT_FOUND, e.code());
          }
          if (st != null && st.acknowledgedLength() >= 4 << 20) {
            assertTrue(st.open());
            assertTrue(st.leaseHolder().startsWith("ember-client@"), st.leaseHolder());
            break;
          }
          assertTrue(
              System.nanoTime() - deadline < 0, "the put of " + sc + " did not get going: " + st);
          Thread.sleep(20);
        }
      }
      for (Process put : writers) {
        put.destroyForcibly();
        assertTrue(put.waitFor(PATIENCE_SECONDS, TimeUnit.SECONDS));
      }
      for (String sc : new String[] {"dram", "nvmf"}) {
        String path = "/w-" + sc;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
        while (c.lookup(path).open()) {
          assertTrue(System.nanoTime() - deadline < 0, path + "'s lease was not recovered");
          Thread.sleep(20);
        }
        long length = c.lookup(path).length();
        assertTrue(length >= 4 << 20 && length <= fed.length, path + ": " + length);
        assertArrayEquals(java.util.Arrays.copyOf(fed, (int) length), read(c, path), path);
        c.delete(path, false);
      }
      awaitLine(nnLog2, Pattern.compile("(lease of ember-client@.* expired)"), nn);
      // Nothing leaks: every block is free again once the files are deleted (NVMf ones after
      // their deallocation).
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
      while (true) {
        List<ClassUsage> now = c.df();
        boolean same = true;
        for (ClassUsage b : before) {
          same &=
              now.stream()
                  .anyMatch(
                      u ->
                          u.storageClass().equals(b.storageClass())
                              && u.freeBlocks() == b.freeBlocks());
        }
        if (same) {
          break;
        }
        assertTrue(System.nanoTime() - deadline < 0, "blocks leaked: " + before + " -> " + now);
        Thread.sleep(50);
      }
    }
  }
}
