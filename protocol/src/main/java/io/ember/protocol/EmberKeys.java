package io.ember.protocol;

import java.time.Duration;
import java.util.List;

/** Configuration keys shared by every Ember process. */
public final class EmberKeys {
  private EmberKeys() {}

  /** The default port of the name node. */
  public static final int DEFAULT_NAMENODE_PORT = 9060;

  /** Where clients and data nodes find the name node. */
  public static final ConfigKey<String> NAMENODE_ADDRESS =
      ConfigKey.ofString(
          "ember.namenode.address",
          "127.0.0.1:" + DEFAULT_NAMENODE_PORT,
          s -> HostPort.tryParse(s, DEFAULT_NAMENODE_PORT) != null,
          "host:port",
          "host:port of the name node");

  /** The cluster's block size: a power of two. */
  public static final ConfigKey<Long> BLOCK_SIZE =
      ConfigKey.ofSize(
          "ember.block-size",
          "1m",
          4096,
          64L << 20,
          "size of a block; set on the name node, which tells the data nodes");

  /** Largest frame any Ember server or client accepts; bigger ones close the connection. */
  public static final ConfigKey<Long> MAX_FRAME_BYTES =
      ConfigKey.ofSize(
          "ember.rpc.max-frame-size",
          "4m",
          64 << 10,
          1L << 30,
          "largest frame accepted; must exceed ember.client.transfer-size");

  /** Time after which an RPC fails with a timeout. */
  public static final ConfigKey<Duration> RPC_TIMEOUT =
      ConfigKey.ofDuration(
          "ember.rpc.timeout",
          "30s",
          Duration.ofMillis(10),
          Duration.ofHours(1),
          "time an RPC may take before it fails");

  /** Time a connection attempt may take. */
  public static final ConfigKey<Duration> CONNECT_TIMEOUT =
      ConfigKey.ofDuration(
          "ember.rpc.connect-timeout",
          "5s",
          Duration.ofMillis(10),
          Duration.ofMinutes(5),
          "time a connection attempt may take");

  /** Netty transport: auto (epoll where it loads), epoll or nio. */
  public static final ConfigKey<String> RPC_TRANSPORT =
      ConfigKey.ofString(
          "ember.rpc.transport",
          "auto",
          s -> s.matches("auto|epoll|nio"),
          "auto, epoll or nio",
          "network transport");

  /** Event loop threads of a server or client; 0 means one per core. */
  public static final ConfigKey<Integer> IO_THREADS =
      ConfigKey.ofInt("ember.rpc.io-threads", 0, 0, 256, "network threads; 0 = one per core");

  /**
   * How long a server's network thread keeps polling its sockets after its last event before it
   * sleeps; 0 sleeps at once.
   */
  public static final ConfigKey<Duration> BUSY_POLL =
      ConfigKey.ofDuration(
          "ember.rpc.busy-poll",
          "0",
          Duration.ZERO,
          Duration.ofSeconds(1),
          "how long a server's network thread polls for the next request before it sleeps (e.g."
              + " 100us; 0: sleeps at once); polling saves a thread wake-up per request at the cost"
              + " of up to this much CPU after each burst of requests");

  /** Time between a data node's heartbeats to the name node. */
  public static final ConfigKey<Duration> HEARTBEAT_INTERVAL =
      ConfigKey.ofDuration(
          "ember.datanode.heartbeat-interval",
          "1s",
          Duration.ofMillis(10),
          Duration.ofMinutes(5),
          "time between a data node's heartbeats to the name node");

  /**
   * Whether servers count and time requests and bytes for {@code /metrics}; off, {@code /metrics}
   * answers 404 and the status pages stay.
   */
  public static final ConfigKey<Boolean> METRICS_ENABLED =
      ConfigKey.ofBoolean(
          "ember.metrics.enabled", true, "servers count requests and bytes for /metrics");

  /**
   * TLS 1.3 with certificates on both sides on every Ember connection (RPC, and DRAM data over TCP;
   * not NVMe/TCP, RDMA or the HTTP status pages): servers require a client certificate signed by a
   * CA in {@link #TLS_CA}, clients check the server's. Every process of a cluster must agree.
   */
  public static final ConfigKey<Boolean> TLS =
      ConfigKey.ofBoolean(
          "ember.security.tls",
          false,
          "TLS 1.3 with certificates on both sides (mutual TLS) on every Ember connection (RPC and"
              + " DRAM data over TCP; not NVMe/TCP, RDMA or the HTTP status pages);"
              + " every process of the cluster must agree");

