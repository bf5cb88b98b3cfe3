package io.ember.protocol;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A service's life cycle as a state machine: NEW → STARTING → RUNNING → CLOSING → CLOSED, with
 * STARTING → CLOSING when start fails. An illegal move (start after close, start twice) fails
 * loudly; {@link #beginClose()} tells whether this caller is the one that closes, so close is
 * idempotent.
 */
public final class LifeCycle {
  /** The states. */
  public enum State {
    NEW,
    STARTING,
    RUNNING,
    CLOSING,
    CLOSED
  }

  private final String name;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);

  /** A life cycle for the named service. */
  public LifeCycle(String name) {
    this.name = name;
  }

  /** The current state. */
  public State state() {
    return state.get();
  }

  /**
   * NEW → STARTING.
   *
   * @throws IllegalStateException when the service was started or closed before
   */
  public void beginStart() {
    if (!state.compareAndSet(State.NEW, State.STARTING)) {
      throw new IllegalStateException(name + " cannot start: it is " + state.get());
    }
  }

  /** STARTING → RUNNING. */
  public void started() {
    if (!state.compareAndSet(State.STARTING, State.RUNNING)) {
      throw new IllegalStateException(name + " cannot be running: it is " + state.get());
    }
  }

  /**
   * Moves to CLOSING; returns true for the one caller that should do the closing, false when the
   * service is closing or closed already.
   */
  public boolean beginClose() {
    while (true) {
      State s = state.get();
      if (s == State.CLOSING || s == State.CLOSED) {
        return false;
      }
      if (state.compareAndSet(s, State.CLOSING)) {
        return true;
      }
    }
  }

  /** CLOSING → CLOSED. */
  public void closed() {
    state.set(State.CLOSED);
  }

  /**
   * Fails unless RUNNING.
   *
   * @throws EmberException {@link ErrorCode#CLOSED} when closing or closed
   */
  public void checkRunning() throws EmberException {
    State s = state.get();
    if (s != State.RUNNING) {
      throw new EmberException(ErrorCode.CLOSED, name + " is " + s.name().toLowerCase());
    }
  }
}
