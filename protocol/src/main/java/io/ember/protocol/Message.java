package io.ember.protocol;

import io.netty.buffer.ByteBuf;

/** A message body that can write itself to a frame. */
public interface Message {
  /** Writes the body's fields (not the frame header). */
  void encode(ByteBuf out);

  /**
   * Bytes sent after the encoded fields without being copied, or {@code null}. The frame writer
   * takes over one reference and releases it once written.
   */
  default ByteBuf data() {
    return null;
  }

  /** A message with no body. */
  Message EMPTY = out -> {};
}
