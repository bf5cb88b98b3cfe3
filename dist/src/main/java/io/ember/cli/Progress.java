package io.ember.cli;

import java.io.Console;
import java.io.InputStream;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Option;

/**
 * A progress bar with rate and time left, on standard error, for the copies of {@code fs put},
 * {@code get} and {@code cp}: drawn only for a person at a terminal, so scripts and pipes get no
 * noise.
 */
final class Progress {
  /** The option that turns the bar off where it would be drawn. */
  static final class Switch {
    @Option(
        names = "--no-progress",
        description = "no progress bar (one is drawn on standard error only at a terminal)")
    boolean off;

    boolean show() {
      return !off && watched();
    }
  }

  private Progress() {}

  /**
   * Whether a person watches: standard input and output are a terminal. The JDK cannot ask about
   * standard error alone, and a copy whose output is piped is a script's.
   */
  // Checked for null and, on JDKs that have it (22 and newer, where console() is never null),
  // asked isTerminal().
  @SuppressWarnings("SystemConsoleNull")
  static boolean watched() {
    String term = System.getenv("TERM");
    Console console = System.console();
    if (console == null || term == null || term.equals("dumb")) {
      return false;
    }
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (ReflectiveOperationException e) {
      return true;
    }
  }

  /**
   * {@code in}, drawing a bar named {@code task} on standard error as it is read, of {@code length}
   * bytes (or of unknown length when negative); {@code in} itself when {@code show} is false.
   * Closing the stream finishes the bar.
   */
  static InputStream track(InputStream in, String task, long length, boolean show) {
    if (!show) {
      return in;
    }
    ProgressBarBuilder bar =
        new ProgressBarBuilder()
            .setTaskName(task)
            .setInitialMax(length < 0 ? -1 : length)
            .setUnit(" MiB", 1 << 20)
            .showSpeed()
            .setStyle(ProgressBarStyle.COLORFUL_UNICODE_BLOCK)
            .setUpdateIntervalMillis(250)
            .continuousUpdate()
            .setConsumer(new ConsoleProgressBarConsumer(System.err));
    return ProgressBar.wrap(in, bar);
  }
}
