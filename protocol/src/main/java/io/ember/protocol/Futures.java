package io.ember.protocol;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** Blocking conveniences over the async calls. */
public final class Futures {
  private Futures() {}

  /**
   * Waits for {@code f} and returns its value, rethrowing its failure as an {@link
   * EmberException}. The async calls carry their own timeouts, so this wait ends.
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
}
