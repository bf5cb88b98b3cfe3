package io.ember.nvmf.target;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Storage behind one namespace of the embedded target. Offsets and lengths are in bytes and always
 * block-aligned and within {@link #blockCount()} blocks: the target checks the range before
 * calling. Implementations must allow concurrent calls for different ranges from several threads.
 */
public interface Namespace extends AutoCloseable {
  /** Number of logical blocks. */
  long blockCount();

  /** Bytes per logical block (a power of two, 512..65536). */
  int blockSize();

  /**
   * Whether I/O may block (file I/O): the target then runs it on a worker pool instead of the
   * network event loop.
   */
  boolean blocking();

  /**
   * Returns {@code len} bytes from {@code offset} as a buffer the caller releases. Implementations
   * may return views of their storage (no copy); the view may reflect writes that happen before it
   * is sent.
   *
   * @throws IOException when the storage fails; the target answers with a media error status
   */
  ByteBuf read(ByteBufAllocator alloc, long offset, int len) throws IOException;

  /**
   * Stores the readable bytes of {@code src} at {@code offset}. Does not release {@code src} or
   * move its indexes.
   *
   * @throws IOException when the storage fails; the target answers with a media error status
   */
  void write(long offset, ByteBuf src) throws IOException;

  /**
   * The memory where {@code len} bytes from {@code offset} are kept, for a write's data to be
   * received into straight from the socket: a buffer of exactly {@code len} bytes from position 0,
   * or null where the storage has no such memory (the default) or the range is not in one piece.
   */
  default ByteBuffer window(long offset, int len) {
    return null;
  }

  /** Makes completed writes durable. */
  void flush() throws IOException;

  /** Deallocates {@code len} bytes from {@code offset}; afterwards they read as zeroes. */
  void deallocate(long offset, long len) throws IOException;

  /** Sets {@code len} bytes from {@code offset} to zero. */
  default void writeZeroes(long offset, long len) throws IOException {
    deallocate(offset, len);
  }

  /** Releases the storage. */
  @Override
  default void close() throws IOException {}
}
