package io.ember.nvmf.target;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A namespace in off-heap memory, allocated lazily in 1 MiB chunks: unwritten blocks take no memory
 * and read as zeroes. A chunk, once written, is kept until the target stops, and deallocating
 * zeroes it in place; so the namespace never holds more memory than its size, rounded up to whole
 * chunks. (Dropping whole chunks left them to the garbage collector, which on a data node's quiet
 * heap may not run before gigabytes of them pile up: one benchmark process with a 576 MiB namespace
 * reached 4.2 GB.) Reads return views of the chunks, so read data goes to the socket without a
 * copy. Its data is lost when the target stops.
 */
public final class MemoryNamespace implements Namespace {
  private static final int CHUNK_SHIFT = 20;
  private static final int CHUNK = 1 << CHUNK_SHIFT;
  private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(CHUNK).asReadOnlyBuffer();

  private final long blocks;
  private final int blockSize;
  private final AtomicReferenceArray<ByteBuffer> chunks;

  /** Chunks allocated, for tests: never more than the namespace has. */
  private final java.util.concurrent.atomic.AtomicInteger chunksAllocated =
      new java.util.concurrent.atomic.AtomicInteger();

  /**
   * @param sizeBytes capacity, a multiple of {@code blockSize}
   * @param blockSize 512, 4096 or another power of two up to 65536
   * @throws IllegalArgumentException on a bad size
   */
  public MemoryNamespace(long sizeBytes, int blockSize) {
    if (blockSize < 512 || blockSize > 65536 || Integer.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          "block size must be a power of two in 512..65536, got " + blockSize);
    }
    if (sizeBytes <= 0 || sizeBytes % blockSize != 0) {
      throw new IllegalArgumentException(
          "size " + sizeBytes + " is not a positive multiple of " + blockSize);
    }
    long n = (sizeBytes + CHUNK - 1) >>> CHUNK_SHIFT;
    if (n > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("size " + sizeBytes + " too large");
    }
    this.blocks = sizeBytes / blockSize;
    this.blockSize = blockSize;
    this.chunks = new AtomicReferenceArray<>((int) n);
  }

  @Override
  public long blockCount() {
    return blocks;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public boolean blocking() {
    return false;
  }

  private ByteBuffer chunk(int i) {
    ByteBuffer c = chunks.get(i);
    if (c == null) {
      ByteBuffer fresh = ByteBuffer.allocateDirect(CHUNK);
      c = chunks.compareAndExchange(i, null, fresh);
      if (c == null) {
        c = fresh;
        chunksAllocated.incrementAndGet();
      }
    }
    return c;
  }

  /** {@code n} bytes of chunk {@code ci} from {@code co}, zeroes where nothing was written. */
  private ByteBuf view(int ci, int co, int n) {
    ByteBuffer c = chunks.get(ci);
    ByteBuffer view = (c == null ? ZEROES : c).duplicate();
    view.position(co).limit(co + n);
    return Unpooled.wrappedBuffer(view.slice());
  }

  @Override
  public ByteBuf read(ByteBufAllocator alloc, long offset, int len) {
    int first = (int) (offset & (CHUNK - 1));
    if (len > 0 && first + len <= CHUNK) {
      // Within one chunk (every read of up to a chunk that does not cross one): a view of it, with
      // none of a composite's allocations and none of its gathering when the bytes are sent.
      return view((int) (offset >>> CHUNK_SHIFT), first, len);
    }
    CompositeByteBuf out = Unpooled.compositeBuffer(len / CHUNK + 2);
    try {
      long pos = offset;
      long end = offset + len;
      while (pos < end) {
        int ci = (int) (pos >>> CHUNK_SHIFT);
        int co = (int) (pos & (CHUNK - 1));
        int n = (int) Math.min(CHUNK - co, end - pos);
        out.addComponent(true, view(ci, co, n));
        pos += n;
      }
      return out;
    } catch (RuntimeException e) {
      out.release(); // an offset outside the namespace: the caller gets no buffer to release
      throw e;
    }
  }

  @Override
  public ByteBuffer window(long offset, int len) {
    int first = (int) (offset & (CHUNK - 1));
    if (len <= 0 || first + len > CHUNK) {
      return null;
    }
    ByteBuffer w = chunk((int) (offset >>> CHUNK_SHIFT)).duplicate();
    w.position(first).limit(first + len);
    return w.slice();
  }

  @Override
  public void write(long offset, ByteBuf src) {
    int idx = src.readerIndex();
    long pos = offset;
    long end = offset + src.readableBytes();
    while (pos < end) {
      int ci = (int) (pos >>> CHUNK_SHIFT);
      int co = (int) (pos & (CHUNK - 1));
      int n = (int) Math.min(CHUNK - co, end - pos);
      ByteBuffer dst = chunk(ci).duplicate();
      dst.position(co).limit(co + n);
      src.getBytes(idx, dst);
      idx += n;
      pos += n;
    }
  }

  @Override
  public void flush() {}

  @Override
  public void deallocate(long offset, long len) {
    long pos = offset;
    long end = offset + len;
    while (pos < end) {
      int ci = (int) (pos >>> CHUNK_SHIFT);
      int co = (int) (pos & (CHUNK - 1));
      int n = (int) Math.min(CHUNK - co, end - pos);
      ByteBuffer c = chunks.get(ci);
      if (c != null) {
        ByteBuffer z = ZEROES.duplicate();
        z.limit(n);
        ByteBuffer dst = c.duplicate();
        dst.position(co);
        dst.put(z);
      }
      pos += n;
    }
  }

  /** How many chunks were ever allocated. */
  int chunksAllocated() {
    return chunksAllocated.get();
  }

  @Override
  public void close() {
    for (int i = 0; i < chunks.length(); i++) {
      chunks.set(i, null);
    }
  }
}
