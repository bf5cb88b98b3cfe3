package io.ember.benchmarks;

import io.ember.benchmarks.nvmf.ThreadCpuProfiler;
import io.ember.benchmarks.report.Charts;
import io.ember.benchmarks.report.HtmlReport;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.NoBenchmarksException;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/**
 * {@code ember bench jmh [--report DIR] [JMH options]}: runs the JMH microbenchmarks of this module
 * (the NVMe/TCP path: {@code NvmfBenchmark}, and its raw-socket floors {@code TcpPingPongBenchmark}
 * for QD1 and {@code TcpStreamBenchmark} for the queued ones). Arguments go to JMH unchanged, e.g.
 * {@code ember bench jmh 'NvmfBenchmark.*Qd32' -p queues=1,4 -rf json}. Every run also reports the
 * host's and the target's CPU time per operation ({@link ThreadCpuProfiler}). With {@code
 * --report}, JMH's results are also drawn, each benchmark beside the others of its mode and unit,
 * so a run that includes a floor shows the NVMf figure beside it.
 */
@Command(
    name = "jmh",
    mixinStandardHelpOptions = false,
    description =
        "Run the JMH microbenchmarks; arguments go to JMH (try -h, -l). With --report DIR, "
            + "also draw the results.")
public final class JmhCommand implements Callable<Integer> {
  /** Everything after "jmh" but --report, in order, for JMH to parse. */
  @Unmatched List<String> args = new ArrayList<>();

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    String[] jmhArgs = args.toArray(new String[0]);
    CommandLineOptions options;
    try {
      options = new CommandLineOptions(jmhArgs);
    } catch (CommandLineOptionException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    if (options.shouldHelp()
        || options.shouldList()
        || options.shouldListWithParams()
        || options.shouldListProfilers()
        || options.shouldListResultFormats()) {
      org.openjdk.jmh.Main.main(jmhArgs);
      return 0;
    }
    Collection<RunResult> results;
    try {
      results = new Runner(withThreadCpu(options)).run();
    } catch (NoBenchmarksException e) {
      spec.commandLine().getErr().println("ember bench jmh: no benchmark matches " + args);
      return 1;
    }
    if (report.dir == null) {
      return 0;
    }
    HtmlReport page = report.start(spec, "ember bench jmh: microbenchmarks of the NVMf path");
    draw(page, results);
    report.finish(page, spec.commandLine().getErr());
    return 0;
  }

  /**
   * The options with {@link ThreadCpuProfiler} added, so that every run reports the host's and the
   * target's CPU time per operation, unless this JVM cannot measure it or it was asked for already.
   */
  private static Options withThreadCpu(CommandLineOptions options) {
    boolean asked =
        options.getProfilers().stream()
            .anyMatch(p -> p.getKlass().equals(ThreadCpuProfiler.class.getName()));
    if (asked || !ManagementFactory.getThreadMXBean().isThreadCpuTimeSupported()) {
      return options;
    }
    return new OptionsBuilder().parent(options).addProfiler(ThreadCpuProfiler.class).build();
  }

  /** One table of every result, then a chart per mode and unit. */
  static void draw(HtmlReport page, Collection<RunResult> results) {
    List<List<String>> rows = new ArrayList<>();
    Map<String, List<RunResult>> byKind = new LinkedHashMap<>();
    for (RunResult r : results) {
      Result<?> primary = r.getPrimaryResult();
      rows.add(row(label(r), r, primary));
      for (String secondary : r.getSecondaryResults().keySet()) {
        Result<?> result = r.getSecondaryResults().get(secondary);
        rows.add(row(label(r) + " " + secondary, r, result));
      }
      byKind
          .computeIfAbsent(
              r.getParams().getMode().longLabel() + ", " + primary.getScoreUnit(),
              k -> new ArrayList<>())
          .add(r);
    }
    page.heading("Results")
        .table(List.of("benchmark", "mode", "samples", "score", "error (99.9%)", "unit"), rows);
    for (Map.Entry<String, List<RunResult>> kind : byKind.entrySet()) {
      // JMH reports NaN for a benchmark that failed; the table shows it, a chart cannot.
      List<RunResult> rs =
          kind.getValue().stream()
              .filter(r -> Double.isFinite(r.getPrimaryResult().getScore()))
              .toList();
      if (rs.isEmpty()) {
        continue;
      }
      String unit = rs.get(0).getPrimaryResult().getScoreUnit();
      Map<String, List<double[]>> series = new LinkedHashMap<>();
      series.put(unit, rs.stream().map(JmhCommand::iterations).toList());
      page.chart(
          Charts.beside(kind.getKey(), unit, rs.stream().map(JmhCommand::label).toList(), series),
          Charts.spreadCaption("the measured iterations of every fork")
              + " The table gives JMH's own mean and error.");
    }
  }

  private static List<String> row(String label, RunResult r, Result<?> result) {
    return List.of(
        label,
        r.getParams().getMode().shortLabel(),
        Long.toString(result.getSampleCount()),
        String.format(Locale.ROOT, "%.3f", result.getScore()),
        String.format(Locale.ROOT, "%.3f", result.getScoreError()),
        result.getScoreUnit());
  }

  /** The benchmark's method name with its parameters, as JMH prints them. */
  private static String label(RunResult r) {
    String name = r.getParams().getBenchmark();
    name = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1);
    Collection<String> keys = r.getParams().getParamsKeys();
    return keys.isEmpty()
        ? name
        : name
            + " "
            + keys.stream()
                .map(k -> k + "=" + r.getParams().getParam(k))
                .collect(Collectors.joining(","));
  }

  private static double[] iterations(RunResult r) {
    List<Double> scores = new ArrayList<>();
    for (BenchmarkResult fork : r.getBenchmarkResults()) {
      for (IterationResult it : fork.getIterationResults()) {
        scores.add(it.getPrimaryResult().getScore());
      }
    }
    return scores.stream().mapToDouble(Double::doubleValue).toArray();
  }
}
