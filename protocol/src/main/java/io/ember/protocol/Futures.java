package io.ember.protocol;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Blocking conveniences over the async calls. */
public final class Futures {
  private Futures() {}

  /**
   * Waits for {@code f} and returns its value, rethrowing its failure as an {@link EmberException}.
   * The async calls carry their own timeouts, so this wait ends.
   *
   * @throws EmberException the call's error; {@link ErrorCode#CLOSED} when interrupted
   */
  public static <T> T await(CompletableFuture<T> f) throws EmberException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new EmberException(ErrorCode.CLOSED, "interrupted while waiting", e);
    } catch (ExecutionException e) {
      EmberException inner = EmberException.of(e);
      // Rethrow a fresh exception so the stack trace shows the caller's place, not only the
      // network thread's.
      throw new EmberException(inner.code(), inner.getMessage(), inner);
    }
  }

  /**
   * As {@link #await(CompletableFuture)}, but gives up after {@code max}: a safety net for the
   * blocking conveniences, whose calls carry their own, shorter timeouts, so that a completion lost
   * to a bug fails the caller instead of blocking it forever.
   *
   * @throws EmberException the call's error, or {@link ErrorCode#TIMEOUT} after {@code max}
   */
  public static <T> T await(CompletableFuture<T> f, Duration max) throws EmberException {
    try {
      return f.get(max.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new EmberException(
          ErrorCode.TIMEOUT,
          "no completion within "
              + max.toMillis()
              + " ms (beyond every RPC and connect timeout: the operation was lost)",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new EmberException(ErrorCode.CLOSED, "interrupted while waiting", e);
    } catch (ExecutionException e) {
      EmberException inner = EmberException.of(e);
      throw new EmberException(inner.code(), inner.getMessage(), inner);
    }
  }
}
