package io.ember.cli;

import io.ember.namenode.NameNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code ember namenode}: runs a name node until stopped. */
@Command(name = "namenode", mixinStandardHelpOptions = true,
    description = "Run a name node until Ctrl-C.")
final class NameNodeCommand implements Callable<Integer> {
  @Mixin ConfigOptions options;

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
    CountDownLatch stopped = new CountDownLatch(1);
    try (NameNode nn = NameNode.start(config)) {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        nn.close();
        stopped.countDown();
      }));
      System.out.println("name node listening on " + nn.address().getHostString() + ":"
          + nn.address().getPort() + " (block size " + nn.blockSize() + " bytes); Ctrl-C stops");
      stopped.await();
    }
    return 0;
  }
}
