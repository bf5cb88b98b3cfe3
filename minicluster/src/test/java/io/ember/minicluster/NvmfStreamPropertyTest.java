package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.protocol.StorageClass;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Files on the NVMf tier written through buffered and direct streams with random write lengths and
 * random flushes (which leave later writes unaligned), checked against an in-memory model and read
 * back in random pieces, sequentially and positionally.
 */
class NvmfStreamPropertyTest {
  private static MiniCluster cluster;
  private static EmberClient client;

  @BeforeAll
  static void start() throws Exception {
    cluster =
        MiniCluster.builder()
            .dramDatanodes(0)
            .blockSize("64k")
            .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "32m")
            .nvmfDatanode("")
            .build();
    client =
        cluster.newClient(
            io.ember.protocol.EmberConfig.defaults()
                .with(io.ember.client.ClientKeys.BUFFER_SIZE, "16k")
                .with(io.ember.client.ClientKeys.TRANSFER_SIZE, "32k"));
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  @Test
  void randomStreamsMatchTheModel() throws Exception {
    Random r = new Random(42);
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    long rmwBefore = client.metrics().readModifyWriteSectors();
    for (int f = 0; f < 12; f++) {
      boolean buffered = f % 2 == 0;
      String path = "/prop-" + f;
      ByteArrayOutputStream model = new ByteArrayOutputStream();
      int target = 50_000 + r.nextInt(400_000);
      try (EmberOutputStream out =
          buffered ? client.createBuffered(path, nvmf) : client.create(path, nvmf)) {
        while (model.size() < target) {
          int len =
              switch (r.nextInt(4)) {
                case 0 -> 1 + r.nextInt(16);
                case 1 -> 1 + r.nextInt(5000);
                case 2 -> 4096 * (1 + r.nextInt(4));
                default -> 1 + r.nextInt(100_000);
              };
          byte[] piece = new byte[len];
          r.nextBytes(piece);
          if (len == 1 && r.nextBoolean()) {
            out.write(piece[0]);
          } else {
            out.write(piece);
          }
          model.write(piece);
          if (r.nextInt(10) == 0) {
            out.flush();
          }
        }
      }
      byte[] expected = model.toByteArray();
      assertEquals(expected.length, client.lookup(path).length(), path);
      try (EmberInputStream in = client.open(path)) {
        assertArrayEquals(expected, in.readAllBytes(), path);
        for (int i = 0; i < 60; i++) {
          int from = r.nextInt(expected.length);
          int len = 1 + r.nextInt(Math.min(90_000, expected.length - from));
          byte[] got = new byte[len];
          if (r.nextBoolean()) {
            in.readFully(from, got, 0, len);
          } else {
            in.seek(from);
            assertEquals(len, in.readNBytes(got, 0, len));
          }
          assertArrayEquals(
              Arrays.copyOfRange(expected, from, from + len), got, path + " @" + from + "+" + len);
        }
      }
      client.delete(path, false);
    }
    // Unaligned pieces took the read-modify-write path, and it was counted.
    assertEquals(true, client.metrics().readModifyWriteSectors() > rmwBefore);
  }
}
