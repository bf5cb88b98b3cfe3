package io.ember.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.sort.SortShuffleManager;

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
 * All of the Spark-facing code sits in this package.
 */
public class EmberShuffleManager extends SortShuffleManager {
  /** The storage plugin class this manager needs set. */
  public static final String PLUGIN_KEY = "spark.shuffle.sort.io.plugin.class";

  /**
   * Called by Spark with the application's configuration.
   *
   * @throws IllegalArgumentException when the storage plugin is not {@link EmberShuffleDataIO}
   */
  public EmberShuffleManager(SparkConf conf) {
    super(checked(conf));
  }

  private static SparkConf checked(SparkConf conf) {
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
