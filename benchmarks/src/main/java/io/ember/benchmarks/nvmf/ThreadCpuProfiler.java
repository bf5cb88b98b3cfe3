package io.ember.benchmarks.nvmf;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time per operation of the two sides of an NVMe/TCP exchange, from the JVM's per-thread CPU
 * clocks over each iteration: the host (the benchmark's own threads, the NVMe/TCP host's event
 * loops and the raw floors' client thread) and the target (the embedded target's threads and the
 * raw floors' server thread). SPDK reports the same thing as I/Os per second per core. A target in
 * another process is not measured; its row then reads 0.
 */
public final class ThreadCpuProfiler implements InternalProfiler {
  private static final List<String> HOST = List.of("jmh-worker", "nvmf-host", "stream-client");
  private static final List<String> TARGET =
      List.of("nvmf-target", "pingpong-server", "stream-server");

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  /**
   * The clocks as the last iteration ended, taken by the benchmark itself: after a trial's last
   * iteration its teardown stops the host and target before JMH asks this profiler, and a stopped
   * thread's clock can no longer be read.
   */
  private static volatile Map<Long, Clock> atIterationEnd;

  private Map<Long, Clock> before = Map.of();

  private record Clock(String thread, long cpuNanos) {}

  /**
   * Checks that this JVM measures thread CPU time.
   *
   * @throws UnsupportedOperationException when it cannot
   */
  public ThreadCpuProfiler() {
    if (!THREADS.isThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException("this JVM does not measure thread CPU time");
    }
    THREADS.setThreadCpuTimeEnabled(true);
  }

  /**
   * Reads every thread's clock now, for this iteration's figures; benchmarks call it from their
   * {@code @TearDown(Level.Iteration)}, which JMH runs before the trial's teardown.
   */
  public static void iterationEnded() {
    atIterationEnd = clocks();
  }

  @Override
  public String getDescription() {
    return "CPU time per operation of the host's and the target's threads";
  }

  @Override
  public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
    atIterationEnd = null;
    before = clocks();
  }

  @Override
  @SuppressWarnings("rawtypes") // JMH's signature
  public Collection<? extends Result> afterIteration(
      BenchmarkParams benchmark, IterationParams iteration, IterationResult result) {
    Map<Long, Clock> after = atIterationEnd != null ? atIterationEnd : clocks();
    long ops = Math.max(1, result.getMetadata().getAllOps());
    long host = 0;
    long target = 0;
    for (Map.Entry<Long, Clock> t : after.entrySet()) {
      Clock then = before.get(t.getKey());
      long used = t.getValue().cpuNanos() - (then == null ? 0 : then.cpuNanos());
      if (matches(t.getValue().thread(), HOST)) {
        host += used;
      } else if (matches(t.getValue().thread(), TARGET)) {
        target += used;
      }
    }
    return List.of(
        new ScalarResult("·cpu.host", host / 1000.0 / ops, "us/op", AggregationPolicy.AVG),
        new ScalarResult("·cpu.target", target / 1000.0 / ops, "us/op", AggregationPolicy.AVG));
  }

  private static Map<Long, Clock> clocks() {
    Map<Long, Clock> clocks = new HashMap<>();
    for (ThreadInfo t : THREADS.getThreadInfo(THREADS.getAllThreadIds(), 0)) {
      if (t == null) {
        continue;
      }
      long ns = THREADS.getThreadCpuTime(t.getThreadId());
      if (ns >= 0) {
        clocks.put(t.getThreadId(), new Clock(t.getThreadName(), ns));
      }
    }
    return clocks;
  }

  private static boolean matches(String name, List<String> parts) {
    return parts.stream().anyMatch(name::contains);
  }
}
