package io.ember.namenode;

import io.ember.http.StatusServer;
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

  /** The port of the status pages and {@code /metrics}: auto, off or a port. */
  public static final ConfigKey<String> HTTP_PORT =
      ConfigKey.ofString(
          "ember.namenode.http-port",
          StatusServer.PORT_AUTO,
          StatusServer::validPort,
          "auto, off or a port",
          "port of the status pages and /metrics (auto: the RPC port + 1, or any free port when"
              + " that is 0; 0: any free port; off: none)");

  /**
   * Identities that every permission check lets through; empty names the user the name node runs
   * as, as HDFS does.
   */
  public static final ConfigKey<String> SUPERUSERS =
      ConfigKey.ofString(
          "ember.security.superusers",
          "",
          s -> true,
          "a comma-separated list of identities",
          "identities every permission check lets through (empty: the user the name node runs as);"
              + " under ember.security.tls an identity is a certificate's common name");

  /** Members of this group are super-users too; the root directory's group. */
  public static final ConfigKey<String> SUPERUSER_GROUP =
      ConfigKey.ofString(
          "ember.security.superuser-group",
          "supergroup",
          s ->
              !s.isBlank()
                  && !s.contains(",")
                  && s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                      <= io.ember.protocol.Permissions.MAX_NAME_BYTES,
          "a group name",
          "members of this group are super-users; the root directory's group");

  /**
   * The users who may authenticate with a password under {@link EmberKeys#SCRAM}: a file that
   * {@code ember security add-user} writes, of salted verifiers.
   */
  public static final ConfigKey<String> CREDENTIALS =
      ConfigKey.ofString(
          "ember.security.credentials",
          "",
          s -> true,
          "a path",
          "file of the users who authenticate with a password under ember.security.scram, as"
              + " `ember security add-user` writes it (read again when it changes)");

  /** The file that puts identities in groups; empty puts each only in a group of its own name. */
  public static final ConfigKey<String> GROUPS =
      ConfigKey.ofString(
          "ember.security.groups",
          "",
          s -> true,
          "a path",
          "file of lines 'group: user, user' that puts identities in groups (each identity is also"
              + " in a group of its own name)");

  /**
   * The mode a new namespace's root directory gets: by default anyone may make entries there, and
   * only an entry's owner removes it, as in /tmp.
   */
  public static final ConfigKey<String> ROOT_PERMISSION =
      ConfigKey.ofString(
          "ember.namenode.root-permission",
          "1777",
          NameNodeKeys::validMode,
          "an octal mode such as 1777 or 755",
          "mode of a new namespace's root directory (1777: anyone makes entries, only their"
              + " owner removes them)");

  private static boolean validMode(String text) {
    try {
      io.ember.protocol.Permissions.parseOctal(text);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

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

  /**
   * The directory of the name node's journal and checkpoints; empty keeps the namespace in memory
   * only, lost when the name node stops. {@code ember namenode --format} prepares it.
   */
  public static final ConfigKey<String> DIR =
      ConfigKey.ofString(
          "ember.namenode.dir",
          "",
          s -> true,
          "a directory, or empty",
          "directory of the journal and checkpoints (empty: the namespace lives in memory only)");

  /** When an acknowledged change is on disk. */
  public static final ConfigKey<String> JOURNAL_SYNC =
      ConfigKey.ofString(
          "ember.namenode.journal.sync",
          "always",
          NameNodeKeys::validSync,
          "always, batch or none",
          "always: forced to disk before a change is acknowledged (survives power loss); batch:"
              + " forced within 100 ms; none: written by the OS when it likes (survives the"
              + " process only)");

  /** Journal records after which a checkpoint is written. */
  public static final ConfigKey<Integer> CHECKPOINT_RECORDS =
      ConfigKey.ofInt(
          "ember.namenode.checkpoint.records",
          1_000_000,
          1,
          Integer.MAX_VALUE,
          "journal records after which the namespace is checkpointed");

  /** Time after which a checkpoint is written if anything changed. */
  public static final ConfigKey<Duration> CHECKPOINT_INTERVAL =
      ConfigKey.ofDuration(
          "ember.namenode.checkpoint.interval",
          "10m",
          Duration.ofMillis(100),
          Duration.ofDays(7),
          "time after which the namespace is checkpointed if it changed");

  /**
   * Time without a renewal after which a writer's lease expires and its open files are closed at
   * the length it last reported its data nodes acknowledged.
   */
  public static final ConfigKey<Duration> LEASE_TIMEOUT =
      ConfigKey.ofDuration(
          "ember.namenode.lease-timeout",
          "60s",
          Duration.ofMillis(100),
          Duration.ofDays(1),
          "time without renewal after which a writer's open files are closed at what it wrote");

  /**
   * How long a deallocation that a data node left out of its report waits before the name node
   * sends it again; a report that comes later still counts. The target may still hold the first
   * command (the node sends a batch once its previous one ends, within 10 s, stops waiting for it
   * after 10 s more, and the NVMf host gives a command up after 30 s), and NVMe orders nothing
   * between commands, so a second one sent sooner could complete, the block go to a new file, and
   * the first then zero the new data. Keep it above the data nodes' NVMf command timeout.
   */
  public static final ConfigKey<Duration> DEALLOCATION_RETRY =
      ConfigKey.ofDuration(
          "ember.namenode.deallocation-retry",
          "2m",
          Duration.ofSeconds(1),
          Duration.ofDays(1),
          "time before a deallocation a data node did not report is sent again (keep it above"
              + " the NVMf command timeout, 30 s)");

  /**
   * Identities (besides the name node's own and the super-users) that may act as data nodes under
   * TLS (certificate names) or SCRAM (user names): register, heartbeat, report blocks, and so
   * receive the keys block tokens are signed with.
   */
  public static final ConfigKey<String> DATANODE_IDENTITIES =
      ConfigKey.ofString(
          "ember.security.datanodes",
          "",
          s -> true,
          "a comma-separated list of identities",
          "identities that may act as data nodes under TLS, besides the name node's own"
              + " certificate's and the super-users");

  /**
   * How long a block token holds (under TLS or SCRAM), and how often the key that signs them
   * changes. A reader whose token expired asks for its locations again; a writer asks for its block
   * again half way to its token's expiry.
   */
  public static final ConfigKey<Duration> BLOCK_TOKEN_LIFETIME =
      ConfigKey.ofDuration(
          "ember.security.block-token.lifetime",
          "10h",
          // Writers renew half way, and at most once a second.
          Duration.ofSeconds(2),
          Duration.ofDays(7),
          "how long a block token holds, and how often its signing key changes (under TLS or SCRAM)");

  /**
   * How long a token that grants writing holds, at most: data nodes do not learn that a file was
   * closed, so this bounds how long its former writer could still change its bytes. Writers ask for
   * a fresh token half way to its expiry, one call per block each half of this.
   */
  public static final ConfigKey<Duration> BLOCK_TOKEN_WRITE_LIFETIME =
      ConfigKey.ofDuration(
          "ember.security.block-token.write-lifetime",
          "10m",
          // Writers renew half way, and at most once a second.
          Duration.ofSeconds(2),
          Duration.ofDays(7),
          "how long a block token that grants writing holds at most (a closed file's former"
              + " writer can change it until then); writers renew theirs half way, and data nodes"
              + " judge expiry by their own clocks, so keep those well within it of the name"
              + " node's");

  /**
   * Whether the name node connects to the address a registering data node advertises (its RPC port,
   * or its NVMe/TCP target) before it takes the registration: a node behind NAT or a container
   * network that advertises an address nobody can reach is refused at once, with the address named,
   * instead of handing out locations every reader fails on.
   */
  public static final ConfigKey<Boolean> PROBE_DATANODES =
      ConfigKey.ofBoolean(
          "ember.namenode.probe-datanodes",
          true,
          "refuse a data node whose advertised address the name node cannot connect to");

  /**
   * How long a delegation token holds after it is issued or renewed; its renewer renews it before
   * then, up to {@link #DELEGATION_TOKEN_MAX_LIFETIME}.
   */
  public static final ConfigKey<Duration> DELEGATION_TOKEN_RENEW_INTERVAL =
      ConfigKey.ofDuration(
          "ember.namenode.delegation-token.renew-interval",
          "1d",
          Duration.ofSeconds(1),
          Duration.ofDays(365),
          "time a delegation token holds after it is issued or renewed");

  /** The longest a delegation token holds, however often it is renewed. */
  public static final ConfigKey<Duration> DELEGATION_TOKEN_MAX_LIFETIME =
      ConfigKey.ofDuration(
          "ember.namenode.delegation-token.max-lifetime",
          "7d",
          Duration.ofSeconds(1),
          Duration.ofDays(365),
          "longest a delegation token holds, however often it is renewed");

  /**
   * How often the name node starts signing delegation tokens with a new key; a key is kept until
   * the last token it signed cannot be renewed any more.
   */
  public static final ConfigKey<Duration> DELEGATION_KEY_UPDATE_INTERVAL =
      ConfigKey.ofDuration(
          "ember.namenode.delegation-token.key-update-interval",
          "1d",
          Duration.ofSeconds(1),
          Duration.ofDays(365),
          "how often delegation tokens start being signed with a new key");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          BIND_HOST,
          PORT,
          DATANODE_TIMEOUT,
          STORAGE_CLASS_ORDER,
          HANDLER_THREADS,
          HTTP_PORT,
          DIR,
          JOURNAL_SYNC,
          CHECKPOINT_RECORDS,
          CHECKPOINT_INTERVAL,
          LEASE_TIMEOUT,
          DEALLOCATION_RETRY,
          PROBE_DATANODES,
          SUPERUSERS,
          CREDENTIALS,
          SUPERUSER_GROUP,
          GROUPS,
          ROOT_PERMISSION,
          DATANODE_IDENTITIES,
          BLOCK_TOKEN_LIFETIME,
          BLOCK_TOKEN_WRITE_LIFETIME,
          DELEGATION_TOKEN_RENEW_INTERVAL,
          DELEGATION_TOKEN_MAX_LIFETIME,
          DELEGATION_KEY_UPDATE_INTERVAL);

  private static boolean validSync(String text) {
    try {
      Journal.Sync.parse(text);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

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
