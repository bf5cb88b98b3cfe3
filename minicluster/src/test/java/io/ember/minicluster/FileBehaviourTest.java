package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.NodeStatus;
import java.io.EOFException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Files written and read back through real sockets, over several blocks and data nodes. Written
 * once, bound to each storage class by a subclass that says how to start its cluster.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class FileBehaviourTest {
  /** Block size of every binding: small, so files span many blocks. */
  static final String BLOCK_SIZE = "64k";

  MiniCluster cluster;
  EmberClient client;

  /** Starts the cluster of this binding, with {@link #BLOCK_SIZE} blocks. */
  abstract MiniCluster startCluster() throws Exception;

  /** Create options that put files on the storage class under test. */
  abstract CreateOptions options();

  @BeforeAll
  void start() throws Exception {
    cluster = startCluster();
    client = cluster.newClient();
    client.createDirectory("/rw", true);
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  static byte[] random(long seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void writesAndReadsBackAcrossBlocksWithOddSizes() throws Exception {
    int[] sizes = {0, 1, 4095, 65535, 65536, 65537, 200_000, 1_000_003};
    for (int size : sizes) {
      byte[] data = random(size, size);
      String path = "/rw/odd-" + size;
      try (EmberOutputStream out = client.create(path, options().withCreateParents(true))) {
        // Writes of varied lengths, so pieces straddle block boundaries.
        int pos = 0;
        int step = 1;
        while (pos < size) {
          int n = Math.min(step, size - pos);
          out.write(data, pos, n);
          pos += n;
          step = step * 3 + 7;
        }
      }
      NodeStatus st = client.lookup(path);
      assertEquals(size, st.length(), path);
      for (io.ember.protocol.BlockLocation b : client.blockLocations(path)) {
        assertEquals(options().storageClass(), b.storageClass(), path + " block " + b.index());
      }
      assertEquals((size + 65535) / 65536, st.blockCount(), path);
      try (EmberInputStream in = client.open(path)) {
        assertArrayEquals(data, in.readAllBytes(), path);
        assertEquals(-1, in.read());
      }
    }
  }

  @Test
  void readsOfWholeBlocksAndOfPiecesMixedReturnTheRightBytes() throws Exception {
    byte[] data = random(11, 10 * 65536 + 777);
    String path = "/rw/mixed-reads";
    try (EmberOutputStream out = client.create(path, options().withCreateParents(true))) {
      out.write(data);
    }
    // Lengths that start mid-block, end on a boundary, cover whole blocks in one call (the
    // stream hands those to the network thread to copy), and run past the end.
    int[] lengths = {100, 65436, 2 * 65536, 65536, 3000, 62536, 65537, 1 << 20};
    byte[] got = new byte[data.length];
    try (EmberInputStream in = client.open(path)) {
      int at = 0;
      for (int len : lengths) {
        int n = in.readNBytes(got, at, Math.min(len, got.length - at));
        at += n;
      }
      assertEquals(data.length, at);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, got);
  }

  @Test
  void bufferedStreamTakesSingleBytesAndSmallWrites() throws Exception {
    byte[] data = random(7, 300_000);
    try (EmberOutputStream out = client.createBuffered("/rw/buffered", options())) {
      int i = 0;
      while (i < data.length) {
        if (i % 2 == 0) {
          out.write(data[i++]);
        } else {
          int n = Math.min(13, data.length - i);
          out.write(data, i, n);
          i += n;
        }
      }
    }
    try (InputStream in = client.open("/rw/buffered")) {
      assertArrayEquals(data, in.readAllBytes());
    }
  }

  @Test
  void seekAndPositionalReadsReturnTheRightBytes() throws Exception {
    byte[] data = random(11, 500_000);
    try (EmberOutputStream out = client.create("/rw/seek", options())) {
      out.write(data);
    }
    Random r = new Random(5);
    try (EmberInputStream in = client.open("/rw/seek")) {
      for (int i = 0; i < 200; i++) {
        int pos = r.nextInt(data.length);
        int len = r.nextInt(Math.min(150_000, data.length - pos) + 1);
        byte[] got = new byte[len];
        if (i % 2 == 0) {
          in.seek(pos);
          int n = in.readNBytes(got, 0, len);
          assertEquals(len, n);
          assertEquals(pos + len, in.position());
        } else {
          in.readFully(pos, got, 0, len);
        }
        assertArrayEquals(Arrays.copyOfRange(data, pos, pos + len), got, "at " + pos);
      }
      assertThrows(EOFException.class, () -> in.seek(data.length + 1));
      assertThrows(EOFException.class, () -> in.readFully(data.length - 10, new byte[11], 0, 11));
      assertEquals(-1, in.read(data.length, new byte[4], 0, 4));
    }
  }

  @Test
  void asyncReadsIntoCallerBuffersManyInFlight() throws Exception {
    byte[] data = random(13, 600_000);
    try (EmberOutputStream out = client.create("/rw/async", options())) {
      out.write(data);
    }
    Random r = new Random(17);
    try (EmberInputStream in = client.open("/rw/async")) {
      java.util.List<java.util.concurrent.CompletableFuture<Integer>> reads =
          new java.util.ArrayList<>();
      java.util.List<java.nio.ByteBuffer> bufs = new java.util.ArrayList<>();
      java.util.List<Integer> positions = new java.util.ArrayList<>();
      for (int i = 0; i < 64; i++) {
        // Half sector-aligned (the NVMf tier reads those straight into direct buffers).
        int pos = i % 2 == 0 ? 4096 * r.nextInt(100) : r.nextInt(data.length);
        int len = i % 2 == 0 ? 4096 * (1 + r.nextInt(30)) : 1 + r.nextInt(150_000);
        java.nio.ByteBuffer buf =
            i % 3 == 0
                ? java.nio.ByteBuffer.allocate(len + 10)
                : java.nio.ByteBuffer.allocateDirect(len + 10);
        buf.position(5).limit(5 + len);
        bufs.add(buf);
        positions.add(pos);
        reads.add(in.readAsync(pos, buf));
      }
      for (int i = 0; i < reads.size(); i++) {
        int pos = positions.get(i);
        java.nio.ByteBuffer buf = bufs.get(i);
        int n = reads.get(i).join();
        int expectedLen = Math.min(buf.limit() - 5, data.length - pos);
        assertEquals(expectedLen, n, "read " + i);
        assertEquals(5 + n, buf.position(), "position advanced by the bytes read");
        byte[] got = new byte[n];
        buf.duplicate().position(5).get(got);
        assertArrayEquals(Arrays.copyOfRange(data, pos, pos + n), got, "read " + i + " at " + pos);
      }
      assertEquals(-1, in.readAsync(data.length, java.nio.ByteBuffer.allocate(4)).join());
    }
  }

  @Test
  void readerNeverSeesBytesBeforeClosePublishesTheLength() throws Exception {
    byte[] data = random(3, 150_000);
    EmberOutputStream out = client.create("/rw/unpublished", options());
    out.write(data);
    out.flush();
    NodeStatus during = client.lookup("/rw/unpublished");
    assertTrue(during.open());
    assertEquals(0, during.length());
    try (InputStream in = client.open("/rw/unpublished")) {
      assertEquals(-1, in.read());
    }
    out.close();
    try (InputStream in = client.open("/rw/unpublished")) {
      assertArrayEquals(data, in.readAllBytes());
    }
  }

  @Test
  void blockLocationsAreCachedAcrossOpens() throws Exception {
    byte[] data = random(21, 5 * 65536);
    try (EmberOutputStream out = client.create("/rw/cached", options())) {
      out.write(data);
    }
    try (InputStream in = client.open("/rw/cached")) {
      assertArrayEquals(data, in.readAllBytes());
    }
    long misses = client.metrics().blockCacheMisses();
    long calls = client.metrics().metadataCalls();
    try (InputStream in = client.open("/rw/cached")) {
      assertArrayEquals(data, in.readAllBytes());
    }
    assertEquals(misses, client.metrics().blockCacheMisses());
    assertEquals(calls + 1, client.metrics().metadataCalls()); // the open only
  }

  @Test
  void aFirstReadNeedsOneCallToTheNameNode() throws Exception {
    byte[] data = random(22, 3 * 65536 + 5);
    try (EmberOutputStream out = client.create("/rw/one-call", options())) {
      out.write(data);
    }
    try (EmberClient fresh = cluster.newClient()) {
      long connecting = fresh.metrics().metadataCalls();
      try (InputStream in = fresh.open("/rw/one-call")) {
        assertArrayEquals(data, in.readAllBytes());
      }
      // The open, which brings the locations.
      assertEquals(connecting + 1, fresh.metrics().metadataCalls());
      assertEquals(0, fresh.metrics().blockCacheMisses());
      assertEquals(4, fresh.metrics().blockCacheHits());
    }
  }

  @Test
  void closedStreamRefusesWritesAndClosedFileTakesNoMoreBlocks() throws Exception {
    EmberOutputStream out = client.create("/rw/closed", options());
    out.write(new byte[10]);
    out.close();
    out.close(); // idempotent
    EmberException e = assertThrows(EmberException.class, () -> out.write(1));
    assertEquals(ErrorCode.FILE_CLOSED, e.code());
  }

  @Test
  void multifileTakesConcurrentWritersAndReadsBackWhole() throws Exception {
    client.createMultiFile("/rw/multi", options().withCreateParents(true));
    int writers = 6;
    byte[][] parts = new byte[writers][];
    Thread[] threads = new Thread[writers];
    Throwable[] errors = new Throwable[writers];
    for (int w = 0; w < writers; w++) {
      int id = w;
      parts[w] = random(100 + w, 70_000 + w * 9_999);
      threads[w] =
          new Thread(
              () -> {
                try (EmberOutputStream out =
                    client.createBuffered("/rw/multi/part-" + id, options())) {
                  for (int i = 0; i < parts[id].length; i += 1000) {
                    out.write(parts[id], i, Math.min(1000, parts[id].length - i));
                  }
                } catch (Throwable t) {
                  errors[id] = t;
                }
              });
      threads[w].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    for (Throwable t : errors) {
      if (t != null) {
        throw new AssertionError(t);
      }
    }
    java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
    for (byte[] p : parts) {
      expected.write(p);
    }
    try (InputStream in = client.openMultiFile("/rw/multi")) {
      assertArrayEquals(expected.toByteArray(), in.readAllBytes());
    }
    assertEquals(expected.size(), client.lookup("/rw/multi").length());
    EmberException e = assertThrows(EmberException.class, () -> client.open("/rw/multi"));
    assertEquals(ErrorCode.NOT_A_FILE, e.code());
  }
}
