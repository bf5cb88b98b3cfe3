package io.ember.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Turns a response body into a value. Runs on a network thread while the body is valid; the body is
 * released after it returns.
 *
 * @param <T> the value's type
 */
@FunctionalInterface
public interface ResponseDecoder<T> {
  /** Decodes the body, checking its lengths. */
  T decode(ByteBuf payload) throws EmberException;

  /** A decoder for empty answers. */
  ResponseDecoder<Void> EMPTY =
      payload -> {
        Wire.expectEnd(payload, "empty answer");
        return null;
      };
}
