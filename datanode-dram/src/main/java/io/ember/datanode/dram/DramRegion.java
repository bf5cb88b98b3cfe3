package io.ember.datanode.dram;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;

/**
 * The data node's memory: direct (off-heap) segments of up to 1 GiB, addressed as one range. A
 * transfer never crosses a segment, because segments are multiples of the largest block size and
 * clients never cross a block.
 */
final class DramRegion {
  static final int SEGMENT_BYTES = 1 << 30;

  private final long capacity;
  private final ByteBuffer[] segments;

  DramRegion(long capacity) {
    this.capacity = capacity;
    int n = (int) ((capacity + SEGMENT_BYTES - 1) / SEGMENT_BYTES);
    segments = new ByteBuffer[n];
    for (int i = 0; i < n; i++) {
      long size = Math.min(SEGMENT_BYTES, capacity - (long) i * SEGMENT_BYTES);
      try {
        segments[i] = ByteBuffer.allocateDirect((int) size);
      } catch (OutOfMemoryError e) {
        throw new IllegalStateException(
            "cannot allocate "
                + capacity
                + " bytes of direct memory "
                + "for the DRAM region: raise -XX:MaxDirectMemorySize or lower the capacity",
            e);
      }
    }
  }

  long capacity() {
    return capacity;
  }

  /** Copies {@code data} into the region at {@code address}. */
  void write(long address, ByteBuf data) throws EmberException {
    int len = data.readableBytes();
    ByteBuffer dst = window(address, len);
    data.getBytes(data.readerIndex(), dst);
  }

  /** A view of {@code length} bytes at {@code address}, without a copy. */
  ByteBuf read(long address, int length) throws EmberException {
    return Unpooled.wrappedBuffer(window(address, length).slice());
  }

  /**
   * The {@code length} bytes at {@code address} as a buffer positioned at them, for a socket to
   * read into.
   *
   * @throws EmberException {@link ErrorCode#OUT_OF_RANGE} when the range is not inside one segment
   */
  ByteBuffer window(long address, int length) throws EmberException {
    // Written so that a huge address cannot overflow past the check.
    if (address < 0 || length < 0 || length > capacity || address > capacity - length) {
      throw new EmberException(
          ErrorCode.OUT_OF_RANGE,
          "range ["
              + address
              + ", "
              + (address + length)
              + ") is outside the region of "
              + capacity
              + " bytes");
    }
    int seg = (int) (address / SEGMENT_BYTES);
    int off = (int) (address % SEGMENT_BYTES);
    ByteBuffer s = segments[seg];
    if (off + length > s.capacity()) {
      throw new EmberException(
          ErrorCode.OUT_OF_RANGE,
          "range [" + address + ", " + (address + length) + ") crosses a segment boundary");
    }
    ByteBuffer d = s.duplicate();
    d.limit(off + length);
    d.position(off);
    return d;
  }
}
