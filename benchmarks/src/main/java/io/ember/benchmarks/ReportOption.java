package io.ember.benchmarks;

import io.ember.benchmarks.report.HtmlReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** {@code --report DIR}: a bench command's tables and charts, also as a self-contained page. */
final class ReportOption {
  @Option(
      names = "--report",
      paramLabel = "DIR",
      description = "also write the figures with charts to DIR/index.html, one self-contained page")
  Path dir;

  /**
   * A report headed by the command that made it and the machine it ran on, or null when no {@code
   * --report} was asked for.
   */
  HtmlReport start(CommandSpec spec, String title) {
    if (dir == null) {
      return null;
    }
    CommandSpec root = spec.root();
    List<String> args = root.commandLine().getParseResult().originalArgs();
    Runtime rt = Runtime.getRuntime();
    return new HtmlReport(title)
        .meta(root.name() + (args.isEmpty() ? "" : " " + String.join(" ", args)))
        .meta(
            String.format(
                Locale.ROOT,
                "%d CPUs, Java %s (%s), %s %s, %s",
                rt.availableProcessors(),
                System.getProperty("java.version"),
                System.getProperty("java.vm.name"),
                System.getProperty("os.name"),
                System.getProperty("os.arch"),
                ZonedDateTime.now(ZoneId.systemDefault())
                    .format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z", Locale.ROOT))));
  }

  /** Writes {@code report} (if one was started) and says where on {@code progress}. */
  void finish(HtmlReport report, PrintWriter progress) throws IOException {
    if (report != null) {
      BenchCommand.note(progress, "report written to " + report.write(dir).toAbsolutePath());
    }
  }
}
