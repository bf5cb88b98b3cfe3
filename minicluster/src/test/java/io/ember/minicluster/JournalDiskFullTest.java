package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A name node whose journal's disk is full (a 2 MiB tmpfs, filled up) refuses changes with a clear
 * error while reads go on, and takes changes again once space returns; what it acknowledged
 * survives a restart.
 */
class JournalDiskFullTest {
  private static final Duration DEADLINE = Duration.ofMinutes(2);

  @TempDir Path tmp;
  private Path mount;
  private MiniCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
    if (mount != null) {
      run("umount", mount.toString());
    }
  }

  private static int run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    p.getInputStream().transferTo(OutputStream.nullOutputStream());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    return p.exitValue();
  }

  private static void write(EmberClient c, String path, byte[] bytes) throws IOException {
    try (EmberOutputStream out = c.create(path, CreateOptions.DEFAULT)) {
      out.write(bytes);
    }
  }

  private static byte[] read(EmberClient c, String path) throws IOException {
    try (EmberInputStream in = c.open(path)) {
      return in.readAllBytes();
    }
  }

  /** Fills the file system with one file until it is full. */
  private static Path fill(Path dir) throws IOException {
    Path filler = dir.resolve("filler");
    try (OutputStream out = Files.newOutputStream(filler)) {
      byte[] chunk = new byte[4096];
      while (true) {
        out.write(chunk);
        out.flush();
      }
    } catch (IOException full) {
      // No space left: the point.
    }
    return filler;
  }

  @Test
  void aFullJournalDiskRefusesChangesKeepsReadsAndRecovers() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("nn"));
    int mounted = run("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir.toString());
    Assumptions.assumeTrue(
        mounted == 0,
        "mounting a small tmpfs needs root (CAP_SYS_ADMIN); this test fills one to fill the"
            + " journal's disk");
    mount = dir;
    cluster =
        MiniCluster.builder()
            .dramDatanodes(1)
            .blockSize("64k")
            .set(NameNodeKeys.DIR, dir.toString())
            .build();
    try (EmberClient c = cluster.newClient()) {
      byte[] before = data(100_000, 1);
      write(c, "/before", before);
      Path filler = fill(dir);
      // Changes fail with a clear error (the first may meet the failure as it is written).
      EmberException refused = null;
      for (int i = 0; i < 1000 && refused == null; i++) {
        try {
          c.createDirectory("/d" + i, false);
        } catch (EmberException e) {
          refused = e;
        }
      }
      assertTrue(refused != null, "changes were accepted on a full disk");
      assertEquals(ErrorCode.JOURNAL_FAILED, refused.code(), refused.getMessage());
      assertTrue(refused.getMessage().contains("cannot write its journal"), refused.getMessage());
      EmberException again =
          assertThrows(EmberException.class, () -> c.createDirectory("/refused", false));
      assertEquals(ErrorCode.JOURNAL_FAILED, again.code());
      // Reads go on.
      assertArrayEquals(before, read(c, "/before"));
      assertEquals(1, c.list("/").stream().filter(e -> e.name().equals("before")).count());
      // Space comes back: changes are accepted again once the journal is written.
      Files.delete(filler);
      long deadline = System.nanoTime() + DEADLINE.toNanos();
      while (true) {
        try {
          c.createDirectory("/after-space", false);
          break;
        } catch (EmberException e) {
          assertEquals(ErrorCode.JOURNAL_FAILED, e.code(), e.getMessage());
          assertTrue(System.nanoTime() < deadline, "changes still refused: " + e.getMessage());
          Thread.sleep(50);
        }
      }
      byte[] after = data(150_000, 2);
      write(c, "/after", after);
      cluster.restartNamenode();
      cluster.awaitLiveDatanodes(StorageClass.DRAM, 1, DEADLINE);
      assertArrayEquals(before, read(c, "/before"));
      assertArrayEquals(after, read(c, "/after"));
      assertTrue(c.lookup("/after-space").isContainer());
    }
  }
}
