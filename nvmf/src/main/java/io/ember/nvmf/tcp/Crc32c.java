package io.ember.nvmf.tcp;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C header and data digests as NVMe/TCP uses them: the standard CRC32C, stored little endian.
 */
public final class Crc32c {
  private Crc32c() {}

  /**
   * CRC32C of {@code len} bytes of {@code buf} from {@code index}; does not move reader/writer
   * indexes.
   */
  public static int of(ByteBuf buf, int index, int len) {
    CRC32C crc = new CRC32C();
    update(crc, buf, index, len);
    return (int) crc.getValue();
  }

  /**
   * Adds {@code len} bytes of {@code buf} from {@code index} to {@code crc}, without copying direct
   * memory.
   */
  public static void update(CRC32C crc, ByteBuf buf, int index, int len) {
    if (len == 0) {
      return;
    }
    if (buf.hasArray()) {
      crc.update(buf.array(), buf.arrayOffset() + index, len);
      return;
    }
    if (buf.nioBufferCount() == 1) {
      crc.update(buf.nioBuffer(index, len));
      return;
    }
    for (ByteBuffer bb : buf.nioBuffers(index, len)) {
      crc.update(bb);
    }
  }

  /** CRC32C of the remaining bytes of {@code bb}; its position is left unchanged. */
  public static int of(ByteBuffer bb) {
    CRC32C crc = new CRC32C();
    crc.update(bb.duplicate());
    return (int) crc.getValue();
  }
}
