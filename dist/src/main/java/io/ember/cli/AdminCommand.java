package io.ember.cli;

import io.ember.client.EmberClient;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberException;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DatanodeInfo;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ember admin}: the cluster as the name node sees it, like {@code hdfs dfsadmin -report}.
 * Exits 0, 1 when the name node cannot answer (one line saying why), 255 on usage errors.
 */
@Command(
    name = "admin",
    mixinStandardHelpOptions = true,
    description = "Cluster administration: report, datanodes.",
    subcommands = {CommandLine.HelpCommand.class})
final class AdminCommand implements Runnable {
  @Mixin ConfigOptions options;

  @Option(
      names = "--namenode",
      paramLabel = "HOST:PORT",
      scope = CommandLine.ScopeType.INHERIT,
      converter = FsCommand.NameNodeAddress.class,
      description =
          "the name node, HOST[:PORT] (default 127.0.0.1:9060; the port is 9060 when left out)")
  String namenode;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "missing admin command");
  }

  @Command(
      name = "report",
      mixinStandardHelpOptions = true,
      description =
          "Capacity and use per storage class, then every data node: state, address, capacity,"
              + " use, last heartbeat, blocks being trimmed or found overwritten.")
  int report() throws IOException {
    return withClient(
        "report",
        client -> {
          List<ClassUsage> classes = client.df();
          List<DatanodeInfo> nodes = client.datanodes();
          PrintWriter out = out();
          long capacity = 0;
          long used = 0;
          for (ClassUsage c : classes) {
            capacity += c.capacityBytes();
            used += c.usedBytes();
          }
          out.printf(
              Locale.ROOT,
              "Configured capacity: %d (%s)%nUsed: %d (%s)%nFree: %d (%s)%n",
              capacity,
              ConfigKey.formatSize(capacity),
              used,
              ConfigKey.formatSize(used),
              capacity - used,
              ConfigKey.formatSize(capacity - used));
          for (ClassUsage c : classes) {
            out.printf(
                Locale.ROOT,
                "  %s: %s of %s used, %d live and %d lost data nodes%n",
                c.storageClass().displayName(),
                ConfigKey.formatSize(c.usedBytes()),
                ConfigKey.formatSize(c.capacityBytes()),
                c.liveNodes(),
                c.lostNodes());
          }
          long live = nodes.stream().filter(n -> n.state().equals("live")).count();
          out.printf(
              Locale.ROOT,
              "%nData nodes: %d (%d live, %d not)%n",
              nodes.size(),
              live,
              nodes.size() - live);
          for (DatanodeInfo n : nodes) {
            out.printf(
                Locale.ROOT,
                "%nData node %d: %s%n  State: %s%n  Storage class: %s (tier %s)%n"
                    + "  Capacity: %d (%s)%n  Used: %d (%s)%n  Free: %d (%s)%n"
                    + "  Last heartbeat: %.1f s ago%n  Blocks being trimmed: %d%n"
                    + "  Blocks found overwritten: %d%n",
                n.id(),
                n.endpoint(),
                n.state(),
                n.storageClass().displayName(),
                n.tier(),
                n.capacityBytes(),
                ConfigKey.formatSize(n.capacityBytes()),
                n.usedBytes(),
                ConfigKey.formatSize(n.usedBytes()),
                n.freeBytes(),
                ConfigKey.formatSize(n.freeBytes()),
                n.lastHeartbeatMillisAgo() / 1000.0,
                n.trimmingBlocks(),
                n.overwrittenBlocks());
          }
        });
  }

  @Command(
      name = "datanodes",
      mixinStandardHelpOptions = true,
      description = "One line per data node: id, state, class, capacity, used, heartbeat, address.")
  int datanodes() throws IOException {
    return withClient(
        "datanodes",
        client -> {
          PrintWriter out = out();
          String row = "%4s %-10s %-6s %12s %12s %9s  %s%n";
          out.printf(
              Locale.ROOT, row, "id", "state", "class", "capacity", "used", "heartbeat", "address");
          for (DatanodeInfo n : client.datanodes()) {
            out.printf(
                Locale.ROOT,
                row,
                n.id(),
                n.state(),
                n.storageClass().displayName(),
                ConfigKey.formatSize(n.capacityBytes()),
                ConfigKey.formatSize(n.usedBytes()),
                String.format(Locale.ROOT, "%.1fs", n.lastHeartbeatMillisAgo() / 1000.0),
                n.endpoint());
          }
        });
  }

  private interface Action {
    void apply(EmberClient client) throws IOException;
  }

  private int withClient(String command, Action action) throws IOException {
    try (EmberClient client = FsCommand.connect(options, namenode)) {
      action.apply(client);
      out().flush();
      return 0;
    } catch (EmberException | IllegalArgumentException e) {
      PrintWriter err = spec.commandLine().getErr();
      err.println("ember admin " + command + ": " + EmberCli.oneLine(e));
      err.flush();
      return 1;
    }
  }

  private PrintWriter out() {
    return spec.commandLine().getOut();
  }
}
