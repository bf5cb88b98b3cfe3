package io.ember.client;

import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.StorageTier;
import io.ember.client.spi.TierContext;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.netty.buffer.ByteBuf;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A tier whose reads complete only when a test completes them, so a test can finish a read after
 * the stream stopped waiting for it. Found through {@code META-INF/services} like a real tier.
 */
public final class HandTier implements StorageTier {
  /** The tier name block locations name. */
  public static final String NAME = "hand";

  /** The reads asked of the tier, oldest first, each waiting for a test to complete it. */
  static final BlockingQueue<CompletableFuture<ByteBuf>> READS = new LinkedBlockingQueue<>();

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public StorageEndpoint open(TierContext context) {
    return new StorageEndpoint() {
      @Override
      public CompletableFuture<Void> write(BlockLocation block, int offset, ByteBuf data) {
        data.release();
        return CompletableFuture.failedFuture(
            new EmberException(ErrorCode.INVALID_ARGUMENT, "the hand tier takes no writes"));
      }

      @Override
      public CompletableFuture<ByteBuf> read(BlockLocation block, int offset, int length) {
        CompletableFuture<ByteBuf> f = new CompletableFuture<>();
        READS.add(f);
        return f;
      }

      @Override
      public void close() {}
    };
  }
}
