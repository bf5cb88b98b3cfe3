package io.ember.tier.nvmf;

import io.ember.protocol.ConfigKey;
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

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL = List.of(QUEUES, QUEUE_DEPTH);
}
