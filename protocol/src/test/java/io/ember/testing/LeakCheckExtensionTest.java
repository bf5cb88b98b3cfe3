package io.ember.testing;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

/** The leak check itself must see a leak, or the build would pass with leaks in it. */
class LeakCheckExtensionTest {
  @Test
  void seesALeakedBuffer() throws Exception {
    leak();
    boolean seen = false;
    for (int i = 0; i < 50 && !seen; i++) {
      System.gc();
      Thread.sleep(20);
      for (int j = 0; j < 64; j++) {
        PooledByteBufAllocator.DEFAULT.directBuffer(16).release();
      }
      synchronized (LeakCheckExtension.reported()) {
        seen = LeakCheckExtension.reported().stream().anyMatch(s -> s.contains("leaked"));
        if (seen) {
          // Consumed here so the extension's own check after this class passes.
          LeakCheckExtension.reported().clear();
        }
      }
    }
    assertFalse(!seen, "the deliberate leak was not reported");
  }

  private static void leak() {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(128);
    b.writeLong(1);
    // dropped without release on purpose
  }
}
