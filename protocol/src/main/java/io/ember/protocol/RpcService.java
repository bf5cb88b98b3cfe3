package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;

/** What a server does with each request. Runs on a network thread: it must not block. */
public interface RpcService {
  /**
   * Handles one request and returns the response body. The payload is released after this returns:
   * an implementation that keeps bytes retains them.
   *
   * @param channel the connection the request came on
   * @param type the request's type (never {@link MessageType#NOOP}, which the server answers)
   * @param payload the request body
   * @return the response body
   * @throws EmberException sent back as an error frame with its code and message
   */
  Message handle(Channel channel, MessageType type, ByteBuf payload) throws EmberException;

  /** Called once when a connection closes, so per-connection state can be dropped. */
  default void connectionClosed(Channel channel) {}
}
