package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import java.util.concurrent.CompletableFuture;

/**
 * An answer that is not ready yet: an {@link RpcService} returns one when the reply must wait for
 * something slower than the network thread should (a journal's fsync), and the {@link RpcServer}
 * writes the reply when {@code answer} completes. Completing with an {@link EmberException} sends
 * it as an error frame, as throwing it from {@link RpcService#handle} would.
 */
public record Deferred(CompletableFuture<? extends Message> answer) implements Message {
  @Override
  public void encode(ByteBuf out) {
    throw new IllegalStateException("a deferred answer is written once it completes");
  }
}
