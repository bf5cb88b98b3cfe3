package io.ember.cli;

import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/** The options every command shares: a config file and single settings. */
final class ConfigOptions {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      description =
          "a properties file of ember.* settings (default: conf/ember.properties if " + "present)")
  Path configFile;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description = "one setting, e.g. -D ember.rpc.timeout=10s (repeatable)")
  Map<String, String> settings = Map.of();

  /** The configuration: file, then -D settings; unknown keys and bad values fail here. */
  EmberConfig load() throws IOException {
    EmberConfig config = EmberConfig.defaults();
    Path file = configFile;
    if (file == null) {
      String home = System.getenv("EMBER_HOME");
      Path def = Path.of(home == null ? "." : home, "conf", "ember.properties");
      if (Files.isRegularFile(def)) {
        file = def;
      }
    }
    if (file != null) {
      if (!Files.isRegularFile(file)) {
        throw new IOException("config file " + file + " does not exist");
      }
      config = EmberConfig.load(file);
    }
    config = config.withAll(EmberConfig.of(settings));
    List<String> unknown = config.unknownKeys(MiniCluster.allKeys());
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(
          "unknown setting(s) "
              + unknown
              + (file != null ? " (from " + file + " or -D)" : "")
              + "; see conf/ember.properties.template for the known ones");
    }
    config.validate(MiniCluster.allKeys());
    return config;
  }
}
