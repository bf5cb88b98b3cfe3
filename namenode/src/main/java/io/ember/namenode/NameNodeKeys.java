package io.ember.namenode;

import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Configuration keys of the name node. */
public final class NameNodeKeys {
  private NameNodeKeys() {}

  /** The address the name node binds. */
  public static final ConfigKey<String> BIND_HOST =
      ConfigKey.ofString(
          "ember.namenode.bind-host",
          "0.0.0.0",
          s -> !s.isBlank(),
          "a host",
          "address the name node listens on");

  /** The port the name node binds; 0 lets the OS pick. */
  public static final ConfigKey<Integer> PORT =
      ConfigKey.ofInt(
          "ember.namenode.port",
          EmberKeys.DEFAULT_NAMENODE_PORT,
          0,
          65535,
          "port the name node listens on (0: any free port)");

  /** Time without a heartbeat after which a data node is marked lost. */
  public static final ConfigKey<Duration> DATANODE_TIMEOUT =
      ConfigKey.ofDuration(
          "ember.namenode.datanode-timeout",
          "10s",
          Duration.ofMillis(50),
          Duration.ofHours(1),
          "time without a heartbeat after which a data node is lost");

  /** The order in which full storage classes spill to others. */
  public static final ConfigKey<String> STORAGE_CLASS_ORDER =
      ConfigKey.ofString(
          "ember.namenode.storage-class-order",
          "dram,nvmf",
          NameNodeKeys::validOrder,
          "a comma-separated list of storage classes (e.g. dram,nvmf)",
          "spill order: a create that prefers a class falls back to the classes after it");

  /**
   * Threads that run requests off the network threads; 0 runs each request on the network thread
   * that read it. {@code ember bench namenode} measures both.
   */
  public static final ConfigKey<Integer> HANDLER_THREADS =
      ConfigKey.ofInt(
          "ember.namenode.handler-threads",
          0,
          0,
          1024,
          "threads that run requests (0: the network threads that read them)");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(BIND_HOST, PORT, DATANODE_TIMEOUT, STORAGE_CLASS_ORDER, HANDLER_THREADS);

  /** Parses {@link #STORAGE_CLASS_ORDER}. */
  public static List<StorageClass> parseOrder(String text) {
    List<StorageClass> order = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      StorageClass sc = StorageClass.parse(part);
      if (!order.contains(sc)) {
        order.add(sc);
      }
    }
    return order;
  }

  private static boolean validOrder(String text) {
    try {
      return !parseOrder(text).isEmpty();
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
