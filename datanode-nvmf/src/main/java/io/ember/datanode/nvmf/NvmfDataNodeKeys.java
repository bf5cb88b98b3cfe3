package io.ember.datanode.nvmf;

import io.ember.http.StatusServer;
import io.ember.protocol.ConfigKey;
import java.time.Duration;
import java.util.List;

/** Configuration keys of the NVMf data node (the client's are in NvmfTierKeys). */
public final class NvmfDataNodeKeys {
  private NvmfDataNodeKeys() {}

  /** The target namespace the data node exports: nvmf+tcp://host:port/subsystem-nqn[/nsid]. */
  public static final ConfigKey<String> TARGET =
      ConfigKey.ofString(
          "ember.datanode.nvmf.target",
          "",
          s -> true,
          "an NVMf URI (nvmf+tcp://host:port/nqn[/nsid])",
          "target namespace the NVMf data node exports (empty: start an embedded target)");

  /** File backing the embedded target; empty means memory. */
  public static final ConfigKey<String> EMBEDDED_FILE =
      ConfigKey.ofString(
          "ember.datanode.nvmf.embedded-file",
          "",
          s -> true,
          "a file path",
          "file backing the embedded target's namespace (empty: memory)");

  /**
   * Per-host DH-HMAC-CHAP keys of the embedded target: only the hosts listed may connect, each
   * after authenticating (lines {@code HOSTNQN HOST-SECRET [CTRL-SECRET]}).
   */
  public static final ConfigKey<String> EMBEDDED_HOSTS =
      ConfigKey.ofString(
          "ember.datanode.nvmf.embedded-hosts",
          "",
          s -> true,
          "a file path",
          "file of host NQNs and DH-HMAC-CHAP secrets the embedded target admits (empty: any host,"
              + " no authentication)");

  /**
   * How long the embedded target's network threads keep polling their connections after their last
   * event before they sleep; zero sleeps at once.
   */
  public static final ConfigKey<Duration> EMBEDDED_BUSY_POLL =
      ConfigKey.ofDuration(
          "ember.datanode.nvmf.embedded-busy-poll",
          "0",
          Duration.ZERO,
          Duration.ofSeconds(1),
          "how long the embedded target's network threads poll for the next command before they"
              + " sleep (e.g. 10ms; 0: they sleep at once); saves thread wake-ups on small I/O at"
              + " the cost of up to this much CPU per thread after each burst");

  /** Size of the embedded target's namespace. */
  public static final ConfigKey<Long> EMBEDDED_SIZE =
      ConfigKey.ofSize(
          "ember.datanode.nvmf.embedded-size",
          "1g",
          1L << 20,
          1L << 44,
          "size of the embedded target's namespace");

  /** Host the status page listens on. */
  public static final ConfigKey<String> HTTP_HOST =
      ConfigKey.ofString(
          "ember.datanode.nvmf.http-host",
          "0.0.0.0",
          s -> !s.isBlank(),
          "a host name or address",
          "host the NVMf data node's status page and /metrics listen on");

  /**
   * Port of the status page and {@code /metrics}. The node serves no RPC, so {@code auto} is any
   * free port (logged).
   */
  public static final ConfigKey<String> HTTP_PORT =
      ConfigKey.ofString(
          "ember.datanode.nvmf.http-port",
          StatusServer.PORT_AUTO,
          StatusServer::validPort,
          "auto, off or a port",
          "port of the NVMf data node's status page and /metrics (auto or 0: any free port; off:"
              + " none)");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          TARGET,
          EMBEDDED_FILE,
          EMBEDDED_SIZE,
          EMBEDDED_HOSTS,
          EMBEDDED_BUSY_POLL,
          HTTP_HOST,
          HTTP_PORT);
}
