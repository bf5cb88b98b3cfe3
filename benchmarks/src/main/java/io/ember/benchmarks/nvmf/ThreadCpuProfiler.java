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
 * another process is not measured, and has no row.
 */
public final class ThreadCpuProfiler implements InternalProfiler {
  private static final List<String> HOST =
      List.of("jmh-worker", "nvmf-host", "nvmf-rdma", "stream-client");
  private static final List<String> TARGET =
      List.of("nvmf-target", "pingpong-server", "stream-server");

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  /**
   * The clocks as the iteration's own setup ended, taken by the benchmark itself: JMH asks this
   * profiler before it runs the trial's setup, which starts the host and target (connecting,
   * filling the namespace), and that work is no part of any operation.
   */
  private static volatile Map<Long, Clock> atIterationStart;

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
   * Reads every thread's clock now, as this iteration's start; benchmarks call it at the end of
   * their {@code @Setup(Level.Iteration)}, which JMH runs after the trial's setup.
   */
  public static void iterationStarted() {
    atIterationStart = clocks();
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
    atIterationStart = null;
    atIterationEnd = null;
    before = clocks();
  }

  @Override
  @SuppressWarnings("rawtypes") // JMH's signature
  public Collection<? extends Result> afterIteration(
      BenchmarkParams benchmark, IterationParams iteration, IterationResult result) {
    Map<Long, Clock> start = atIterationStart != null ? atIterationStart : before;
    Map<Long, Clock> end = atIterationEnd != null ? atIterationEnd : clocks();
    long ops = Math.max(1, result.getMetadata().getAllOps());
    long host = 0;
    long target = 0;
    boolean targetHere = false;
    for (Map.Entry<Long, Clock> t : end.entrySet()) {
      Clock then = start.get(t.getKey());
      long used = t.getValue().cpuNanos() - (then == null ? 0 : then.cpuNanos());
      if (matches(t.getValue().thread(), HOST)) {
        host += used;
      } else if (matches(t.getValue().thread(), TARGET)) {
        target += used;
        targetHere = true;
      }
    }
    ScalarResult hostCpu =
        new ScalarResult("cpu.host", host / 1000.0 / ops, "us/op", AggregationPolicy.AVG);
    // A target in another process is not measured: no row rather than a zero that reads as one.
    return targetHere
        ? List.of(
            hostCpu,
            new ScalarResult("cpu.target", target / 1000.0 / ops, "us/op", AggregationPolicy.AVG))
        : List.of(hostCpu);
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
