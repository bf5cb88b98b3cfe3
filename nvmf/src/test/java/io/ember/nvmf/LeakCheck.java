package io.ember.nvmf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Turns Netty leak reports into test failures: installs a leak detector factory that records every
 * report, and after the test class forces garbage collection and fails if any ByteBuf was collected
 * unreleased.
 */
public final class LeakCheck implements BeforeAllCallback, AfterAllCallback {
  static final List<String> LEAKS = new CopyOnWriteArrayList<>();
  private static volatile boolean installed;

  private static synchronized void install() {
    if (installed) {
      return;
    }
    installed = true;
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(
        new ResourceLeakDetectorFactory() {
          @Override
          @SuppressWarnings("deprecation")
          public <T> ResourceLeakDetector<T> newResourceLeakDetector(
              Class<T> resource, int samplingInterval, long maxActive) {
            return new ResourceLeakDetector<T>(resource, samplingInterval, maxActive) {
              @Override
              protected void reportTracedLeak(String type, String records) {
                LEAKS.add(type + records);
                super.reportTracedLeak(type, records);
              }

              @Override
              protected void reportUntracedLeak(String type) {
                LEAKS.add(type);
                super.reportUntracedLeak(type);
              }
            };
          }
        });
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    install();
    // The ByteBuf leak detector is created once, when the first buffer class initialises; if that
    // happened before install() the reports would bypass us and this check would be toothless.
    java.lang.reflect.Field f =
        io.netty.buffer.AbstractByteBuf.class.getDeclaredField("leakDetector");
    f.setAccessible(true);
    Object detector = f.get(null);
    if (!detector.getClass().getName().startsWith(LeakCheck.class.getName())) {
      throw new IllegalStateException(
          "Netty's ByteBuf leak detector was created before LeakCheck installed"
              + " its recording factory ("
              + detector.getClass().getName()
              + ")");
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(50);
      // Leaks are reported when a new buffer is tracked after the old one was collected.
      ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(16);
      b.release();
      ByteBuf h = PooledByteBufAllocator.DEFAULT.heapBuffer(16);
      h.release();
    }
    if (!LEAKS.isEmpty()) {
      String first = LEAKS.get(0);
      LEAKS.clear();
      throw new AssertionError(
          "Netty reported leaked buffers in " + context.getDisplayName() + ": " + first);
    }
  }
}
