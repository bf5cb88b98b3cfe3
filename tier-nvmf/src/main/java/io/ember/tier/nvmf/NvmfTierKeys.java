package io.ember.tier.nvmf;

import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import java.time.Duration;
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
   * How long a client's NVMf network threads keep polling their connections after their last event
   * before they sleep; zero sleeps at once.
   */
  public static final ConfigKey<Duration> BUSY_POLL =
      ConfigKey.ofDuration(
          "ember.client.nvmf.busy-poll",
          "0",
          Duration.ZERO,
          Duration.ofSeconds(1),
          "how long a client's NVMf network threads poll for the next completion or command before"
              + " they sleep (e.g. 10ms; 0: they sleep at once); polling saves thread wake-ups on"
              + " small I/O at the cost of up to this much CPU per thread after each burst");

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
      List.of(QUEUES, QUEUE_DEPTH, BUSY_POLL, HOST_NQN, DHCHAP_SECRET, DHCHAP_CTRL_SECRET);

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
