package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A failed start closes what it opened, newest first, and leaves the service failed. */
class LifeCycleTest {
  private final List<String> closed = new ArrayList<>();

  private AutoCloseable resource(String name) {
    return () -> closed.add(name);
  }

  @Test
  void failedStartClosesWhatItOpenedInReverseOrder() {
    LifeCycle lc = new LifeCycle("svc");
    lc.beginStart();
    lc.opened(resource("target"));
    assertNull(lc.opened(null));
    lc.opened(resource("controller"));
    lc.opened(resource("link"));
    RuntimeException cause = new IllegalArgumentException("bad namespace");
    lc.startFailed(cause);
    assertEquals(List.of("link", "controller", "target"), closed);
    assertEquals(LifeCycle.State.FAILED, lc.state());
    assertFalse(lc.beginClose(), "a failed start left nothing to close");
    assertThrows(EmberException.class, lc::checkRunning);
    assertThrows(IllegalStateException.class, lc::beginStart);
    assertThrows(IllegalStateException.class, () -> lc.opened(resource("late")));
  }

  @Test
  void closeFailuresAreSuppressedAndTheRestStillClose() {
    LifeCycle lc = new LifeCycle("svc");
    lc.beginStart();
    lc.opened(resource("first"));
    lc.opened(
        () -> {
          throw new IllegalStateException("cannot close");
        });
    lc.opened(resource("last"));
    EmberException cause = new EmberException(ErrorCode.INVALID_ARGUMENT, "no");
    lc.startFailed(cause);
    assertEquals(List.of("last", "first"), closed);
    assertEquals(1, cause.getSuppressed().length);
    assertEquals("cannot close", cause.getSuppressed()[0].getMessage());
  }

  @Test
  void aStartThatSucceedsForgetsWhatItOpened() throws Exception {
    LifeCycle lc = new LifeCycle("svc");
    lc.beginStart();
    AutoCloseable r = resource("server");
    assertSame(r, lc.opened(r));
    lc.started();
    lc.checkRunning();
    // Misuse after the start: the service's own close owns its resources now.
    lc.startFailed(new RuntimeException());
    assertArrayEquals(new String[0], closed.toArray(new String[0]));
    assertEquals(LifeCycle.State.RUNNING, lc.state());
  }
}
