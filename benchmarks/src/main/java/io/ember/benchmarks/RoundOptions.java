package io.ember.benchmarks;

import picocli.CommandLine.Option;

/** How long a benchmark that compares modes in alternating rounds measures each figure. */
final class RoundOptions {
  @Option(
      names = "--seconds",
      defaultValue = "5",
      description = "seconds per round (default ${DEFAULT-VALUE})")
  int seconds;

  @Option(
      names = "--rounds",
      defaultValue = "5",
      description = "rounds per figure; the median is reported (default ${DEFAULT-VALUE})")
  int rounds;
}
