package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.util.List;

/**
 * Splits the byte stream into {@link Frame}s. A length below the header size or above the
 * configured maximum cannot be resynchronised: the decoder raises {@link FrameTooLargeEvent} (which
 * the RPC handlers answer and then close on) and discards everything after it, so an attacker's
 * length never makes it allocate.
 */
public class FrameDecoder extends ByteToMessageDecoder {
  private final int maxFrameBytes;
  private boolean broken;

  /** True once {@link #divert} kept the frame now arriving on this path: it is not asked again. */
  private boolean kept;

  /** What {@link #divert} did with a frame that has not all arrived. */
  protected enum Diversion {
    /** The frame goes on as usual: gathered whole, then passed on. Not asked again for it. */
    KEEP,
    /** Not decided yet (too little of it has arrived): asked again when more does. */
    ASK_AGAIN,
    /**
     * The subclass consumed all of the frame there was and takes the rest of it from the socket
     * itself; this decoder sees bytes again once it has.
     */
    TAKEN
  }

  /** A decoder that refuses frames longer than {@code maxFrameBytes} (after the length field). */
  public FrameDecoder(int maxFrameBytes) {
    this.maxFrameBytes = maxFrameBytes;
    // Data frames of a MiB arrive in many socket reads; a composite cumulation keeps those reads
    // as they are instead of copying each into one growing buffer, so a block's bytes are copied
    // once (into the region, or into the reader's array) after the kernel's copy.
    setCumulator(COMPOSITE_CUMULATOR);
  }

  /** Fired once when the stream cannot be framed any longer. */
  public record FrameTooLargeEvent(long length, int maxFrameBytes) {
    /** A message naming the length and the limit. */
    /**
     * Whether a length field holds a TLS record's first bytes, content type 22 (handshake) and
     * version 3.x: a frame of over 350 MiB, which no Ember peer sends.
     */
    static boolean isTls(long length) {
      return length >>> 24 == 22 && (length >>> 16 & 0xff) == 3;
    }

    public String describe() {
      if (isTls(length)) {
        return "the peer speaks TLS (it has "
            + EmberKeys.TLS.name()
            + "=true, and this side does not)";
      }
      return length < Frame.HEADER_BYTES
          ? "frame length " + length + " is shorter than the " + Frame.HEADER_BYTES + "-byte header"
          : "frame length " + length + " exceeds the maximum of " + maxFrameBytes + " bytes";
    }
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    if (broken) {
      in.skipBytes(in.readableBytes());
      return;
    }
    while (in.readableBytes() >= 4) {
      long length = in.getUnsignedInt(in.readerIndex());
      if (length < Frame.HEADER_BYTES
          || length > maxFrameBytes
          || FrameTooLargeEvent.isTls(length)) {
        broken = true;
        in.skipBytes(in.readableBytes());
        ctx.fireUserEventTriggered(new FrameTooLargeEvent(length, maxFrameBytes));
        return;
      }
      if (in.readableBytes() < 4 + length) {
        if (!kept) {
          Diversion d = divert(ctx, in, length);
          kept = d == Diversion.KEEP;
        }
        return;
      }
      kept = false;
      in.skipBytes(4);
      out.add(Frame.read(in, length));
    }
  }

  /**
   * Offered the start of a frame of {@code length} bytes (after the length field, already checked)
   * that has not all arrived, from {@code in}'s reader index (its length field) on; a subclass may
   * take the rest of the frame past this decoder. This one keeps every frame.
   */
  protected Diversion divert(ChannelHandlerContext ctx, ByteBuf in, long length) {
    return Diversion.KEEP;
  }
}
