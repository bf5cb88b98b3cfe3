package io.ember.protocol;

import io.netty.channel.socket.SocketChannel;

/**
 * How an {@link RpcServer}'s connection splits its bytes into {@link Frame}s: the handler named
 * {@code "frames"} in its pipeline, and where its socket reads land.
 */
@FunctionalInterface
public interface Framing {
  /** Every frame gathered whole by a {@link FrameDecoder} in the server's receive buffers. */
  Framing WHOLE_FRAMES =
      (ch, maxFrameBytes) -> ch.pipeline().addLast("frames", new FrameDecoder(maxFrameBytes));

  /**
   * Adds the {@code "frames"} handler to the new connection {@code ch}; may also set its receive
   * buffer allocator.
   *
   * @param maxFrameBytes the configured largest frame, after the length field
   */
  void install(SocketChannel ch, int maxFrameBytes);
}
