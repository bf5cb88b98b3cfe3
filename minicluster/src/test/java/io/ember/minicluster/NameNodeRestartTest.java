package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static io.ember.minicluster.TestFiles.readAll;
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
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A name node restarted on its directory keeps the namespace: files on DRAM and on NVMf read back
 * byte for byte, data nodes come back with their contents, and no block is handed out twice.
 */
class NameNodeRestartTest {
  private static final int BLOCK = 64 * 1024;
  private static final Duration DEADLINE = Duration.ofMinutes(2);

  private MiniCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static void write(EmberClient c, String path, byte[] bytes, StorageClass sc)
      throws IOException {
    try (EmberOutputStream out =
        c.create(path, CreateOptions.DEFAULT.withStorageClass(sc).withCreateParents(true))) {
      out.write(bytes);
    }
  }

  private MiniCluster start(String checkpointRecords) throws EmberException {
    return MiniCluster.builder()
        .dramDatanodes(2)
        .nvmfDatanode("")
        .blockSize("64k")
        .dramCapacity("4m")
        .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, "4m")
        .set(NameNodeKeys.CHECKPOINT_RECORDS, checkpointRecords)
        .build();
  }

  private static ClassUsage usage(EmberClient c, StorageClass sc) throws EmberException {
    return c.df().stream().filter(u -> u.storageClass().equals(sc)).findFirst().orElseThrow();
  }

  @Test
  void filesOnEveryTierSurviveARestartFromTheJournal() throws Exception {
    restartKeepsFiles("1000000");
  }

  @Test
  void filesOnEveryTierSurviveARestartFromCheckpoints() throws Exception {
    // A checkpoint every few changes: the restart loads one and replays a short journal after it.
    restartKeepsFiles("7");
  }

  private void restartKeepsFiles(String checkpointRecords) throws Exception {
    cluster = start(checkpointRecords);
    Map<String, byte[]> files = new LinkedHashMap<>();
    Random random = new Random(42);
    try (EmberClient c = cluster.newClient()) {
      for (int i = 0; i < 24; i++) {
        StorageClass sc = i % 2 == 0 ? StorageClass.DRAM : StorageClass.NVMF;
        byte[] bytes = data(random.nextInt(3 * BLOCK), i);
        String path = "/d" + (i % 3) + "/f" + i;
        write(c, path, bytes, sc);
        files.put(path, bytes);
      }
      c.rename("/d0/f0", "/d1/renamed");
      files.put("/d1/renamed", files.remove("/d0/f0"));
      c.delete("/d2/f2", false);
      files.remove("/d2/f2");
      c.delete("/d2/f5", false);
      files.remove("/d2/f5");
    }
    cluster.restartNamenode();
    try (EmberClient c = cluster.newClient()) {
      // Before data nodes register again, their blocks are served on their word.
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        assertArrayEquals(f.getValue(), readAll(c, f.getKey()), f.getKey());
      }
      assertThrows(EmberException.class, () -> c.lookup("/d2/f2"));
      cluster.awaitLiveDatanodes(StorageClass.DRAM, 2, DEADLINE);
      cluster.awaitLiveDatanodes(StorageClass.NVMF, 1, DEADLINE);
      // Fill every free block: none may be one a surviving file holds.
      // NVMf first: DRAM files spill to NVMf once DRAM is full.
      for (StorageClass sc : new StorageClass[] {StorageClass.NVMF, StorageClass.DRAM}) {
        int n = 0;
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
          try {
            write(c, "/fill/" + sc.displayName() + n, data(BLOCK, 1000 + n), sc);
            n++;
          } catch (EmberException e) {
            if (e.code() != ErrorCode.NO_CAPACITY) {
              throw e;
            }
            // NVMf blocks freed at restart come back once deallocated and cooled.
            if (usage(c, sc).freeBlocks() == 0 || System.nanoTime() > deadline) {
              break;
            }
            Thread.sleep(20);
          }
        }
        assertTrue(n > 0, "no block of " + sc + " was free after the restart");
      }
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        assertArrayEquals(f.getValue(), readAll(c, f.getKey()), f.getKey());
      }
    }
  }

  @Test
  void aFileOpenAtTheRestartIsStillBeingWritten() throws Exception {
    cluster = start("1000000");
    try (EmberClient c = cluster.newClient()) {
      EmberOutputStream open = c.create("/open", CreateOptions.DEFAULT);
      open.write(data(BLOCK + 10, 1));
      open.flush();
      cluster.restartNamenode();
      cluster.awaitLiveDatanodes(StorageClass.DRAM, 2, DEADLINE);
      assertTrue(c.lookup("/open").open());
      open.write(data(10, 2));
      open.close();
      assertEquals(BLOCK + 20, c.lookup("/open").length());
      byte[] want = new byte[BLOCK + 20];
      System.arraycopy(data(BLOCK + 10, 1), 0, want, 0, BLOCK + 10);
      System.arraycopy(data(10, 2), 0, want, BLOCK + 10, 10);
      assertArrayEquals(want, readAll(c, "/open"));
    }
  }

  @Test
  void aStreamOpenedBeforeTheRestartReadsOn() throws Exception {
    cluster = start("1000000");
    try (EmberClient c = cluster.newClient()) {
      byte[] bytes = data(3 * BLOCK, 9);
      write(c, "/r", bytes, StorageClass.NVMF);
      write(c, "/d", bytes, StorageClass.DRAM);
      try (EmberInputStream nvmf = c.open("/r");
          EmberInputStream dram = c.open("/d")) {
        byte[] head = new byte[10];
        nvmf.readFully(0, head, 0, head.length);
        dram.readFully(0, head, 0, head.length);
        cluster.restartNamenode();
        cluster.awaitLiveDatanodes(StorageClass.DRAM, 2, DEADLINE);
        cluster.awaitLiveDatanodes(StorageClass.NVMF, 1, DEADLINE);
        byte[] all = new byte[bytes.length];
        nvmf.readFully(0, all, 0, all.length);
        assertArrayEquals(bytes, all);
        dram.readFully(0, all, 0, all.length);
        assertArrayEquals(bytes, all);
      }
    }
  }

  @Test
  void aBlockThatALostAllocationOverwroteReadsAsLostAndNothingElseIsHurt(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path backup) throws Exception {
    // One DRAM node of five blocks, so the second file must reuse the first one's block.
    cluster = MiniCluster.builder().dramDatanodes(1).blockSize("64k").dramCapacity("320k").build();
    try (EmberClient c = cluster.newClient()) {
      write(c, "/x", data(BLOCK, 1), StorageClass.DRAM);
      byte[] keep = data(BLOCK - 5, 9);
      write(c, "/keep", keep, StorageClass.DRAM);
      cluster.restartNamenode(dir -> copyTree(dir, backup));
      cluster.awaitLiveDatanodes(StorageClass.DRAM, 1, DEADLINE);
      c.delete("/x", false);
      byte[] y = data(4 * BLOCK, 2);
      writeOnceRegistered(c, "/y", y);
      // The name node comes back from a journal that lost the delete and the second file, as
      // sync=batch or none can after a power loss, while the data node kept their bytes.
      cluster.restartNamenode(
          dir -> {
            deleteTree(dir);
            copyTree(backup, dir);
          });
      cluster.awaitLiveDatanodes(StorageClass.DRAM, 1, DEADLINE);
      long deadline = System.nanoTime() + DEADLINE.toNanos();
      while (!c.blockLocations("/x").get(0).lost()) {
        assertTrue(System.nanoTime() < deadline, "the block report did not mark /x's block lost");
        Thread.sleep(20);
      }
      EmberException lost = assertThrows(EmberException.class, () -> readAll(c, "/x"));
      assertEquals(ErrorCode.DATANODE_LOST, lost.code(), lost.getMessage());
      assertThrows(EmberException.class, () -> c.lookup("/y"));
      assertArrayEquals(keep, readAll(c, "/keep"));
      // The other three blocks are free, and new blocks are numbered so the node takes them.
      byte[] z = data(3 * BLOCK, 3);
      writeOnceRegistered(c, "/z", z);
      assertArrayEquals(z, readAll(c, "/z"));
      // Deleted, the overwritten block is an ordinary free block again.
      c.delete("/x", false);
      c.delete("/z", false);
      write(c, "/w", y, StorageClass.DRAM);
      assertArrayEquals(y, readAll(c, "/w"));
    }
  }

  /**
   * Writes a DRAM file, waiting for the data node to register again after a restart (until then it
   * serves its blocks but takes no new ones).
   */
  private static void writeOnceRegistered(EmberClient c, String path, byte[] bytes)
      throws Exception {
    long deadline = System.nanoTime() + DEADLINE.toNanos();
    while (true) {
      try {
        write(c, path, bytes, StorageClass.DRAM);
        return;
      } catch (EmberException e) {
        if (e.code() != ErrorCode.NO_CAPACITY || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(20);
      }
    }
  }

  private static void copyTree(java.nio.file.Path from, java.nio.file.Path to) throws IOException {
    try (var files = java.nio.file.Files.walk(from)) {
      for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) files::iterator) {
        java.nio.file.Path target = to.resolve(from.relativize(p).toString());
        if (java.nio.file.Files.isDirectory(p)) {
          java.nio.file.Files.createDirectories(target);
        } else {
          java.nio.file.Files.copy(p, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  private static void deleteTree(java.nio.file.Path dir) throws IOException {
    try (var files = java.nio.file.Files.walk(dir)) {
      for (java.nio.file.Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        if (!p.equals(dir)) {
          java.nio.file.Files.delete(p);
        }
      }
    }
  }
}
