package io.ember.datanode.nvmf;

import io.ember.nvmf.target.ControllerStats;
import io.ember.nvmf.target.NvmfTarget;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

/**
 * The embedded target's figures per controller, read from the target at each scrape: controllers
 * come and go with their hosts, and a controller's series go with it (a new controller has a new
 * id, so its counters start afresh under other labels); and how many I/O queues each of its network
 * threads serves.
 */
final class TargetMetrics implements MultiCollector {
  private final NvmfTarget target;

  TargetMetrics(NvmfTarget target) {
    this.target = target;
  }

  @Override
  public MetricSnapshots collect() {
    CounterSnapshot.Builder commands =
        CounterSnapshot.builder()
            .name("ember_nvmf_target_commands")
            .help("I/O commands the embedded target completed, by controller and kind");
    CounterSnapshot.Builder failed =
        CounterSnapshot.builder()
            .name("ember_nvmf_target_failed_commands")
            .help("I/O commands the embedded target answered with an error status, by controller");
    CounterSnapshot.Builder bytes =
        CounterSnapshot.builder()
            .name("ember_nvmf_target_bytes")
            .help("bytes hosts read from and wrote to the embedded target, by controller");
    GaugeSnapshot.Builder depth =
        GaugeSnapshot.builder()
            .name("ember_nvmf_target_queue_depth")
            .help("I/O commands received and not yet answered, by controller (all its queues)");
    HistogramSnapshot.Builder latency =
        HistogramSnapshot.builder()
            .name("ember_nvmf_target_command_latency_seconds")
            .help("time from an I/O command's arrival to its completion, by controller");
    GaugeSnapshot.Builder threadQueues =
        GaugeSnapshot.builder()
            .name("ember_nvmf_target_thread_io_queues")
            .help("I/O queues each of the embedded target's network threads serves");
    java.util.List<Integer> perThread = target.ioQueuesPerThread();
    for (int i = 0; i < perThread.size(); i++) {
      threadQueues.dataPoint(
          GaugeDataPointSnapshot.builder()
              .labels(Labels.of("thread", Integer.toString(i)))
              .value(perThread.get(i))
              .build());
    }
    for (ControllerStats c : target.controllerStats()) {
      Labels labels = Labels.of("controller", Integer.toString(c.cntlid()), "host", c.hostNqn());
      commands.dataPoint(counter(labels.add("kind", "read"), c.reads()));
      commands.dataPoint(counter(labels.add("kind", "write"), c.writes()));
      commands.dataPoint(counter(labels.add("kind", "other"), c.others()));
      failed.dataPoint(counter(labels, c.failed()));
      bytes.dataPoint(counter(labels.add("direction", "read"), c.bytesRead()));
      bytes.dataPoint(counter(labels.add("direction", "written"), c.bytesWritten()));
      depth.dataPoint(
          GaugeDataPointSnapshot.builder().labels(labels).value(c.outstanding()).build());
      latency.dataPoint(
          HistogramDataPointSnapshot.builder()
              .labels(labels)
              .classicHistogramBuckets(
                  ClassicHistogramBuckets.of(c.latencyBoundsSeconds(), c.latencyCounts()))
              .sum(c.latencySumSeconds())
              .build());
    }
    return MetricSnapshots.of(
        commands.build(),
        failed.build(),
        bytes.build(),
        depth.build(),
        latency.build(),
        threadQueues.build());
  }

  private static CounterDataPointSnapshot counter(Labels labels, long value) {
    return CounterDataPointSnapshot.builder().labels(labels).value((double) value).build();
  }
}
