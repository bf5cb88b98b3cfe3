package io.ember.client.spi;

import io.ember.protocol.BlockLocation;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * Moves bytes to and from blocks of one tier. Calls are asynchronous and many may be in flight;
 * futures may complete on a network thread, so continuations must not block.
 */
public interface StorageEndpoint extends AutoCloseable {
  /**
   * Whether the storage itself refuses a read or write naming a block generation it does not hold
   * (a DRAM data node does; an NVMf target cannot). The client uses a cached location of storage
   * that cannot for at most {@link BlockLocation#UNCHECKED_TRUST} before asking the name node
   * again, and the name node keeps such storage's freed blocks from reuse for longer than that.
   */
  default boolean checksGenerations() {
    return false;
  }

  /**
   * Writes {@code data} into {@code block} at {@code offset}. One reference to {@code data} passes
   * to this call, which releases it in every case.
   *
   * @return completes when the data node has the bytes; fails with {@link
   *     io.ember.protocol.EmberException}
   */
  CompletableFuture<Void> write(BlockLocation block, int offset, ByteBuf data);

  /**
   * Reads {@code length} bytes of {@code block} from {@code offset}.
   *
   * @return the bytes; the caller owns the returned buffer and must release it
   */
  CompletableFuture<ByteBuf> read(BlockLocation block, int offset, int length);

  /**
   * Reads {@code dst.remaining()} bytes of {@code block} from {@code offset} into {@code dst}'s
   * remaining space. The caller owns {@code dst} and must not touch it until the future completes;
   * its position and limit are left alone. Tiers that can read straight into the caller's buffer
   * override this; the default reads and copies.
   */
  default CompletableFuture<Void> readInto(BlockLocation block, int offset, ByteBuffer dst) {
    return read(block, offset, dst.remaining())
        .thenAccept(
            buf -> {
              try {
                buf.getBytes(buf.readerIndex(), dst.duplicate());
              } finally {
                buf.release();
              }
            });
  }

  /** Releases the endpoint's resources; connections shared through the context stay open. */
  @Override
  void close();
}