  /**
   * Authentication on every Ember connection: the same as {@link #TLS}, since callers authenticate
   * with TLS client certificates (or delegation tokens over TLS). Either key turns it on; see
   * {@link #secured}.
   */
  public static final ConfigKey<Boolean> SECURITY_ENABLED =
      ConfigKey.ofBoolean(
          "ember.security.enabled",
          false,
          "authenticated callers, permissions and block tokens on every Ember connection: the"
              + " same as ember.security.tls=true (callers authenticate with TLS certificates)");

  /**
   * Whether {@code config} secures the cluster: {@link #TLS} or {@link #SECURITY_ENABLED}.
   *
   * @throws IllegalArgumentException when either value is not a boolean
   */
  public static boolean secured(EmberConfig config) {
    return config.get(TLS) || config.get(SECURITY_ENABLED);
  }

  /**
   * Password authentication (SCRAM-SHA-256) on name node connections, with or without TLS: the name
   * node takes the users of its credentials file ({@code ember security add-user}), and each
   * process authenticates as {@link #USER} with {@link #PASSWORD}. With it come permissions and
   * block tokens, as under {@link #TLS}; without TLS the bytes are not encrypted. Every process of
   * a cluster must agree.
   */
  public static final ConfigKey<Boolean> SCRAM =
      ConfigKey.ofBoolean(
          "ember.security.scram",
          false,
          "callers authenticate with a user name and password (SCRAM-SHA-256), with permissions"
              + " and block tokens as under TLS; without ember.security.tls the bytes are not"
              + " encrypted; every process of the cluster must agree");

  /** The user a process authenticates as under {@link #SCRAM}. */
  public static final ConfigKey<String> USER =
      ConfigKey.ofString(
          "ember.security.user",
          "",
          s -> s.isEmpty() || Scram.validUser(s),
          "a user name (no spaces or control characters, at most 256 bytes)",
          "the user this process authenticates as under ember.security.scram");

  /** {@link #USER}'s password. */
  public static final ConfigKey<String> PASSWORD =
      ConfigKey.ofSecret(
          "ember.security.password",
          s -> true,
          "a password",
          "the password of ember.security.user (or ember.security.password-file)");

  /** A file whose first line is {@link #USER}'s password, kept out of process listings. */
  public static final ConfigKey<String> PASSWORD_FILE =
      ConfigKey.ofString(
          "ember.security.password-file",
          "",
          s -> true,
          "a path",
          "a file whose first line is the password of ember.security.user");

  /**
   * Whether {@code config} authenticates callers: by certificates ({@link #secured}) or by
   * passwords ({@link #SCRAM}).
   *
   * @throws IllegalArgumentException when a value is not a boolean
   */
  public static boolean authenticates(EmberConfig config) {
    return secured(config) || config.get(SCRAM);
  }

