package io.ember.spark;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.sort.BypassMergeSortShuffleHandle;
import org.apache.spark.shuffle.sort.SerializedShuffleHandle;

/**
 * Handles of shuffles that Spark's own shuffle serves instead of Ember (a fallback). Each is the
 * handle Spark's sort shuffle chose, so its writers are chosen as they would be, marked so that
 * executors write its map output to local disk and reducers fetch it from executors. The handle is
 * how executors learn the driver's decision: it travels with every task of the shuffle.
 */
final class SparkOwnShuffle {
  private SparkOwnShuffle() {}

  /** Marks a handle of a shuffle Spark serves itself. */
  interface Marked {}

  /** {@code handle}, marked as Spark's own. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static ShuffleHandle mark(ShuffleHandle handle) {
    BaseShuffleHandle base = (BaseShuffleHandle) handle;
    if (handle instanceof SerializedShuffleHandle) {
      return new Serialized(base.shuffleId(), base.dependency());
    }
    if (handle instanceof BypassMergeSortShuffleHandle) {
      return new Bypass(base.shuffleId(), base.dependency());
    }
    // Any other handle of the sort shuffle is served by its general sort writer.
    return new Base(base.shuffleId(), base.dependency());
  }

  private static final class Base<K, V, C> extends BaseShuffleHandle<K, V, C> implements Marked {
    private static final long serialVersionUID = 1L;

    Base(int shuffleId, ShuffleDependency<K, V, C> dependency) {
      super(shuffleId, dependency);
    }
  }

  private static final class Bypass<K, V> extends BypassMergeSortShuffleHandle<K, V>
      implements Marked {
    private static final long serialVersionUID = 1L;

    Bypass(int shuffleId, ShuffleDependency<K, V, V> dependency) {
      super(shuffleId, dependency);
    }
  }

  private static final class Serialized<K, V> extends SerializedShuffleHandle<K, V>
      implements Marked {
    private static final long serialVersionUID = 1L;

    Serialized(int shuffleId, ShuffleDependency<K, V, V> dependency) {
      super(shuffleId, dependency);
    }
  }
}
