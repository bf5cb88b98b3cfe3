package io.ember.datanode.dram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

class DramRegionTest {
  @Test
  void writesAndReadsWithinBounds() throws Exception {
    DramRegion region = new DramRegion(1 << 20);
    ByteBuf data = Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4});
    region.write(4096, data);
    data.release();
    ByteBuf back = region.read(4095, 6);
    try {
      assertEquals(0, back.getByte(0));
      assertEquals(1, back.getByte(1));
      assertEquals(4, back.getByte(4));
      assertEquals(0, back.getByte(5));
    } finally {
      back.release();
    }
  }

  @Test
  void refusesRangesOutsideTheRegion() {
    DramRegion region = new DramRegion(1 << 20);
    ByteBuf data = Unpooled.wrappedBuffer(new byte[8]);
    try {
      assertEquals(
          ErrorCode.OUT_OF_RANGE,
          assertThrows(EmberException.class, () -> region.write((1 << 20) - 4, data)).code());
      assertEquals(
          ErrorCode.OUT_OF_RANGE,
          assertThrows(EmberException.class, () -> region.read(-1, 1)).code());
      assertEquals(
          ErrorCode.OUT_OF_RANGE,
          assertThrows(EmberException.class, () -> region.read(0, (1 << 20) + 1)).code());
      assertEquals(
          ErrorCode.OUT_OF_RANGE,
          assertThrows(EmberException.class, () -> region.read(Long.MAX_VALUE - 2, 8)).code());
    } finally {
      data.release();
    }
  }
}
