package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.ReferenceCountUtil;

/**
 * One frame off the wire: {@code int length | byte version | byte type | byte flags | long
 * requestId | payload}. The length counts every byte after itself. The frame owns one reference to
 * its payload; whoever consumes the frame releases it.
 *
 * @param version the protocol version of the sender
 * @param type the raw message type byte ({@link MessageType#fromCode} may not know it)
 * @param flags {@link #FLAG_RESPONSE} and {@link #FLAG_ERROR}
 * @param requestId matches a response to its request
 * @param payload the body
 */
public record Frame(int version, int type, int flags, long requestId, ByteBuf payload) {
  /**
   * The protocol version this build speaks (2: block reads and writes name their contents; 3: a
   * create can overwrite a file; 4: entries carry an owner, a group and a mode; 5: block reads,
   * writes and grants carry a block token).
   */
  public static final int VERSION = 5;

  /** Bytes after the length field and before the payload. */
  public static final int HEADER_BYTES = 1 + 1 + 1 + 8;

  /** Set on responses. */
  public static final int FLAG_RESPONSE = 1;

  /** Set on responses whose body is an {@link Messages.ErrorReply}. */
  public static final int FLAG_ERROR = 2;

  /** True for responses. */
  public boolean isResponse() {
    return (flags & FLAG_RESPONSE) != 0;
  }

  /** True for error responses. */
  public boolean isError() {
    return (flags & FLAG_ERROR) != 0;
  }

  /** Releases the payload. */
  public void release() {
    ReferenceCountUtil.release(payload);
  }

  /**
   * Writes a frame to a channel without flushing. The message's {@link Message#data()}, if any,
   * follows the header without a copy; its reference passes to the channel.
   */
  public static ChannelFuture write(
      Channel channel, MessageType type, int flags, long requestId, Message body) {
    return write(channel, type.code(), flags, requestId, body, false);
  }

  /** As {@link #write}, then flushes. */
  public static ChannelFuture writeAndFlush(
      Channel channel, MessageType type, int flags, long requestId, Message body) {
    return write(channel, type.code(), flags, requestId, body, true);
  }

  static ChannelFuture write(
      Channel channel, int type, int flags, long requestId, Message body, boolean flush) {
    ByteBuf data = body.data();
    ByteBuf header;
    try {
      header = encodeHeader(channel.alloc(), type, flags, requestId, body, data);
    } catch (RuntimeException e) {
      ReferenceCountUtil.release(data);
      throw e;
    }
    ByteBuf frame = header;
    if (data != null) {
      // One write per frame: callers on different threads may write to one channel, and two
      // separate writes of header and data could interleave with another frame's.
      frame = channel.alloc().compositeDirectBuffer(2).addComponents(true, header, data);
    }
    return flush ? channel.writeAndFlush(frame) : channel.write(frame);
  }

  private static ByteBuf encodeHeader(
      ByteBufAllocator alloc, int type, int flags, long requestId, Message body, ByteBuf data) {
    ByteBuf out = alloc.buffer(64);
    try {
      encode(out, type, flags, requestId, body, data == null ? 0 : data.readableBytes());
      return out;
    } catch (RuntimeException e) {
      out.release();
      throw e;
    }
  }

  /**
   * Appends a frame's length field, header and body to {@code out}; {@code dataBytes} of data
   * follow it on the wire, counted in the length but not written here.
   */
  static void encode(
      ByteBuf out, int type, int flags, long requestId, Message body, int dataBytes) {
    int start = out.writerIndex();
    out.writeInt(0);
    out.writeByte(VERSION);
    out.writeByte(type);
    out.writeByte(flags);
    out.writeLong(requestId);
    body.encode(out);
    out.setInt(start, out.writerIndex() - start - 4 + dataBytes);
  }

  /**
   * Reads a frame whose length field ({@code length}, already checked against the header size and
   * the maximum) was just read from {@code in}. The payload is a retained slice of {@code in}.
   */
  static Frame read(ByteBuf in, long length) {
    int version = in.readUnsignedByte();
    int type = in.readUnsignedByte();
    int flags = in.readUnsignedByte();
    long requestId = in.readLong();
    ByteBuf payload = in.readRetainedSlice((int) length - HEADER_BYTES);
    return new Frame(version, type, flags, requestId, payload);
  }
}
