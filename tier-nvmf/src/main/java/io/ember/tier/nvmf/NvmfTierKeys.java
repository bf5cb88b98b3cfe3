package io.ember.tier.nvmf;

import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import java.util.List;

/** Configuration keys of the NVMf tier's client side. */
public final class NvmfTierKeys {
  private NvmfTierKeys() {}

  /** I/O queues a client opens per target. */
  public static final ConfigKey<Integer> QUEUES =
      ConfigKey.ofInt("ember.client.nvmf.queues", 2, 1, 64, "I/O queues per NVMf target");

  /** Commands in flight per client queue. */
  public static final ConfigKey<Integer> QUEUE_DEPTH =
      ConfigKey.ofInt(
          "ember.client.nvmf.queue-depth", 64, 2, 1024, "commands in flight per NVMf queue");

  /**
   * Threads per NVMf target that poll the client's connections to it instead of sleeping until data
   * arrives: lower latency for small I/O, at the price of a whole core per thread, busy or idle.
   */
  public static final ConfigKey<Integer> POLL_THREADS =
      ConfigKey.ofInt(
          "ember.client.nvmf.poll-threads",
          0,
          0,
          64,
          "threads per NVMf target that poll its connections instead of sleeping; each takes a whole"
              + " core (0: none, threads sleep until data arrives)");

  /**
   * The host NQN this process connects to NVMf targets with, data nodes and clients alike; a target
   * that keeps per-host keys knows the host by it.
   */
  public static final ConfigKey<String> HOST_NQN =
      ConfigKey.ofString(
          "ember.nvmf.host-nqn",
          "",
          s -> s.length() <= 223,
          "an NQN of at most 223 bytes",
          "host NQN for NVMf connections (empty: one made from a random host id per process)");

  /** The host's DH-HMAC-CHAP secret, for targets that ask for in-band authentication. */
  public static final ConfigKey<String> DHCHAP_SECRET =
      ConfigKey.ofSecret(
          "ember.nvmf.dhchap-secret",
          NvmfTierKeys::secretOrEmpty,
          "a DHHC-1:XX:<base64>: secret (nvme gen-dhchap-key or ember security dhchap-key)",
          "this host's DH-HMAC-CHAP secret for NVMf targets that require authentication (empty:"
              + " none)");

  /** The controller's DH-HMAC-CHAP secret: targets must prove they hold it. */
  public static final ConfigKey<String> DHCHAP_CTRL_SECRET =
      ConfigKey.ofSecret(
          "ember.nvmf.dhchap-ctrl-secret",
          NvmfTierKeys::secretOrEmpty,
          "a DHHC-1:XX:<base64>: secret",
          "the DH-HMAC-CHAP secret NVMf targets must prove they hold (bidirectional"
              + " authentication; empty: targets are not asked)");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(QUEUES, QUEUE_DEPTH, POLL_THREADS, HOST_NQN, DHCHAP_SECRET, DHCHAP_CTRL_SECRET);

  private static boolean secretOrEmpty(String s) {
    if (s.isBlank()) {
      return true;
    }
    try {
      DhchapSecret.parse(s);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * Sets the host NQN and DH-HMAC-CHAP secrets of {@code config} on {@code options}.
   *
   * @throws IllegalArgumentException when a controller secret is set without a host secret
   */
  public static NvmfHostOptions.Builder identity(
      NvmfHostOptions.Builder options, EmberConfig config) {
    String nqn = config.get(HOST_NQN);
    if (!nqn.isBlank()) {
      options.hostNqn(nqn);
    }
    String ctrl = config.get(DHCHAP_CTRL_SECRET);
    if (!ctrl.isBlank() && config.get(DHCHAP_SECRET).isBlank()) {
      throw new IllegalArgumentException(
          DHCHAP_CTRL_SECRET.name() + " needs " + DHCHAP_SECRET.name() + " too");
    }
    return options.dhchapSecret(config.get(DHCHAP_SECRET)).dhchapControllerSecret(ctrl);
  }
}
