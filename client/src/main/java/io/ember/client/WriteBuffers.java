package io.ember.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import io.netty.util.ResourceLeakTracker;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Direct memory for output streams' data, kept for the next write once a write is done with it.
 *
 * <p>Netty's pooled allocator frees a chunk of its memory as soon as nothing in the chunk is in
 * use. A stream's transfer-sized writes, each released when its data node answers, can empty chunks
 * again and again, and every new chunk is fresh memory that the writing thread zeroes and faults in
 * before it copies a byte: in one {@code bin/ember bench} run, 1.3 million page faults in the
 * writing thread, against 0.35 million (nearly all at start-up) with memory kept here.
 *
 * <p>Buffers of at least {@link #MIN_KEPT} bytes are kept, by power-of-two size, up to a bound of
 * idle memory; smaller ones, and ones larger than the bound, come from Netty's pool. Memory beyond
 * the bound, and all of it once this is closed, is freed when its buffer is released. Idle memory
 * is freed too once no buffer has been taken for a while ({@link #trimIfIdle}, {@link
 * ClientKeys#WRITE_BUFFERS_IDLE}): a long-lived client that has stopped writing does not hold the
 * bound for the rest of its life.
 *
 * <p>Thread-safe: buffers are taken on a writer's thread and come back on whichever thread releases
 * them (a network thread, when the data node answers).
 */
final class WriteBuffers implements AutoCloseable {
  /** Smallest buffer kept here. */
  static final int MIN_KEPT = 64 << 10;

  private static final int MAX_CLASS = 30;

  private final long maxIdleBytes;

  /** Idle memory by size class (the log of its size). */
  private final List<ConcurrentLinkedDeque<CleanableDirectBuffer>> idle =
      new ArrayList<>(MAX_CLASS + 1);

  private final AtomicLong idleBytes = new AtomicLong();
  private final LongAdder allocated = new LongAdder();
  private volatile boolean closed;

  /** When a buffer was last taken ({@link System#nanoTime()}). */
  private volatile long lastTakeNanos = System.nanoTime();

  /**
   * @param maxIdleBytes most memory kept while no write uses it; 0 keeps none (every buffer then
   *     comes from Netty's pool)
   */
  WriteBuffers(long maxIdleBytes) {
    this.maxIdleBytes = maxIdleBytes;
    for (int i = 0; i <= MAX_CLASS; i++) {
      idle.add(new ConcurrentLinkedDeque<>());
    }
  }

  /**
   * An empty direct buffer of exactly {@code size} bytes (its capacity, which cannot grow). The
   * caller owns one reference; releasing the last one gives its memory back.
   */
  ByteBuf take(int size) {
    lastTakeNanos = System.nanoTime();
    int sizeClass = 32 - Integer.numberOfLeadingZeros(size - 1);
    if (size < MIN_KEPT || sizeClass > MAX_CLASS || (1L << sizeClass) > maxIdleBytes) {
      // Memory that could never be kept would be fresh memory every time: the pool does better.
      return PooledByteBufAllocator.DEFAULT.directBuffer(size, size);
    }
    CleanableDirectBuffer memory = idle.get(sizeClass).pollFirst();
    if (memory != null) {
      idleBytes.addAndGet(-memory.buffer().capacity());
    } else {
      memory = PlatformDependent.allocateDirect(1 << sizeClass);
      allocated.add(memory.buffer().capacity());
    }
    return new Kept(memory, sizeClass, size);
  }

  /** Bytes of direct memory allocated here so far (kept memory taken again is not counted). */
  long allocatedBytes() {
    return allocated.sum();
  }

  /** Bytes kept here now while no write uses them. */
  long idleBytes() {
    return idleBytes.get();
  }

  private void giveBack(CleanableDirectBuffer memory, int sizeClass) {
    int n = memory.buffer().capacity();
    long after = idleBytes.addAndGet(n);
    if (!closed && after <= maxIdleBytes) {
      // Last in, first out: the memory most recently written is the likeliest still cached.
      idle.get(sizeClass).offerFirst(memory);
      if (closed && idle.get(sizeClass).remove(memory)) {
        idleBytes.addAndGet(-n);
        memory.clean(); // close() may have emptied the lists first
      }
      return;
    }
    idleBytes.addAndGet(-n);
    memory.clean();
  }

  /**
   * Frees the idle memory when no buffer has been taken for {@code idleNanos} before {@code
   * nowNanos}. Memory in use stays in use, and is kept again when released (up to the bound). A
   * writer that takes a buffer meanwhile stops the trim, which would otherwise free the memory it
   * is about to reuse.
   *
   * @return bytes freed
   */
  long trimIfIdle(long nowNanos, long idleNanos) {
    long last = lastTakeNanos;
    if (nowNanos - last < idleNanos) {
      return 0;
    }
    return freeIdle(true, last);
  }

  /** Frees the idle memory; buffers still in use are freed as they are released. */
  @Override
  public void close() {
    closed = true;
    freeIdle(false, 0);
  }

  /**
   * Frees idle memory until it is all freed or, when {@code untilTaken}, a buffer is taken after
   * {@code lastTake}.
   */
  private long freeIdle(boolean untilTaken, long lastTake) {
    long freed = 0;
    for (ConcurrentLinkedDeque<CleanableDirectBuffer> list : idle) {
      CleanableDirectBuffer memory;
      while ((!untilTaken || lastTake == lastTakeNanos) && (memory = list.pollFirst()) != null) {
        int n = memory.buffer().capacity();
        idleBytes.addAndGet(-n);
        memory.clean();
        freed += n;
      }
    }
    return freed;
  }

  /** Reports buffers that were never released, as Netty's own allocators do. */
  private static final ResourceLeakDetector<Kept> LEAKS =
      ResourceLeakDetectorFactory.instance().newResourceLeakDetector(Kept.class);

  /** A buffer over kept memory, which goes back to the lists when the buffer is released. */
  private final class Kept extends UnpooledDirectByteBuf {
    private final CleanableDirectBuffer memory;
    private final int sizeClass;
    private final ResourceLeakTracker<Kept> leak;

    Kept(CleanableDirectBuffer memory, int sizeClass, int size) {
      // Netty views the memory without freeing it at release (deallocate gives it back instead).
      super(
          UnpooledByteBufAllocator.DEFAULT, memory.buffer().duplicate().clear().limit(size), size);
      this.memory = memory;
      this.sizeClass = sizeClass;
      clear(); // the view starts out as if it were full
      leak = LEAKS.track(this);
    }

    @Override
    protected void deallocate() {
      super.deallocate();
      if (leak != null) {
        boolean tracked = leak.close(this);
        assert tracked : "a kept buffer's leak tracker closed twice";
      }
      giveBack(memory, sizeClass);
    }
  }
}
