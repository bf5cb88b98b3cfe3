package io.ember.spark;

import io.ember.client.EmberClient;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.StorageClass;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;
import scala.Tuple2;

/**
 * Spark settings of the Ember shuffle, and the one Ember client each JVM shares.
 *
 * <ul>
 *   <li>{@value #NAMENODE}: host:port of Ember's name node (required);
 *   <li>{@value #STORAGE_CLASS}: dram (default) or nvmf; a full class spills to the next;
 *   <li>{@value #ROOT}: the Ember directory under which applications keep their shuffles;
 *   <li>{@code spark.ember.conf.<key>}: any Ember client setting, e.g. {@code
 *       spark.ember.conf.ember.rpc.timeout=10s};
 *   <li>{@value #FALLBACK_POLICY}: when a shuffle goes to Spark's own shuffle instead: {@code auto}
 *       (default: when Ember cannot take it at registration, or it has more reduce partitions than
 *       {@value #FALLBACK_MAX_PARTITIONS}), {@code never} (an application whose name node cannot be
 *       reached at its start fails to start, and a shuffle Ember cannot take fails the action that
 *       made it) or {@code always};
 *   <li>{@value #FALLBACK_MAX_PARTITIONS}: the most reduce partitions a shuffle may have on Ember
 *       under {@code auto}, ignored under the other policies (default: no limit);
 *   <li>{@value #FALLBACK_RETRY_INTERVAL}: under {@code auto}, how long after Ember failed to take
 *       a shuffle (or to start the application) later shuffles go to Spark's own shuffle without
 *       asking Ember, so that a name node that does not answer costs one timeout, not one per
 *       shuffle (default 30s; 0 asks at every shuffle).
 * </ul>
 */
final class EmberShuffleConf {
  static final String NAMENODE = "spark.ember.namenode";
  static final String STORAGE_CLASS = "spark.ember.shuffle.storageClass";
  static final String ROOT = "spark.ember.shuffle.root";
  static final String CONF_PREFIX = "spark.ember.conf.";
  static final String FALLBACK_POLICY = "spark.ember.shuffle.fallback.policy";
  static final String FALLBACK_MAX_PARTITIONS = "spark.ember.shuffle.fallback.maxPartitions";
  static final String FALLBACK_RETRY_INTERVAL = "spark.ember.shuffle.fallback.retryInterval";

  /** When a shuffle goes to Spark's own shuffle rather than to Ember. */
  enum FallbackPolicy {
    AUTO,
    NEVER,
    ALWAYS
  }

  // Volatile so that metrics gauges read it without waiting behind a connect or close.
  private static volatile EmberClient shared;
  private static String sharedKey;

  /** The delegation token the driver handed this executor, or null; see {@link #client}. */
  private static String delegationToken;

  /**
   * Makes this JVM's client authenticate with {@code token} (a driver's delegation token, as {@code
   * DelegationToken.encodeToString} writes it) where its settings give TLS but no certificate and
   * no token of their own: an executor that holds no certificate.
   */
  static synchronized void useDelegationToken(String token) {
    delegationToken = token;
  }

  private EmberShuffleConf() {}

  static StorageClass storageClass(SparkConf conf) {
    return StorageClass.parse(conf.get(STORAGE_CLASS, "dram"));
  }

  /**
   * The fallback policy.
   *
   * @throws IllegalArgumentException when the setting is none of auto, never and always
   */
  static FallbackPolicy fallbackPolicy(SparkConf conf) {
    String value = conf.get(FALLBACK_POLICY, "auto");
    try {
      return FallbackPolicy.valueOf(value.trim().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          FALLBACK_POLICY + " is '" + value + "': use auto, never or always", e);
    }
  }

  /**
   * The most reduce partitions a shuffle may have on Ember under the {@code auto} policy.
   *
   * @throws IllegalArgumentException when the setting is not a positive number
   */
  static int fallbackMaxPartitions(SparkConf conf) {
    String value = conf.get(FALLBACK_MAX_PARTITIONS, Integer.toString(Integer.MAX_VALUE));
    try {
      int max = Integer.parseInt(value.trim());
      if (max > 0) {
        return max;
      }
    } catch (NumberFormatException e) {
      // Reported below, as a number that is not positive is.
    }
    throw new IllegalArgumentException(
        FALLBACK_MAX_PARTITIONS + " is '" + value + "': give a number of partitions above 0");
  }

  /**
   * How long, in milliseconds, shuffles skip Ember after it failed to take one.
   *
   * @throws IllegalArgumentException when the setting is not a duration of 0 or more
   */
  static long fallbackRetryIntervalMillis(SparkConf conf) {
    String value = conf.get(FALLBACK_RETRY_INTERVAL, "30s");
    try {
      long millis = JavaUtils.timeStringAsMs(value);
      if (millis >= 0) {
        return millis;
      }
    } catch (NumberFormatException e) {
      // Reported below, as a negative duration is.
    }
    throw new IllegalArgumentException(
        FALLBACK_RETRY_INTERVAL + " is '" + value + "': give a duration such as 30s, or 0");
  }

  static String root(SparkConf conf) {
    return conf.get(ROOT, "/spark-shuffle");
  }

  /**
   * The Ember client settings of {@code conf}, with the delegation token the driver handed this
   * executor where it has no certificate; connects to nothing.
   *
   * @throws IllegalArgumentException when {@value #NAMENODE} is missing or a setting is bad
   */
  static synchronized EmberConfig config(SparkConf conf) {
    if (!conf.contains(NAMENODE)) {
      throw new IllegalArgumentException(
          NAMENODE + " is not set: give the Ember name node as " + "host:port");
    }
    Map<String, String> settings = new TreeMap<>();
    for (Tuple2<String, String> kv : conf.getAllWithPrefix(CONF_PREFIX)) {
      settings.put(kv._1(), kv._2());
    }
    EmberConfig config =
        EmberConfig.of(settings).with(EmberKeys.NAMENODE_ADDRESS, conf.get(NAMENODE));
    if (delegationToken != null
        && EmberKeys.authenticates(config)
        && !EmberKeys.hasOwnIdentity(config)
        && config.get(EmberKeys.DELEGATION_TOKEN).isEmpty()) {
      config = config.with(EmberKeys.DELEGATION_TOKEN, delegationToken);
    }
    return config;
  }

  /**
   * The JVM's Ember client for this configuration, connected on first use.
   *
   * @throws EmberException when the name node cannot be reached
   * @throws IllegalArgumentException when {@value #NAMENODE} is missing or a setting is bad
   */
  static synchronized EmberClient client(SparkConf conf) throws EmberException {
    EmberConfig config = config(conf);
    String key = config.toString();
    if (shared == null || !key.equals(sharedKey)) {
      if (shared != null) {
        shared.close();
      }
      shared = EmberClient.connect(config);
      sharedKey = key;
    }
    return shared;
  }

  /** The JVM's Ember client if one is connected, without connecting one or waiting. */
  static EmberClient current() {
    return shared;
  }

  /** Closes the shared client (the application is over). */
  static synchronized void closeClient() {
    if (shared != null) {
      shared.close();
      shared = null;
      sharedKey = null;
    }
  }
}
