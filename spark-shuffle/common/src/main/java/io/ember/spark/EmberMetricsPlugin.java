package io.ember.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.ember.client.ClientMetrics;
import io.ember.client.EmberClient;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Puts the Ember client's counters into Spark's metrics system, so that Spark's sinks (JMX,
 * Prometheus, Graphite, CSV...) report each executor's shuffle traffic to Ember beside Spark's own
 * metrics. Enable it with {@code spark.plugins=io.ember.spark.EmberMetricsPlugin}; the gauges
 * appear in each executor's metrics under {@code plugin.io.ember.spark.EmberMetricsPlugin}:
 *
 * <ul>
 *   <li>{@code bytesWritten}, {@code bytesRead}: bytes sent to and received from data nodes;
 *   <li>{@code blockWrites}, {@code blockReads}: the transfers that moved them;
 *   <li>{@code metadataCalls}: calls to the name node made by the shuffle's operations (the lease
 *       renewals that run in the background while files are open are not among them);
 *   <li>{@code blockCacheHits}, {@code blockCacheMisses}: block locations found in the client's
 *       cache, or fetched;
 *   <li>{@code readModifyWriteSectors}: sectors an NVMf tier read, patched and wrote back for
 *       writes that were not whole sectors;
 *   <li>{@code writeMemoryKept}: bytes of direct memory the client keeps for its next writes while
 *       no write uses them.
 * </ul>
 *
 * Each gauge reads the counters of the executor's Ember client as it is when Spark samples it; it
 * is 0 until the executor's first shuffle connects the client. Only executors report: the driver's
 * client makes directories and little else.
 */
public final class EmberMetricsPlugin implements SparkPlugin {
  /** The counters, by the names Spark reports them under. */
  static final Map<String, ToLongFunction<ClientMetrics>> GAUGES =
      Map.of(
          "bytesWritten", ClientMetrics::bytesWritten,
          "bytesRead", ClientMetrics::bytesRead,
          "blockWrites", ClientMetrics::blockWrites,
          "blockReads", ClientMetrics::blockReads,
          "metadataCalls", ClientMetrics::metadataCalls,
          "blockCacheHits", ClientMetrics::blockCacheHits,
          "blockCacheMisses", ClientMetrics::blockCacheMisses,
          "readModifyWriteSectors", ClientMetrics::readModifyWriteSectors,
          "writeMemoryKept", ClientMetrics::writeMemoryKept);

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext ctx, Map<String, String> extraConf) {
        register(ctx.metricRegistry());
      }
    };
  }

  static void register(MetricRegistry registry) {
    GAUGES.forEach(
        (name, counter) ->
            registry.register(
                name,
                (Gauge<Long>)
                    () -> {
                      EmberClient client = EmberShuffleConf.current();
                      return client == null ? 0L : counter.applyAsLong(client.metrics());
                    }));
  }
}
