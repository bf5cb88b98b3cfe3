package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static io.ember.minicluster.TestFiles.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client that kept the block locations of a deleted file never reaches the bytes of the file that
 * reused its blocks: DRAM data nodes check each block's generation, and NVMf locations are checked
 * with the name node again before they are trusted for long.
 */
class StaleLocationTest {
  private static final int BLOCK = 64 * 1024;
  private static final Duration DEADLINE = Duration.ofMinutes(2);

  private MiniCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static void write(EmberClient c, String path, byte[] bytes, CreateOptions options)
      throws IOException {
    try (EmberOutputStream out = c.create(path, options)) {
      out.write(bytes);
    }
  }

  /** Deletes {@code /x} and writes {@code /y} onto its block; returns {@code /y}'s bytes. */
  private static byte[] reuseTheBlock(
      EmberClient writer, BlockLocation xBlock, CreateOptions options) throws Exception {
    writer.delete("/x", false);
    byte[] y = data(BLOCK, 2);
    long deadline = System.nanoTime() + DEADLINE.toNanos();
    while (true) {
      // Freed NVMf blocks come back only after the data node deallocated them and a delay.
      try {
        write(writer, "/y", y, options);
        break;
      } catch (EmberException e) {
        if (e.code() != ErrorCode.NO_CAPACITY || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(50);
      }
    }
    BlockLocation yBlock = writer.blockLocations("/y").get(0);
    assertEquals(xBlock.datanodeId(), yBlock.datanodeId());
    assertEquals(xBlock.address(), yBlock.address(), "/y reuses /x's block");
    assertTrue(yBlock.generation() > xBlock.generation());
    return y;
  }

  private static void assertReadsNoneOf(byte[] y, EmberInputStream stale) {
    byte[] got = new byte[1000];
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> stale.readFully(0, got, 0, got.length),
            () ->
                "read "
                    + (Arrays.equals(got, Arrays.copyOf(y, got.length))
                        ? "the bytes of the file that reused the block"
                        : "something"));
    assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("block 0 of /x"), e.getMessage());
  }

  @Test
  void aDramReaderOfADeletedFileGetsAnErrorNotTheBytesOfTheFileThatReusedItsBlock()
      throws Exception {
    // Two blocks: /x takes one, /filler the other, so /y must reuse /x's.
    cluster = MiniCluster.builder().blockSize("64k").dramCapacity("128k").build();
    try (EmberClient writer = cluster.newClient();
        EmberClient reader = cluster.newClient()) {
      write(writer, "/x", data(BLOCK, 1), CreateOptions.DEFAULT);
      write(writer, "/filler", data(10, 3), CreateOptions.DEFAULT);
      try (EmberInputStream stale = reader.open("/x")) {
        BlockLocation xBlock = reader.blockLocations("/x").get(0);
        byte[] y = reuseTheBlock(writer, xBlock, CreateOptions.DEFAULT);
        assertReadsNoneOf(y, stale);
        assertArrayEquals(y, readAll(reader, "/y"));
      }
    }
  }

  @Test
  void aDramWriterOfADeletedFileCannotWriteIntoTheFileThatReusedItsBlock() throws Exception {
    cluster = MiniCluster.builder().blockSize("64k").dramCapacity("128k").build();
    try (EmberClient writer = cluster.newClient();
        EmberClient other = cluster.newClient()) {
      EmberOutputStream late = writer.create("/x", CreateOptions.DEFAULT);
      late.write(data(1000, 1));
      late.flush();
      BlockLocation xBlock = other.blockLocations("/x").get(0);
      write(other, "/filler", data(10, 3), CreateOptions.DEFAULT);
      byte[] y = reuseTheBlock(other, xBlock, CreateOptions.DEFAULT);
      EmberException e =
          assertThrows(
              EmberException.class,
              () -> {
                late.write(data(5000, 4));
                late.close();
              });
      assertArrayEquals(y, readAll(other, "/y"), "the reused block holds /y's bytes only");
      assertEquals(ErrorCode.STALE_LOCATION, e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("generation"), e.getMessage());
    }
  }

  /** One NVMf data node with three blocks of 256 KiB (the target's last LBA holds its stamp). */
  private void startNvmfCluster() throws EmberException {
    cluster =
        MiniCluster.builder()
            .dramDatanodes(0)
            .blockSize("256k")
            .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "1m")
            .nvmfDatanode("")
            .build();
  }

  @Test
  void anNvmfReaderOfADeletedFileGetsAnErrorNotTheBytesOfTheFileThatReusedItsBlock()
      throws Exception {
    startNvmfCluster();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberClient writer = cluster.newClient();
        EmberClient reader = cluster.newClient()) {
      write(writer, "/x", data(BLOCK, 1), nvmf);
      write(writer, "/filler1", data(10, 3), nvmf);
      write(writer, "/filler2", data(10, 3), nvmf);
      try (EmberInputStream stale = reader.open("/x")) {
        BlockLocation xBlock = reader.blockLocations("/x").get(0);
        assertFalse(xBlock.lost());
        byte[] y = reuseTheBlock(writer, xBlock, nvmf);
        assertReadsNoneOf(y, stale);
        assertArrayEquals(y, readAll(reader, "/y"));
      }
    }
  }

  @Test
  void anNvmfWriterOfADeletedFileCannotWriteIntoTheFileThatReusedItsBlock() throws Exception {
    startNvmfCluster();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberClient writer = cluster.newClient();
        EmberClient other = cluster.newClient()) {
      EmberOutputStream late = writer.create("/x", nvmf);
      late.write(data(4096, 1));
      late.flush();
      BlockLocation xBlock = other.blockLocations("/x").get(0);
      write(other, "/filler1", data(10, 3), nvmf);
      write(other, "/filler2", data(10, 3), nvmf);
      byte[] y = reuseTheBlock(other, xBlock, nvmf);
      EmberException e =
          assertThrows(
              EmberException.class,
              () -> {
                late.write(data(8192, 4));
                late.close();
              });
      assertArrayEquals(y, readAll(other, "/y"), "the reused block holds /y's bytes only");
      assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
    }
  }
}
