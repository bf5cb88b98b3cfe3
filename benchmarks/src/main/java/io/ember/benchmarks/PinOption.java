package io.ember.benchmarks;

import java.io.PrintWriter;
import picocli.CommandLine.Option;

/**
 * {@code --pin}: where a metadata measure's threads run (see {@link ThreadPlacement}), and the line
 * that says so under the figures.
 */
final class PinOption {
  @Option(
      names = "--pin",
      arity = "1",
      paramLabel = "true|false",
      description =
          "pin the metadata measures' calling threads to one CPU and the servers' threads (Ember's"
              + " and the ping-pong's) to the others, so that both sides of each ratio pay the"
              + " same thread wake-ups; false leaves them to the scheduler (default"
              + " ${DEFAULT-VALUE})",
      defaultValue = "true")
  boolean pin;

  private String placed;

  /**
   * Places this process's threads for a metadata measure, once every server thread and connection
   * it uses exists (callers started later inherit the placement of the thread that starts them).
   * The first placement is reported on {@code progress}.
   */
  ThreadPlacement place(PrintWriter progress) {
    ThreadPlacement placement =
        pin
            ? ThreadPlacement.splitCallersFromServers(
                name -> name.startsWith("bench-") || name.startsWith("ember-client"))
            : ThreadPlacement.unpinned("threads left to the scheduler (--pin false)");
    if (placed == null) {
      placed = placement.description();
      BenchCommand.note(progress, placed);
    }
    return placement;
  }

  /** The line printed under the figures, or null when no metadata was measured. */
  String noteLine() {
    return placed == null ? null : "metadata threads: " + placed + ".";
  }
}
