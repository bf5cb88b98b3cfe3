package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class FuturesTest {
  @Test
  void boundedWaitEndsALostCompletionWithATimeout() {
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> Futures.await(new CompletableFuture<Void>(), Duration.ofMillis(100)));
    assertEquals(ErrorCode.TIMEOUT, e.code());
    // The wait's own bound ended it (a hang would meet the test timeout instead).
    assertTrue(e.getMessage().startsWith("no completion within 100 ms"), e.getMessage());
  }

  @Test
  void boundedWaitReturnsValuesAndUnwrapsErrors() throws Exception {
    assertEquals("x", Futures.await(CompletableFuture.completedFuture("x"), Duration.ofSeconds(1)));
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                Futures.await(
                    CompletableFuture.failedFuture(new EmberException(ErrorCode.NOT_FOUND, "gone")),
                    Duration.ofSeconds(1)));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertEquals("gone", e.getMessage());
  }
}
