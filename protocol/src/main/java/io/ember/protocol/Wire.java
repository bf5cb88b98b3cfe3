package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.nio.charset.StandardCharsets;

/**
 * Checked reads and writes of wire fields. Every read checks the bytes present first, so a frame
 * whose lengths lie fails with {@link MalformedFrameException} before anything is allocated.
 */
public final class Wire {
  /** Longest string accepted where no tighter limit applies (error messages, host names). */
  public static final int MAX_STRING_BYTES = 64 * 1024;

  private Wire() {}

  /** Reads one byte. */
  public static byte readByte(ByteBuf in, String field) throws MalformedFrameException {
    need(in, 1, field);
    return in.readByte();
  }

  /** Reads a boolean encoded as 0 or 1. */
  public static boolean readBoolean(ByteBuf in, String field) throws MalformedFrameException {
    byte b = readByte(in, field);
    if (b != 0 && b != 1) {
      throw new MalformedFrameException(field + " must be 0 or 1, was " + b);
    }
    return b == 1;
  }

  /** Reads a 32-bit integer. */
  public static int readInt(ByteBuf in, String field) throws MalformedFrameException {
    need(in, 4, field);
    return in.readInt();
  }

  /** Reads a 32-bit integer that must lie in [min, max]. */
  public static int readInt(ByteBuf in, String field, int min, int max)
      throws MalformedFrameException {
    int v = readInt(in, field);
    if (v < min || v > max) {
      throw new MalformedFrameException(field + " " + v + " outside [" + min + ", " + max + "]");
    }
    return v;
  }

  /** Reads a 64-bit integer. */
  public static long readLong(ByteBuf in, String field) throws MalformedFrameException {
    need(in, 8, field);
    return in.readLong();
  }

  /** Reads a 64-bit integer that must lie in [min, max]. */
  public static long readLong(ByteBuf in, String field, long min, long max)
      throws MalformedFrameException {
    long v = readLong(in, field);
    if (v < min || v > max) {
      throw new MalformedFrameException(field + " " + v + " outside [" + min + ", " + max + "]");
    }
    return v;
  }

  /** Writes a string as a 32-bit UTF-8 byte length followed by the bytes. */
  public static void writeString(ByteBuf out, String s) {
    int lengthIndex = out.writerIndex();
    out.writeInt(0);
    int written = ByteBufUtil.writeUtf8(out, s);
    out.setInt(lengthIndex, written);
  }

  /**
   * Reads a string written by {@link #writeString}, refusing lengths above {@code maxBytes} or
   * beyond the bytes present, and refusing bytes that are not well-formed UTF-8.
   */
  public static String readString(ByteBuf in, String field, int maxBytes)
      throws MalformedFrameException {
    int len = readInt(in, field + " length");
    if (len < 0 || len > maxBytes) {
      throw new MalformedFrameException(
          field + " length " + len + " outside [0, " + maxBytes + "]");
    }
    need(in, len, field);
    if (!ByteBufUtil.isText(in, in.readerIndex(), len, StandardCharsets.UTF_8)) {
      throw new MalformedFrameException(field + " is not valid UTF-8");
    }
    String s = in.toString(in.readerIndex(), len, StandardCharsets.UTF_8);
    in.skipBytes(len);
    return s;
  }

  /**
   * Checks a count of items against a maximum and against the bytes present, given the smallest
   * encoded size of one item, so a lying count cannot make the reader allocate.
   */
  public static int readCount(ByteBuf in, String field, int max, int minItemBytes)
      throws MalformedFrameException {
    int n = readInt(in, field);
    if (n < 0 || n > max) {
      throw new MalformedFrameException(field + " " + n + " outside [0, " + max + "]");
    }
    if ((long) n * minItemBytes > in.readableBytes()) {
      throw new MalformedFrameException(
          field
              + " "
              + n
              + " needs at least "
              + ((long) n * minItemBytes)
              + " bytes, "
              + in.readableBytes()
              + " present");
    }
    return n;
  }

  /** Fails when bytes remain after a message was decoded: the frame's length lied. */
  public static void expectEnd(ByteBuf in, String message) throws MalformedFrameException {
    if (in.isReadable()) {
      throw new MalformedFrameException(
          in.readableBytes() + " unexpected trailing bytes after " + message);
    }
  }

  private static void need(ByteBuf in, int n, String field) throws MalformedFrameException {
    if (in.readableBytes() < n) {
      throw new MalformedFrameException(
          "truncated at " + field + ": need " + n + " bytes, " + in.readableBytes() + " present");
    }
  }
}
