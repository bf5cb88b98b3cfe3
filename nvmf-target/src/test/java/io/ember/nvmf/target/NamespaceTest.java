package io.ember.nvmf.target;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.nvmf.LeakCheck;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Namespace back ends at their edges: chunk boundaries, partial and whole-chunk deallocation, zero
 * reads.
 */
@ExtendWith(LeakCheck.class)
class NamespaceTest {
  @TempDir Path dir;

  private Namespace make(String kind) throws Exception {
    switch (kind) {
      case "memory":
        return new MemoryNamespace(4L << 20, 512);
      case "file":
        return new FileNamespace(dir.resolve("ns.img"), 4L << 20, 512, false);
      default:
        return new FileNamespace(dir.resolve("nsd.img"), 4L << 20, 4096, true);
    }
  }

  private static byte[] read(Namespace ns, long off, int len) throws Exception {
    ByteBuf b = ns.read(PooledByteBufAllocator.DEFAULT, off, len);
    try {
      assertEquals(len, b.readableBytes());
      return ByteBufUtil.getBytes(b);
    } finally {
      b.release();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"memory", "file", "direct"})
  void writesAcrossChunkBoundariesAndDeallocates(String kind) throws Exception {
    try (Namespace ns = make(kind)) {
      int bs = ns.blockSize();
      assertArrayEquals(new byte[8192], read(ns, 0, 8192), "a fresh namespace reads zeroes");
      byte[] data = new byte[3 << 20];
      new Random(3).nextBytes(data);
      long off = (1 << 20) - 64L * bs; // straddles the 1 MiB chunks
      ns.write(off, Unpooled.wrappedBuffer(data));
      assertArrayEquals(data, read(ns, off, data.length));
      // Deallocate a whole chunk and two partial ones; the rest keeps its data.
      long dOff = off + 16L * bs;
      long dLen = (2L << 20);
      ns.deallocate(dOff, dLen);
      byte[] back = read(ns, off, data.length);
      for (int i = 0; i < data.length; i++) {
        boolean gone = i >= 16L * bs && i < 16L * bs + dLen;
        assertEquals(gone ? 0 : data[i], back[i], "byte " + i);
      }
      ns.writeZeroes(off, bs);
      assertArrayEquals(new byte[bs], read(ns, off, bs));
      ns.flush();
    }
  }

  @org.junit.jupiter.api.Test
  void aMemoryNamespaceNeverHoldsMoreMemoryThanItsSize() throws Exception {
    try (MemoryNamespace ns = new MemoryNamespace(4L << 20, 4096)) {
      byte[] data = new byte[4 << 20];
      Random random = new Random(5);
      // A data node's life: files written over the whole namespace, deleted, their blocks
      // deallocated, written again.
      for (int round = 0; round < 10; round++) {
        random.nextBytes(data);
        ns.write(0, Unpooled.wrappedBuffer(data));
        assertArrayEquals(data, read(ns, 0, data.length));
        ns.deallocate(0, data.length);
        assertArrayEquals(new byte[data.length], read(ns, 0, data.length));
      }
      assertEquals(4, ns.chunksAllocated());
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 100, 513, 65537 * 2})
  void badSizesAreRejected(int blockSize) {
    assertThrows(IllegalArgumentException.class, () -> new MemoryNamespace(1 << 20, blockSize));
  }

  @ParameterizedTest
  @ValueSource(longs = {0, -4096, 1000})
  void badCapacitiesAreRejected(long size) {
    assertThrows(IllegalArgumentException.class, () -> new MemoryNamespace(size, 512));
  }

  @ParameterizedTest
  @ValueSource(strings = {"file"})
  void fileIsSizedAndReopenedWithItsData(String kind) throws Exception {
    Path p = dir.resolve("persist.img");
    byte[] data = new byte[4096];
    new Random(5).nextBytes(data);
    try (Namespace ns = new FileNamespace(p, 1 << 20, 512, false)) {
      ns.write(8192, Unpooled.wrappedBuffer(data));
      ns.flush();
    }
    assertEquals(1 << 20, Files.size(p));
    try (Namespace ns = new FileNamespace(p, 1 << 20, 512, false)) {
      assertArrayEquals(data, read(ns, 8192, 4096));
    }
  }
}
