package io.ember.benchmarks;

import java.util.Map;
import java.util.TreeMap;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * What the benches that run clusters set up two or more ways (metrics, security) measure in each
 * round besides its lookups, how long they warm up, and the settings every cluster shares.
 */
final class ClusterModeOptions {
  @Option(
      names = "--size",
      defaultValue = "128m",
      description =
          "bytes written and then read per round, in 1 MiB operations (default ${DEFAULT-VALUE})")
  String size;

  @Option(
      names = "--warmup",
      defaultValue = "10",
      description = "seconds of unmeasured rounds per mode first (default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description = "an Ember setting for every cluster and its client (repeatable)")
  Map<String, String> settings = new TreeMap<>();

  /**
   * The bytes per round, whole 1 MiB operations.
   *
   * @throws CommandLine.ParameterException when a count is out of range
   */
  long bytes(CommandLine.Model.CommandSpec spec, RoundOptions round) {
    long bytes =
        OptionValues.size(spec, "--size", size, LookupsAndTransfers.OP, Long.MAX_VALUE)
            / LookupsAndTransfers.OP
            * LookupsAndTransfers.OP;
    if (round.rounds < 1 || round.seconds < 1 || warmupSeconds < 0) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--rounds and --seconds must be positive, --warmup not negative");
    }
    return bytes;
  }
}
