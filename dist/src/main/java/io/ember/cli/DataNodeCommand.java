package io.ember.cli;

import io.ember.datanode.dram.DramDataNode;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code ember datanode}: runs a data node of one tier. */
@Command(
    name = "datanode",
    mixinStandardHelpOptions = true,
    description = "Run a data node until Ctrl-C.",
    subcommands = {DataNodeCommand.Dram.class, DataNodeCommand.Nvmf.class})
final class DataNodeCommand implements Runnable {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new picocli.CommandLine.ParameterException(
        spec.commandLine(), "name the tier: ember datanode dram|nvmf ...");
  }

  /** {@code ember datanode dram}. */
  @Command(
      name = "dram",
      mixinStandardHelpOptions = true,
      description = "Run a DRAM data node: memory served as blocks of storage class DRAM.")
  static final class Dram implements Callable<Integer> {
    @Mixin ConfigOptions options;

    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--capacity", description = "memory to offer, e.g. 4g (default 1g)")
    String capacity;

    @Option(
        names = "--namenode",
        paramLabel = "HOST:PORT",
        description = "the name node (default 127.0.0.1:9060)")
    String namenode;

    @Option(
        names = {"--bind", "--host"},
        paramLabel = "HOST",
        description = "address to listen on (default 0.0.0.0: every interface)")
    String host;

    @Option(names = "--port", description = "port to listen on (default: any free port)")
    Integer port;

    @Option(
        names = {"--advertise", "--advertise-host"},
        paramLabel = "HOST",
        description =
            "host clients and the name node connect to, which the name node checks it can reach"
                + " (default: the bind address, or this machine's host name when binding every"
                + " interface)")
    String advertiseHost;

    @Option(
        names = "--transport",
        paramLabel = "tcp|rdma",
        description =
            "how clients reach the blocks: tcp (default), or rdma: one-sided RDMA READ and WRITE"
                + " to the registered memory (needs an RDMA device, libdisni and --bind set to"
                + " the device's address; clients without RDMA still use TCP)")
    String transport;

    @Option(
        names = "--rdma-port",
        description = "RDMA port with --transport rdma (default: the same number as --port)")
    Integer rdmaPort;

    @Override
    public Integer call() throws Exception {
      EmberConfig config = options.load();
      if (transport != null) {
        config = config.with(DramDataNodeKeys.TRANSPORT, transport);
      }
      if (rdmaPort != null) {
        config = config.with(DramDataNodeKeys.RDMA_PORT, rdmaPort.toString());
      }
      if (capacity != null) {
        config = config.with(DramDataNodeKeys.CAPACITY, capacity);
      }
      if (namenode != null) {
        config = config.with(EmberKeys.NAMENODE_ADDRESS, namenode);
      }
      if (host != null) {
        config = config.with(DramDataNodeKeys.BIND_HOST, host);
      }
      if (port != null) {
        config = config.with(DramDataNodeKeys.PORT, port.toString());
      }
      if (advertiseHost != null) {
        config = config.with(DramDataNodeKeys.ADVERTISE_HOST, advertiseHost);
      }
      try (DramDataNode dn = DramDataNode.start(config)) {
        UntilStopped.run(
            dn,
            spec.commandLine().getOut(),
            "DRAM data node serving "
                + dn.capacity()
                + " bytes at "
                + dn.endpoint()
                + (dn.rdmaPort() > 0 ? " (RDMA on port " + dn.rdmaPort() + ")" : "")
                + " for name node "
                + config.get(EmberKeys.NAMENODE_ADDRESS)
                + statusPage(dn.httpUrl())
                + "; Ctrl-C stops");
      }
      return 0;
    }
  }

  /** {@code ember datanode nvmf}. */
  @Command(
      name = "nvmf",
      mixinStandardHelpOptions = true,
      description =
          "Run an NVMf data node: registers an NVMe namespace behind an NVMe-oF target "
              + "as blocks of storage class NVMf. Clients reach the target directly.")
  static final class Nvmf implements Callable<Integer> {
    @Mixin ConfigOptions options;

    @Option(
        names = "--target",
        paramLabel = "URI",
        description = "the namespace: nvmf+tcp://host:port/subsystem-nqn[/nsid]")
    String target;

    @Option(
        names = "--embedded-target",
        paramLabel = "FILE",
        description = "start an embedded NVMe/TCP target backed by FILE instead")
    String embeddedFile;

    @Option(names = "--size", description = "size of the embedded target's namespace (default 1g)")
    String size;

    @Option(
        names = "--bind",
        paramLabel = "HOST",
        description =
            "address the status page listens on (default 0.0.0.0: every interface); the node"
                + " serves no data itself, and an embedded target listens on loopback only")
    String bind;

    @Option(
        names = "--namenode",
        paramLabel = "HOST:PORT",
        description = "the name node (default 127.0.0.1:9060)")
    String namenode;

    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
      if ((target == null) == (embeddedFile == null)) {
        throw new picocli.CommandLine.ParameterException(
            spec.commandLine(), "give either --target URI or --embedded-target FILE");
      }
      EmberConfig config = options.load();
      if (target != null) {
        config = config.with(io.ember.datanode.nvmf.NvmfDataNodeKeys.TARGET, target);
      } else {
        config = config.with(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_FILE, embeddedFile);
      }
      if (size != null) {
        config = config.with(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, size);
      }
      if (bind != null) {
        config = config.with(io.ember.datanode.nvmf.NvmfDataNodeKeys.HTTP_HOST, bind);
      }
      if (namenode != null) {
        config = config.with(EmberKeys.NAMENODE_ADDRESS, namenode);
      }
      try (io.ember.datanode.nvmf.NvmfDataNode dn =
          io.ember.datanode.nvmf.NvmfDataNode.start(config)) {
        UntilStopped.run(
            dn,
            spec.commandLine().getOut(),
            "NVMf data node serving "
                + dn.capacity()
                + " bytes of "
                + dn.target()
                + " for name node "
                + config.get(EmberKeys.NAMENODE_ADDRESS)
                + statusPage(dn.httpUrl())
                + "; Ctrl-C stops");
      }
      return 0;
    }
  }

  private static String statusPage(String url) {
    return url == null ? "" : "; status page and metrics at " + url;
  }
}
