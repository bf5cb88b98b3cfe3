package io.ember.cli;

import io.ember.namenode.NameNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code ember namenode}: runs a name node until stopped. */
@Command(
    name = "namenode",
    mixinStandardHelpOptions = true,
    description = "Run a name node until Ctrl-C.")
final class NameNodeCommand implements Callable<Integer> {
  @Mixin ConfigOptions options;

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(
      names = {"--bind", "--host"},
      paramLabel = "HOST",
      description =
          "address to listen on (default: ember.namenode.bind-host, 0.0.0.0: every interface)")
  String host;

  @Option(names = "--port", description = "port to listen on (default 9060; 0: any free port)")
  Integer port;

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      description =
          "port of the status pages and /metrics: auto (the RPC port + 1, the default), off, or a"
              + " port (0: any free port)")
  String httpPort;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description =
          "directory of the journal and checkpoints (ember.namenode.dir; without one the namespace"
              + " lives in memory only)")
  String dir;

  @Option(
      names = "--format",
      description = "prepare DIR for an empty namespace, then exit (refuses a used one)")
  boolean format;

  @Option(names = "--force", description = "with --format: wipe DIR's name node state")
  boolean force;

  @Override
  public Integer call() throws Exception {
    EmberConfig config = options.load();
    if (host != null) {
      config = config.with(NameNodeKeys.BIND_HOST, host);
    }
    if (port != null) {
      config = config.with(NameNodeKeys.PORT, port.toString());
    }
    if (dir != null) {
      config = config.with(NameNodeKeys.DIR, dir);
    }
    if (httpPort != null) {
      try {
        config = config.with(NameNodeKeys.HTTP_PORT, httpPort);
      } catch (IllegalArgumentException e) {
        throw new picocli.CommandLine.ParameterException(
            spec.commandLine(), "--http-port: '" + httpPort + "' is not auto, off or a port");
      }
    }
    if (force && !format) {
      throw new picocli.CommandLine.ParameterException(
          spec.commandLine(), "--force goes with --format");
    }
    if (format) {
      NameNode.format(config, force);
      spec.commandLine()
          .getOut()
          .println(
              "formatted " + java.nio.file.Path.of(config.get(NameNodeKeys.DIR)).toAbsolutePath());
      return 0;
    }
    String keeps =
        config.get(NameNodeKeys.DIR).isBlank()
            ? "namespace in memory only (--dir keeps it)"
            : "namespace in "
                + java.nio.file.Path.of(config.get(NameNodeKeys.DIR)).toAbsolutePath()
                + ", journal sync "
                + config.get(NameNodeKeys.JOURNAL_SYNC);
    try (NameNode nn = NameNode.start(config)) {
      String where =
          nn.address().getAddress().isAnyLocalAddress()
              ? "all interfaces, port " + nn.address().getPort()
              : nn.address().getHostString() + ":" + nn.address().getPort();
      UntilStopped.run(
          nn,
          spec.commandLine().getOut(),
          "name node listening on "
              + where
              + " (block size "
              + nn.blockSize()
              + " bytes; "
              + keeps
              + ")"
              + (nn.httpUrl() == null ? "" : "; status pages and metrics at " + nn.httpUrl())
              + "; Ctrl-C stops");
    }
    return 0;
  }
}
