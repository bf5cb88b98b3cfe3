package io.ember.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Mode bits of namespace entries, as POSIX and HDFS write them: read, write and execute for the
 * owner, the group and others (0777), and the sticky bit (01000), by which only an entry's owner,
 * its directory's owner or the super-user deletes or renames an entry of a directory others may
 * write.
 */
public final class Permissions {
  /**
   * On the wire, in a create or a change: no mode given (the name node's default, or unchanged).
   */
  public static final int DEFAULT = 0xffff;

  /** The largest mode: every bit. */
  public static final int MAX = 01777;

  /** The sticky bit. */
  public static final int STICKY = 01000;

  /** Read. Shift left by 6 for the owner, 3 for the group. */
  public static final int READ = 4;

  /** Write. */
  public static final int WRITE = 2;

  /** Execute: for a directory, passing through it to what it holds. */
  public static final int EXECUTE = 1;

  /** Mode of a new file when its create names none: rw-r--r--. */
  public static final int FILE_DEFAULT = 0644;

  /** Mode of a new directory (and of a parent a create makes) when none is named: rwxr-xr-x. */
  public static final int DIRECTORY_DEFAULT = 0755;

  /** Longest owner or group name, in UTF-8 bytes. */
  public static final int MAX_NAME_BYTES = 256;

  private Permissions() {}

  /**
   * Reads a mode written as a 16-bit integer.
   *
   * @throws MalformedFrameException when it is neither a mode nor {@link #DEFAULT}
   */
  public static int read(ByteBuf in) throws MalformedFrameException {
    int high = Wire.readByte(in, "mode") & 0xff;
    int mode = (high << 8) | (Wire.readByte(in, "mode") & 0xff);
    if (mode != DEFAULT && mode > MAX) {
      throw new MalformedFrameException("mode " + Integer.toOctalString(mode) + " is not a mode");
    }
    return mode;
  }

  /**
   * Parses an octal mode such as {@code 755} or {@code 1777}.
   *
   * @throws IllegalArgumentException when {@code text} is not one, with a message that says so
   */
  public static int parseOctal(String text) {
    if (text.isEmpty() || text.length() > 4 || !text.chars().allMatch(c -> c >= '0' && c <= '7')) {
      throw new IllegalArgumentException(
          "'" + text + "' is not an octal mode (such as 755, 640 or 1777)");
    }
    return Integer.parseInt(text, 8);
  }

  /** The mode as {@code ls} shows it: {@code rwxr-xr-t} for 01755. */
  public static String symbolic(int mode) {
    StringBuilder s = new StringBuilder(9);
    for (int shift = 6; shift >= 0; shift -= 3) {
      int bits = mode >> shift;
      s.append((bits & READ) != 0 ? 'r' : '-');
      s.append((bits & WRITE) != 0 ? 'w' : '-');
      boolean x = (bits & EXECUTE) != 0;
      if (shift == 0 && (mode & STICKY) != 0) {
        s.append(x ? 't' : 'T');
      } else {
        s.append(x ? 'x' : '-');
      }
    }
    return s.toString();
  }
}
