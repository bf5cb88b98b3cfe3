package io.ember.tier.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The stamp's encoding: what a client takes for a registration, and what it takes for none. */
class TargetStampTest {
  @Test
  void stampReadsBackAsItsIncarnation() {
    assertEquals(-7L, TargetStamp.decode(TargetStamp.encode(-7L, 512)));
    assertEquals(Long.MAX_VALUE, TargetStamp.decode(TargetStamp.encode(Long.MAX_VALUE, 4096)));
  }

  @Test
  void emptyForeignOrDamagedLbaRecordsNone() {
    assertEquals(0, TargetStamp.decode(ByteBuffer.allocateDirect(512)));
    ByteBuffer foreign = ByteBuffer.allocateDirect(512);
    foreign.put("EMBRINC1".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putLong(42);
    assertEquals(0, TargetStamp.decode(foreign), "no checksum");
    for (int at : new int[] {0, 7, 8, 15, 16, 19}) {
      ByteBuffer damaged = TargetStamp.encode(42, 512);
      damaged.put(at, (byte) (damaged.get(at) ^ 1));
      assertEquals(0, TargetStamp.decode(damaged), "byte " + at + " flipped");
    }
  }
}
