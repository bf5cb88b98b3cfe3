package io.ember.datanode.dram;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The receive low-water mark is set only where the kernel grows the buffer for it and wakes the
 * reader when it changes, and where option 18 means SO_RCVLOWAT.
 */
class DirectWriteDecoderTest {
  @Test
  void theLowWaterMarkIsUsedFromLinux510OnCpusWithTheGenericSocketOptionNumbers() {
    assertTrue(DirectWriteDecoder.lowWaterUsable("Linux", "5.10.0-21-amd64", "amd64"));
    assertTrue(DirectWriteDecoder.lowWaterUsable("Linux", "6.18.44-fc-v509", "amd64"));
    assertTrue(DirectWriteDecoder.lowWaterUsable("Linux", "6.1.0", "aarch64"));
    assertTrue(DirectWriteDecoder.lowWaterUsable("Linux", "10.0", "x86_64"));

    // Before 5.10: hangs under memory pressure; before 4.18 no wake-up when the mark changes.
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "5.9.16", "amd64"));
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "4.18.0-553.el8_10.x86_64", "amd64"));
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "3.10.0", "amd64"));
    // Option 18 is another option there.
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "6.1.0", "ppc64le"));
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "6.1.0", "mips64el"));
    // Not Linux, or a version it cannot read.
    assertFalse(DirectWriteDecoder.lowWaterUsable("Mac OS X", "14.1", "aarch64"));
    assertFalse(DirectWriteDecoder.lowWaterUsable("Linux", "unknown", "amd64"));
  }
}
