package io.ember.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Turns Netty leak reports into test failures. Registered for every test class through {@code
 * META-INF/services} and JUnit's extension autodetection (set in the parent POM), so a leaked
 * {@code ByteBuf} anywhere in a module's tests fails the build, not only logs a line.
 *
 * <p>Netty finds a leak only when a leaked buffer has been collected and a later allocation polls
 * the reference queue; after each test class this forces a few collections and allocations.
 */
public final class LeakCheckExtension implements AfterAllCallback {
  private static final List<String> LEAKS = Collections.synchronizedList(new ArrayList<>());

  static {
    ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    for (int round = 0; round < 4; round++) {
      System.gc();
      Thread.sleep(20);
      for (int i = 0; i < 64; i++) {
        ByteBuf pooled = PooledByteBufAllocator.DEFAULT.directBuffer(16);
        pooled.release();
        ByteBuf heap = Unpooled.buffer(16);
        heap.release();
      }
    }
    List<String> found;
    synchronized (LEAKS) {
      found = new ArrayList<>(LEAKS);
      LEAKS.clear();
    }
    if (!found.isEmpty()) {
      throw new AssertionError(
          "Netty reported "
              + found.size()
              + " leak(s) during "
              + context.getDisplayName()
              + ":\n"
              + String.join("\n----\n", found));
    }
  }

  /** The leaks reported so far, for tests of this extension. */
  static List<String> reported() {
    return LEAKS;
  }

  private static final class RecordingFactory extends ResourceLeakDetectorFactory {
    @Override
    public <T> ResourceLeakDetector<T> newResourceLeakDetector(
        Class<T> resource, int samplingInterval, long maxActive) {
      return new RecordingDetector<>(resource, samplingInterval);
    }
  }

  private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
    RecordingDetector(Class<T> resource, int samplingInterval) {
      super(resource, samplingInterval);
    }

    @Override
    protected boolean needReport() {
      return true;
    }

    @Override
    protected void reportTracedLeak(String resourceType, String records) {
      LEAKS.add(resourceType + " leaked:" + records);
      super.reportTracedLeak(resourceType, records);
    }

    @Override
    protected void reportUntracedLeak(String resourceType) {
      LEAKS.add(resourceType + " leaked (no records)");
      super.reportUntracedLeak(resourceType);
    }
  }
}
