package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Many clients at once, checked byte for byte with checksums; bound to each tier by a subclass
 * ({@link DramConcurrencyTest}, {@link NvmfEmbeddedConcurrencyTest}, {@link
 * NvmfKernelConcurrencyTest}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ConcurrencyTest {
  private MiniCluster cluster;

  /** The tier this binding runs on. */
  abstract TestTier tier();

  @BeforeAll
  void start() throws Exception {
    cluster = tier().cluster(3, "64m").blockSize("128k").build();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static long crc(byte[] b) {
    CRC32C c = new CRC32C();
    c.update(b);
    return c.getValue();
  }

  @Test
  void manyClientsWriteAndReadDifferentFilesAtOnce() throws Exception {
    int clients = 8;
    int filesEach = 4;
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    try {
      List<EmberClient> cs = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        cs.add(cluster.newClient());
      }
      cs.get(0).createDirectory("/conc", false);
      List<Future<long[]>> writes = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        int id = i;
        writes.add(
            pool.submit(
                () -> {
                  long[] sums = new long[filesEach];
                  Random r = new Random(id);
                  for (int f = 0; f < filesEach; f++) {
                    byte[] data = new byte[r.nextInt(1_500_000) + 1];
                    r.nextBytes(data);
                    sums[f] = crc(data);
                    try (EmberOutputStream out =
                        (f % 2 == 0)
                            ? cs.get(id).create("/conc/c" + id + "-" + f, tier().options())
                            : cs.get(id)
                                .createBuffered("/conc/c" + id + "-" + f, tier().options())) {
                      int pos = 0;
                      while (pos < data.length) {
                        int n = Math.min(r.nextInt(200_000) + 1, data.length - pos);
                        out.write(data, pos, n);
                        pos += n;
                      }
                    }
                  }
                  return sums;
                }));
      }
      List<long[]> expected = new ArrayList<>();
      for (Future<long[]> w : writes) {
        expected.add(w.get());
      }
      List<Future<?>> reads = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        int id = i;
        // Each client reads another client's files, half sequentially, half positionally.
        int owner = (id + 1) % clients;
        reads.add(
            pool.submit(
                () -> {
                  for (int f = 0; f < filesEach; f++) {
                    String path = "/conc/c" + owner + "-" + f;
                    byte[] got;
                    try (EmberInputStream in = cs.get(id).open(path)) {
                      if (f % 2 == 0) {
                        got = in.readAllBytes();
                      } else {
                        got = new byte[(int) in.length()];
                        in.readFully(0, got, 0, got.length);
                      }
                    }
                    assertEquals(expected.get(owner)[f], crc(got), path);
                  }
                  return null;
                }));
      }
      for (Future<?> r : reads) {
        r.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void manyThreadsSharingOneClientInterleaveSmallWritesOnTheSameConnections() throws Exception {
    // Regression: a frame's header and data went out as two writes, and two threads writing to one
    // data node connection could interleave them, corrupting the stream.
    EmberClient c =
        cluster.newClient(
            io.ember.protocol.EmberConfig.defaults()
                .with(io.ember.client.ClientKeys.TRANSFER_SIZE, "4k")
                .with(io.ember.client.ClientKeys.WRITE_WINDOW, "64k"));
    c.createDirectory("/shared", false);
    int threads = 12;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Long>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        fs.add(
            pool.submit(
                () -> {
                  Random r = new Random(id);
                  CRC32C crc = new CRC32C();
                  try (EmberOutputStream out = c.create("/shared/t" + id, tier().options())) {
                    for (int i = 0; i < 400; i++) {
                      byte[] piece = new byte[1 + r.nextInt(3000)];
                      r.nextBytes(piece);
                      crc.update(piece);
                      out.write(piece);
                    }
                  }
                  return crc.getValue();
                }));
      }
      for (int t = 0; t < threads; t++) {
        long expected = fs.get(t).get();
        try (InputStream in = c.open("/shared/t" + t)) {
          assertEquals(expected, crc(in.readAllBytes()), "/shared/t" + t);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void severalWritersOnOneMultifileReadBackWhole() throws Exception {
    EmberClient c = cluster.newClient();
    c.createMultiFile("/shuffle", tier().options());
    int writers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    byte[][] parts = new byte[writers][];
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int id = w;
        parts[w] = new byte[100_000 + 37_000 * w];
        new Random(1000 + w).nextBytes(parts[w]);
        fs.add(
            pool.submit(
                () -> {
                  try (EmberOutputStream out =
                      c.createBuffered(String.format("/shuffle/part-%02d", id), tier().options())) {
                    for (int i = 0; i < parts[id].length; i += 333) {
                      out.write(parts[id], i, Math.min(333, parts[id].length - i));
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    CRC32C expected = new CRC32C();
    long total = 0;
    for (byte[] p : parts) {
      expected.update(p);
      total += p.length;
    }
    CRC32C got = new CRC32C();
    long n = 0;
    try (InputStream in = c.openMultiFile("/shuffle")) {
      byte[] buf = new byte[7777];
      int k;
      while ((k = in.read(buf)) > 0) {
        got.update(buf, 0, k);
        n += k;
      }
    }
    assertEquals(total, n);
    assertEquals(expected.getValue(), got.getValue());
  }
}
