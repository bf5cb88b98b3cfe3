package io.ember.protocol;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A service's life cycle as a state machine: NEW → STARTING → RUNNING → CLOSING → CLOSED, with
 * STARTING → FAILED when start fails (and STARTING → CLOSING when a close comes first). An illegal
 * move (start after close, start twice) fails loudly; {@link #beginClose()} tells whether this
 * caller is the one that closes, so close is idempotent.
 *
 * <p>A start records what it opens with {@link #opened}; if it fails, {@link #startFailed} closes
 * those in reverse order, so a service that never ran leaves nothing behind:
 *
 * <pre>{@code
 * lifeCycle.beginStart();
 * try {
 *   server = lifeCycle.opened(startServer());
 *   link = lifeCycle.opened(new Link(...));
 *   lifeCycle.started();
 * } catch (Throwable e) {
 *   lifeCycle.startFailed(e);
 *   throw e;
 * }
 * }</pre>
 */
public final class LifeCycle {
  /** The states. */
  public enum State {
    NEW,
    STARTING,
    RUNNING,
    CLOSING,
    CLOSED,
    /** The start failed; what it had opened is closed. Final, like CLOSED. */
    FAILED
  }

  private final String name;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);

  /** What the start in progress has opened, newest first; emptied once it ends. */
  private final Deque<AutoCloseable> opened = new ArrayDeque<>();

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

  /**
   * Records {@code resource}, just opened by the start in progress, for {@link #startFailed} to
   * close. Once the service runs, closing its resources is its own {@code close()}'s job.
   *
   * @return {@code resource}, which may be null (then nothing is recorded)
   * @throws IllegalStateException when no start is in progress
   */
  public <T extends AutoCloseable> T opened(T resource) {
    synchronized (opened) {
      if (state.get() != State.STARTING) {
        throw new IllegalStateException(name + " is not starting: it is " + state.get());
      }
      if (resource != null) {
        opened.push(resource);
      }
    }
    return resource;
  }

  /**
   * STARTING → RUNNING; forgets what {@link #opened} recorded.
   *
   * @throws IllegalStateException when no start is in progress (a close came first)
   */
  public void started() {
    synchronized (opened) {
      if (!state.compareAndSet(State.STARTING, State.RUNNING)) {
        throw new IllegalStateException(name + " cannot be running: it is " + state.get());
      }
      opened.clear();
    }
  }

  /**
   * The start failed with {@code cause}: STARTING → FAILED (a close already under way keeps its
   * state), then closes what {@link #opened} recorded, newest first. Failures to close are added to
   * {@code cause} as suppressed exceptions; the caller rethrows {@code cause}.
   */
  public void startFailed(Throwable cause) {
    Deque<AutoCloseable> toClose;
    synchronized (opened) {
      state.compareAndSet(State.STARTING, State.FAILED);
      toClose = new ArrayDeque<>(opened);
      opened.clear();
    }
    for (AutoCloseable c : toClose) {
      try {
        c.close();
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        if (e != cause) {
          cause.addSuppressed(e);
        }
      }
    }
  }

  /**
   * Moves to CLOSING; returns true for the one caller that should do the closing, false when the
   * service is closing or closed already, or its start failed (which closed what it opened).
   */
  public boolean beginClose() {
    while (true) {
      State s = state.get();
      if (s == State.CLOSING || s == State.CLOSED || s == State.FAILED) {
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
   * @throws EmberException {@link ErrorCode#CLOSED} when not started, starting, closing, closed or
   *     failed
   */
  public void checkRunning() throws EmberException {
    State s = state.get();
    if (s != State.RUNNING) {
      throw new EmberException(ErrorCode.CLOSED, name + " is " + s.name().toLowerCase(Locale.ROOT));
    }
  }
}