  /**
   * The password this process authenticates with: {@link #PASSWORD}, else the first line of {@link
   * #PASSWORD_FILE}; empty when neither is set.
   *
   * @throws IllegalArgumentException when the password file cannot be read
   */
  public static String password(EmberConfig config) {
    String password = config.get(PASSWORD);
    String file = config.get(PASSWORD_FILE);
    if (!password.isEmpty() || file.isEmpty()) {
      return password;
    }
    try {
      java.util.List<String> lines = java.nio.file.Files.readAllLines(java.nio.file.Path.of(file));
      return lines.isEmpty() ? "" : lines.get(0);
    } catch (java.io.IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          PASSWORD_FILE.name() + ": cannot read " + file + " (" + e.getMessage() + ")", e);
    }
  }

  /**
   * How a client authenticates to the name node under {@code config}: a password when {@link
   * #SCRAM} is on and one is set, else a delegation token when one is set and there is no
   * certificate to show (under TLS) or password to prove (under SCRAM); null when it has nothing to
   * say, or nothing is asked.
   *
   * @throws IllegalArgumentException for a token that does not decode, or an unreadable password
   *     file
   */
  public static Greeting greeting(EmberConfig config) {
    if (secured(config) && !config.get(TLS_CERTIFICATE).isEmpty()) {
      return null; // its certificate says who it is
    }
    String user = config.get(USER);
    if (config.get(SCRAM) && !user.isEmpty()) {
      String password = password(config);
      if (password.isEmpty()) {
        throw new IllegalArgumentException(
            USER.name()
                + " is "
                + user
                + ", and neither "
                + PASSWORD.name()
                + " nor "
                + PASSWORD_FILE.name()
                + " gives a password");
      }
      return Greeting.scram(user, password);
    }
    String token = config.get(DELEGATION_TOKEN);
    if (token.isEmpty() || !authenticates(config)) {
      return null;
    }
    try {
      return Greeting.token(DelegationToken.decodeString(token));
    } catch (EmberException e) {
      throw new IllegalArgumentException(DELEGATION_TOKEN.name() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Whether this process can say who it is by itself: a certificate under {@link #TLS}, or a user
   * under {@link #SCRAM}. One that cannot (a Spark executor, a Hadoop task) needs a delegation
   * token on a cluster that {@link #authenticates}.
   */
  public static boolean hasOwnIdentity(EmberConfig config) {
    return (secured(config) && !config.get(TLS_CERTIFICATE).isEmpty())
        || (config.get(SCRAM) && !config.get(USER).isEmpty());
  }

  /** This process's certificate chain, PEM. */
  public static final ConfigKey<String> TLS_CERTIFICATE =
      ConfigKey.ofString(
          "ember.security.tls.certificate",
          "",
          s -> true,
          "a path",
          "PEM certificate chain this process presents (a server's names its hosts; a client's"
              + " common name is its user)");

  /** The key of {@link #TLS_CERTIFICATE}, PEM, PKCS#8, unencrypted. */
  public static final ConfigKey<String> TLS_KEY =
      ConfigKey.ofString(
          "ember.security.tls.key",
          "",
          s -> true,
          "a path",
          "PEM PKCS#8 private key of that certificate, unencrypted (keep it readable by this"
              + " process's user only)");

  /** The CA certificates peers' certificates must chain to, PEM. */
  public static final ConfigKey<String> TLS_CA =
      ConfigKey.ofString(
          "ember.security.tls.ca",
          "",
          s -> true,
          "a path",
          "PEM CA certificates that peers' certificates must be signed by");

  /** The TLS engine: auto (OpenSSL where netty-tcnative loads), openssl or jdk. */
  public static final ConfigKey<String> TLS_PROVIDER =
      ConfigKey.ofString(
          "ember.security.tls.provider",
          "auto",
          s -> s.equals("auto") || s.equals("openssl") || s.equals("jdk"),
          "auto, openssl or jdk",
          "TLS engine: auto (OpenSSL through netty-tcnative where it loads, else the JDK's),"
              + " openssl or jdk");

  /**
   * A delegation token ({@link DelegationToken#encodeToString}) a client without a certificate
   * authenticates to the name node with, under {@link #TLS}: it acts as the token's owner. Hadoop
   * clients find theirs in the job's credentials instead.
   */
  public static final ConfigKey<String> DELEGATION_TOKEN =
      ConfigKey.ofSecret(
          "ember.security.delegation-token",
          s -> {
            try {
              return s.isEmpty() || DelegationToken.decodeString(s) != null;
            } catch (EmberException e) {
              return false;
            }
          },
          "a delegation token, as `ember security token` prints it",
          "delegation token a client without a certificate authenticates with (under TLS)");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          NAMENODE_ADDRESS,
          BLOCK_SIZE,
          MAX_FRAME_BYTES,
          RPC_TIMEOUT,
          CONNECT_TIMEOUT,
          RPC_TRANSPORT,
          IO_THREADS,
          BUSY_POLL,
          HEARTBEAT_INTERVAL,
          METRICS_ENABLED,
          SECURITY_ENABLED,
          TLS,
          TLS_CERTIFICATE,
          TLS_KEY,
          TLS_CA,
          TLS_PROVIDER,
          DELEGATION_TOKEN,
          SCRAM,
          USER,
          PASSWORD,
          PASSWORD_FILE);

  /** Event loop threads for a configuration. */
  public static int ioThreads(EmberConfig config) {
    int n = config.get(IO_THREADS);
    return n == 0 ? Runtime.getRuntime().availableProcessors() : n;
  }
}
