package io.ember.http;

import io.ember.protocol.Deferred;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.RpcService;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.util.internal.PlatformDependent;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One server's Prometheus metrics: its own registry (several servers may share a JVM, as in {@code
 * ember local} and tests), RPC counts and latency per message type, and the JVM's and Netty's
 * memory, which every server in the process reports alike.
 */
public final class ServerMetrics {
  /** The content type of {@link #scrape()}. */
  public static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

  private static final double[] LATENCY_BOUNDS = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
    2.5, 5, 10
  };

  private static final class JvmWide {
    // The JVM is one per process: registered once, scraped by every server in it.
    static final PrometheusRegistry REGISTRY = jvmRegistry();

    private static PrometheusRegistry jvmRegistry() {
      PrometheusRegistry r = new PrometheusRegistry();
      JvmMetrics.builder().register(r);
      GaugeWithCallback.builder()
          .name("netty_direct_memory_used_bytes")
          .help("direct memory Netty has reserved, pooled or not")
          .callback(cb -> cb.call((double) PlatformDependent.usedDirectMemory()))
          .register(r);
      GaugeWithCallback.builder()
          .name("netty_pooled_direct_memory_bytes")
          .help("direct memory held by Netty's default pooled allocator")
          .callback(
              cb -> cb.call((double) PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory()))
          .register(r);
      return r;
    }
  }

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final boolean enabled;
  private final Counter rpcCalls;
  private final Histogram rpcSeconds;

  // Every answered request lands here: the series of each type are looked up once, on first use
  // (made lazily so that /metrics lists only the types a server serves).
  private final Map<MessageType, CounterDataPoint> okCalls = new ConcurrentHashMap<>();
  private final Map<MessageType, DistributionDataPoint> latencies = new ConcurrentHashMap<>();

  /**
   * Metrics of one server, with RPC metrics registered. Not {@code enabled} ({@link
   * EmberKeys#METRICS_ENABLED}), nothing is counted or timed and {@link #route()} answers 404.
   */
  public ServerMetrics(boolean enabled) {
    this.enabled = enabled;
    rpcCalls =
        Counter.builder()
            .name("ember_rpc_calls_total")
            .help("requests answered, by message type and outcome (ok or the error code)")
            .labelNames("type", "outcome")
            .register(registry);
    rpcSeconds =
        Histogram.builder()
            .name("ember_rpc_latency_seconds")
            .help(
                "time from a request being taken up (on the network thread, or by a handler"
                    + " thread: time queued for one is not counted) to its answer being ready,"
                    + " by message type")
            .labelNames("type")
            .classicOnly()
            .classicUpperBounds(LATENCY_BOUNDS)
            .register(registry);
  }

  /** Whether this server counts and times anything; off, its counters stay at zero. */
  public boolean enabled() {
    return enabled;
  }

  /** Where a server registers its own metrics. */
  public PrometheusRegistry registry() {
    return registry;
  }

  /** {@code service}, with each request counted and timed. */
  public RpcService meter(RpcService service) {
    if (!enabled) {
      return service;
    }
    return new RpcService() {
      @Override
      public Message handle(Channel channel, MessageType type, ByteBuf payload)
          throws EmberException {
        long start = System.nanoTime();
        Message answer;
        try {
          answer = service.handle(channel, type, payload);
        } catch (EmberException e) {
          observe(type, start, e.code().name());
          throw e;
        } catch (RuntimeException e) {
          observe(type, start, "INTERNAL");
          throw e;
        }
        return answered(type, start, answer);
      }

      @Override
      public void connectionClosed(Channel channel) {
        service.connectionClosed(channel);
      }
    };
  }

  /**
   * Records a request of {@code type} begun at {@code startNanos} whose answer is {@code answer}:
   * now, or when a {@link Deferred} answer completes.
   *
   * @return {@code answer}
   */
  public Message answered(MessageType type, long startNanos, Message answer) {
    if (!enabled) {
      return answer;
    }
    if (answer instanceof Deferred deferred) {
      // The RPC server writes the answer; this only watches it complete.
      @SuppressWarnings("FutureReturnValueIgnored")
      var unused =
          deferred
              .answer()
              .whenComplete(
                  (m, e) ->
                      observe(
                          type,
                          startNanos,
                          e == null
                              ? "OK"
                              : EmberException.unwrap(e) instanceof EmberException ee
                                  ? ee.code().name()
                                  : "INTERNAL"));
    } else {
      observe(type, startNanos, "OK");
    }
    return answer;
  }

  /**
   * Records a request of {@code type} begun at {@code startNanos} that ended with {@code outcome}.
   */
  public void observe(MessageType type, long startNanos, String outcome) {
    if (!enabled) {
      return;
    }
    CounterDataPoint calls =
        outcome.equals("OK")
            ? okCalls.computeIfAbsent(type, t -> rpcCalls.labelValues(t.name(), outcome))
            : rpcCalls.labelValues(type.name(), outcome);
    calls.inc();
    latencies
        .computeIfAbsent(type, t -> rpcSeconds.labelValues(t.name()))
        .observe((System.nanoTime() - startNanos) / 1e9);
  }

  /** This server's metrics and the process's, in Prometheus' text format. */
  public byte[] scrape() throws IOException {
    MetricSnapshots.Builder all = MetricSnapshots.builder();
    for (MetricSnapshot s : registry.scrape()) {
      all.metricSnapshot(s);
    }
    for (MetricSnapshot s : JvmWide.REGISTRY.scrape()) {
      all.metricSnapshot(s);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(16 << 10);
    PrometheusTextFormatWriter.create().write(out, all.build());
    return out.toByteArray();
  }

  /** A route that answers {@link #scrape()}. */
  public StatusServer.Route route() {
    return query -> {
      if (!enabled) {
        throw new StatusServer.NotFoundException(
            "metrics are off on this server (" + EmberKeys.METRICS_ENABLED.name() + "=false)");
      }
      return new StatusServer.Response(200, CONTENT_TYPE, scrape());
    };
  }
}
