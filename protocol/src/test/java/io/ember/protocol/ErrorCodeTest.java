package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Wire numbers: each code round-trips, and an unknown number is not lost. */
class ErrorCodeTest {
  @Test
  void everyCodeRoundTripsThroughItsNumber() {
    Set<Integer> numbers = new HashSet<>();
    for (ErrorCode c : ErrorCode.values()) {
      assertTrue(numbers.add(c.code()), "number " + c.code() + " taken twice");
      assertTrue(ErrorCode.isKnown(c.code()));
      assertSame(c, ErrorCode.fromCode(c.code()));
      assertEquals("as sent", ErrorCode.messageFor(c.code(), "as sent"));
    }
  }

  @Test
  void anUnknownNumberIsInternalAndKeepsItsNumberInTheMessage() {
    for (int unknown : new int[] {0, 7, 63, 64, 1000, -1}) {
      assertFalse(ErrorCode.isKnown(unknown));
      assertSame(ErrorCode.INTERNAL, ErrorCode.fromCode(unknown));
      String m = ErrorCode.messageFor(unknown, "quota of /a exceeded");
      assertTrue(m.contains("error code " + unknown + " "), m);
      assertTrue(m.endsWith("quota of /a exceeded"), m);
    }
  }

  @Test
  void storageRefusalsMayHaveAppliedInPart() {
    // An NVMf write goes out as several commands; one refused says nothing of the others.
    assertFalse(ErrorCode.NOT_READY.surelyNotApplied());
    assertFalse(ErrorCode.NO_SPACE.surelyNotApplied());
    assertFalse(ErrorCode.PERMISSION_DENIED.surelyNotApplied());
  }
}
