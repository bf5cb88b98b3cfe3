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

  @Option(names = "--host", description = "address to listen on (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--port", description = "port to listen on (default 9060; 0: any free port)")
  Integer port;

  @Override
  public Integer call() throws Exception {
    EmberConfig config = options.load();
    if (host != null) {
      config = config.with(NameNodeKeys.BIND_HOST, host);
    }
    if (port != null) {
      config = config.with(NameNodeKeys.PORT, port.toString());
    }
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
              + " bytes); Ctrl-C stops");
    }
    return 0;
  }
}
