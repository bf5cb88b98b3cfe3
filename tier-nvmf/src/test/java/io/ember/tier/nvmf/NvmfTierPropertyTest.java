package io.ember.tier.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientMetrics;
import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.TierContext;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.StorageClass;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Byte-granular access over a block device: random writes of any offset, length and alignment, many
 * in flight at once (neighbours often sharing a sector), checked against an in-memory model and
 * read back in random pieces. Runs against the embedded target with 512-byte LBAs.
 */
class NvmfTierPropertyTest {
  private static final int SIZE = 4 << 20;
  private static final int BLOCK_ADDRESS = 1 << 20; // a block that does not start at LBA 0

  private NvmfTarget target;
  private StorageEndpoint endpoint;
  private ClientMetrics metrics;
  private BlockLocation block;

  @BeforeEach
  void start() throws Exception {
    target =
        NvmfTarget.builder()
            .listen("127.0.0.1", 0)
            .subsystem(
                new Subsystem("nqn.2026-11.io.ember:prop")
                    .namespace(1, new MemoryNamespace(SIZE + BLOCK_ADDRESS, 512)))
            .build()
            .start();
    metrics = new ClientMetrics();
    endpoint = new NvmfTier().open(new TierContext(EmberConfig.defaults(), null, metrics));
    block =
        new BlockLocation(
            0,
            1,
            1,
            1,
            0,
            StorageClass.NVMF,
            "nvmf",
            target.uri("nqn.2026-11.io.ember:prop") + "/1",
            BLOCK_ADDRESS,
            SIZE,
            false);
  }

  @AfterEach
  void stop() {
    endpoint.close();
    target.close();
  }

  @Test
  void randomConcurrentWritesMatchTheModel() throws Exception {
    byte[] model = new byte[SIZE];
    Random r = new Random(20261122);
    for (int batch = 0; batch < 40; batch++) {
      // Non-overlapping ranges written at once; neighbours may share a sector.
      TreeSet<Integer> cuts = new TreeSet<>();
      int pieces = 2 + r.nextInt(30);
      int base = r.nextInt(SIZE - 200_000);
      while (cuts.size() < pieces + 1) {
        int c = base + (r.nextBoolean() ? r.nextInt(200_000) : r.nextInt(400) * 512);
        cuts.add(Math.min(c, SIZE));
      }
      Integer[] points = cuts.toArray(new Integer[0]);
      List<CompletableFuture<Void>> writes = new ArrayList<>();
      for (int i = 0; i + 1 < points.length; i++) {
        if (r.nextInt(4) == 0) {
          continue; // leave gaps too
        }
        int from = points[i];
        int len = points[i + 1] - from;
        byte[] data = new byte[len];
        r.nextBytes(data);
        System.arraycopy(data, 0, model, from, len);
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(len);
        buf.writeBytes(data);
        writes.add(endpoint.write(block, from, buf));
      }
      CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])).join();
    }
    assertTrue(metrics.readModifyWriteSectors() > 0, "unaligned writes took no RMW path");
    for (int i = 0; i < 300; i++) {
      int from = r.nextInt(SIZE);
      int len = 1 + r.nextInt(Math.min(70_000, SIZE - from));
      ByteBuf got = endpoint.read(block, from, len).join();
      try {
        byte[] bytes = new byte[got.readableBytes()];
        got.readBytes(bytes);
        assertArrayEquals(
            Arrays.copyOfRange(model, from, from + len), bytes, "read of " + len + " at " + from);
      } finally {
        got.release();
      }
    }
  }

  @Test
  void sequentialUnalignedPiecesInFlightDoNotTearSharedSectors() throws Exception {
    // A stream's pipelined pieces: 100-byte writes back to back, five per sector, all in flight.
    byte[] model = new byte[100 * 2000];
    new Random(3).nextBytes(model);
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(100);
      buf.writeBytes(model, i * 100, 100);
      writes.add(endpoint.write(block, i * 100, buf));
    }
    CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])).join();
    ByteBuf got = endpoint.read(block, 0, model.length).join();
    try {
      byte[] bytes = new byte[model.length];
      got.readBytes(bytes);
      assertArrayEquals(model, bytes);
    } finally {
      got.release();
    }
    // Every sector a write covers only in part is read, patched and written back once.
    long partial = 0;
    for (int i = 0; i < 2000; i++) {
      long from = i * 100L;
      long to = from + 100;
      for (long sector = from / 512; sector <= (to - 1) / 512; sector++) {
        if (from > sector * 512 || to < (sector + 1) * 512) {
          partial++;
        }
      }
    }
    assertEquals(partial, metrics.readModifyWriteSectors(), "RMW sector count");
  }
}
