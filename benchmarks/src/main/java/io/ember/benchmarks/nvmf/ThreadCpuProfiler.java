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

  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private Map<Long, Long> before = Map.of();

  /**
   * Checks that this JVM measures thread CPU time.
   *
   * @throws UnsupportedOperationException when it cannot
   */
  public ThreadCpuProfiler() {
    if (!threads.isThreadCpuTimeSupported()) {
      throw new UnsupportedOperationException("this JVM does not measure thread CPU time");
    }
    threads.setThreadCpuTimeEnabled(true);
  }

  @Override
  public String getDescription() {
    return "CPU time per operation of the host's and the target's threads";
  }

  @Override
  public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
    before = cpuByThread();
  }

  @Override
  @SuppressWarnings("rawtypes") // JMH's signature
  public Collection<? extends Result> afterIteration(
      BenchmarkParams benchmark, IterationParams iteration, IterationResult result) {
    long ops = Math.max(1, result.getMetadata().getAllOps());
    long host = 0;
    long target = 0;
    for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds(), 0)) {
      if (t == null) {
        continue;
      }
      long cpu = threads.getThreadCpuTime(t.getThreadId());
      if (cpu < 0) {
        continue;
      }
      long used = cpu - before.getOrDefault(t.getThreadId(), 0L);
      if (matches(t.getThreadName(), HOST)) {
        host += used;
      } else if (matches(t.getThreadName(), TARGET)) {
        target += used;
      }
    }
    return List.of(
        new ScalarResult("·cpu.host", host / 1000.0 / ops, "us/op", AggregationPolicy.AVG),
        new ScalarResult("·cpu.target", target / 1000.0 / ops, "us/op", AggregationPolicy.AVG));
  }

  private Map<Long, Long> cpuByThread() {
    Map<Long, Long> cpu = new HashMap<>();
    for (long id : threads.getAllThreadIds()) {
      long ns = threads.getThreadCpuTime(id);
      if (ns >= 0) {
        cpu.put(id, ns);
      }
    }
    return cpu;
  }

  private static boolean matches(String name, List<String> parts) {
    return parts.stream().anyMatch(name::contains);
  }
}
