package io.ember.spark;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's shuffle manager for Ember ({@code spark.shuffle.manager}). Map tasks write through
 * Spark's own sort shuffle writers (map-side combine, spills, serializer relocation) into Ember by
 * way of {@link EmberShuffleDataIO}; reduce tasks read straight from Ember with {@link
 * EmberShuffleReader}, so no executor serves shuffle files and an executor can go away without its
 * map output. Needs, besides {@code spark.ember.namenode}:
 *
 * <pre>
 * spark.shuffle.manager=io.ember.spark.EmberShuffleManager
 * spark.shuffle.sort.io.plugin.class=io.ember.spark.EmberShuffleDataIO
 * </pre>
 *
 * A shuffle Ember should not take goes to Spark's own shuffle instead ({@link EmberShuffleConf}
 * says when). All of the Spark-facing code sits in this package.
 */
public class EmberShuffleManager extends SortShuffleManager {
  private static final Logger LOG = LoggerFactory.getLogger(EmberShuffleManager.class);

  /** The storage plugin class this manager needs set. */
  public static final String PLUGIN_KEY = "spark.shuffle.sort.io.plugin.class";

  /**
   * Called by Spark with the application's configuration.
   *
   * @throws IllegalArgumentException when the storage plugin is not {@link EmberShuffleDataIO}
   * @throws IllegalStateException when this jar is built for another Spark line or Scala version
   *     than the running one (the message names the jar to use)
   */
  public EmberShuffleManager(SparkConf conf) {
    super(checked(conf));
  }

  /**
   * Registers a shuffle with Spark's sort shuffle, then places it: on Ember, or, when Ember should
   * not take it (see {@link EmberShuffleConf}), on Spark's own shuffle, with a log line that says
   * why.
   *
   * @throws java.io.UncheckedIOException when Ember cannot take it and the policy is never to fall
   *     back
   */
  @Override
  public <K, V, C> ShuffleHandle registerShuffle(
      int shuffleId, ShuffleDependency<K, V, C> dependency) {
    ShuffleHandle handle = super.registerShuffle(shuffleId, dependency);
    int partitions = dependency.partitioner().numPartitions();
    String why = EmberShuffleDataIO.place(shuffleId, partitions);
    if (why == null) {
      return handle;
    }
    LOG.warn(
        "Ember shuffle: shuffle {} ({} reduce partitions) uses Spark's own shuffle: {}",
        shuffleId,
        partitions,
        why);
    return SparkOwnShuffle.mark(handle);
  }

  /**
   * Spark's sort-shuffle writer for a map task, after noting for this executor whether the
   * shuffle's map output goes to Ember or, for a shuffle the driver sent to Spark's own shuffle, to
   * local disk.
   */
  @Override
  public <K, V> ShuffleWriter<K, V> getWriter(
      ShuffleHandle handle, long mapId, TaskContext context, ShuffleWriteMetricsReporter metrics) {
    EmberShuffleDataIO.sparkOwnOnExecutor(
        handle.shuffleId(), handle instanceof SparkOwnShuffle.Marked);
    return super.getWriter(handle, mapId, context, metrics);
  }

  private static SparkConf checked(SparkConf conf) {
    BuiltFor.check();
    String plugin = conf.get(PLUGIN_KEY, "");
    if (!plugin.equals(EmberShuffleDataIO.class.getName())) {
      throw new IllegalArgumentException(
          "EmberShuffleManager needs "
              + PLUGIN_KEY
              + "="
              + EmberShuffleDataIO.class.getName()
              + " (it is '"
              + plugin
              + "')");
    }
    return conf;
  }

  /**
   * Forgets the executor's note of where the shuffle's map output went, then lets Spark's sort
   * shuffle delete its own files of it (only a shuffle that fell back has any).
   */
  @Override
  public boolean unregisterShuffle(int shuffleId) {
    EmberShuffleDataIO.sparkOwnOnExecutor(shuffleId, false);
    return super.unregisterShuffle(shuffleId);
  }

  /**
   * A reduce task's reader: {@link EmberShuffleReader}, straight from Ember, or Spark's own reader
   * for a shuffle that fell back to Spark's own shuffle.
   */
  @Override
  @SuppressWarnings("unchecked")
  public <K, C> ShuffleReader<K, C> getReader(
      ShuffleHandle handle,
      int startMapIndex,
      int endMapIndex,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    if (handle instanceof SparkOwnShuffle.Marked) {
      return super.getReader(
          handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
    }
    return new EmberShuffleReader<>(
        (BaseShuffleHandle<K, ?, C>) handle,
        startMapIndex,
        endMapIndex,
        startPartition,
        endPartition,
        context,
        metrics);
  }
}
