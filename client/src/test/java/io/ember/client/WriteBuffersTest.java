package io.ember.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WriteBuffersTest {
  private static final int MIB = 1 << 20;

  @Test
  void memoryReleasedOnAnotherThreadIsTakenAgainInsteadOfAllocated() throws Exception {
    ExecutorService network = Executors.newSingleThreadExecutor();
    try (WriteBuffers buffers = new WriteBuffers(32L * MIB)) {
      byte[] data = new byte[MIB];
      new Random(1).nextBytes(data);
      List<ByteBuf> window = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        ByteBuf b = buffers.take(MIB);
        assertEquals(0, b.readableBytes(), "a buffer starts empty");
        assertEquals(MIB, b.writableBytes(), "and holds exactly what was asked");
        b.writeBytes(data);
        assertArrayEquals(data, ByteBufUtil.getBytes(b), "write " + i + " reads back");
        window.add(b);
        if (window.size() == 8) {
          ByteBuf oldest = window.remove(0);
          network.submit(() -> oldest.release()).get(30, TimeUnit.SECONDS);
        }
      }
      window.forEach(ByteBuf::release);
      assertTrue(
          buffers.allocatedBytes() <= 9L * MIB,
          "200 writes of 1 MiB, 8 at a time, allocated " + buffers.allocatedBytes() + " bytes");
      assertEquals(buffers.allocatedBytes(), buffers.idleBytes(), "all of it idle at the end");
    } finally {
      network.shutdownNow();
    }
  }

  @Test
  void idleMemoryStaysWithinItsBoundAndCloseFreesIt() {
    WriteBuffers buffers = new WriteBuffers(3L * MIB);
    List<ByteBuf> taken = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      taken.add(buffers.take(MIB));
    }
    taken.forEach(ByteBuf::release);
    assertEquals(3L * MIB, buffers.idleBytes(), "kept up to the bound, the rest freed");
    ByteBuf inUse = buffers.take(MIB);
    assertEquals(2L * MIB, buffers.idleBytes(), "taken again from what was kept");
    buffers.close();
    assertEquals(0, buffers.idleBytes(), "close frees what is idle");
    inUse.release();
    assertEquals(0, buffers.idleBytes(), "a buffer released after close is freed, not kept");
  }

  @Test
  void idleMemoryIsFreedOnlyOnceNoWriteTookABufferForTheIdleTime() {
    try (WriteBuffers buffers = new WriteBuffers(8L * MIB)) {
      long idle = TimeUnit.SECONDS.toNanos(30);
      buffers.take(MIB).release();
      ByteBuf inUse = buffers.take(MIB);
      long before = System.nanoTime();
      buffers.take(2 * MIB).release();
      long after = System.nanoTime();
      assertEquals(2L * MIB, buffers.idleBytes(), "kept after the write");

      assertEquals(
          0, buffers.trimIfIdle(before + idle - 1, idle), "idle a nanosecond short of it: kept");
      assertEquals(2L * MIB, buffers.idleBytes());

      assertEquals(
          2L * MIB, buffers.trimIfIdle(after + idle, idle), "idle for the whole time: freed");
      assertEquals(0, buffers.idleBytes());
      inUse.release();
      assertEquals(MIB, buffers.idleBytes(), "a buffer in use when trimmed is kept when released");

      long allocatedBefore = buffers.allocatedBytes();
      buffers.take(2 * MIB).release();
      assertEquals(
          allocatedBefore + 2L * MIB, buffers.allocatedBytes(), "trimmed memory is allocated anew");
    }
  }

  @Test
  void sizesAreExactAndBuffersDoNotGrow() {
    try (WriteBuffers buffers = new WriteBuffers(32L * MIB)) {
      ByteBuf b = buffers.take(MIB - 4096); // a write that ends at a block boundary
      assertEquals(MIB - 4096, b.capacity());
      b.writeZero(MIB - 4096);
      assertThrows(IndexOutOfBoundsException.class, () -> b.writeByte(1));
      b.release();
      ByteBuf again = buffers.take(MIB); // same size class: the memory above, whole
      assertEquals(MIB, again.capacity());
      again.release();
      assertEquals(MIB, buffers.allocatedBytes(), "one size class, one allocation");

      ByteBuf small = buffers.take(4096); // from Netty's pool, not kept here
      assertEquals(4096, small.capacity());
      small.release();
      assertEquals(MIB, buffers.allocatedBytes());
    }
  }

  /**
   * Writers on several threads take buffers while others release them, and the pool closes half
   * way: no two buffers in use share memory (each writer's pattern survives until its release), and
   * once all are released nothing is kept.
   */
  @Test
  void buffersOnManyThreadsNeverShareMemoryAndCloseKeepsNothing() throws Exception {
    WriteBuffers buffers = new WriteBuffers(4L * MIB);
    ExecutorService writers = Executors.newFixedThreadPool(4);
    ExecutorService network = Executors.newFixedThreadPool(2);
    try {
      List<java.util.concurrent.Future<?>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        int writer = w;
        done.add(
            writers.submit(
                () -> {
                  for (int i = 0; i < 300; i++) {
                    ByteBuf b = buffers.take(128 << 10);
                    long tag = writer * 1_000_000L + i;
                    while (b.isWritable()) {
                      b.writeLong(tag);
                    }
                    for (int at = 0; at < b.writerIndex(); at += 8) {
                      assertEquals(tag, b.getLong(at), "writer " + writer + "'s buffer " + i);
                    }
                    network.execute(b::release);
                    if (writer == 0 && i == 150) {
                      buffers.close();
                    }
                  }
                  return null;
                }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      writers.shutdown();
      network.shutdown();
      assertTrue(network.awaitTermination(60, TimeUnit.SECONDS), "releases finish");
    }
    assertEquals(0, buffers.idleBytes(), "nothing kept once closed and all released");
  }

  @Test
  void keepingNoneTakesEveryBufferFromNettysPool() {
    try (WriteBuffers buffers = new WriteBuffers(0)) {
      ByteBuf b = buffers.take(MIB);
      b.writeZero(MIB);
      b.release();
      assertEquals(0, buffers.allocatedBytes());
      assertEquals(0, buffers.idleBytes());
    }
  }
}
