package io.ember.spark;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Paths;
import io.ember.protocol.Permissions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.api.ShuffleDataIO;
import org.apache.spark.shuffle.api.ShuffleDriverComponents;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.shuffle.api.ShuffleMapOutputWriter;
import org.apache.spark.shuffle.api.SingleSpillShuffleMapOutputWriter;
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleExecutorComponents;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's shuffle storage plugin ({@code spark.shuffle.sort.io.plugin.class}) for Ember: every map
 * task's output goes to one Ember file that ends in its index, under a directory per application
 * and shuffle. Spark is told the storage is reliable, so losing an executor does not lose its map
 * output, and dynamic allocation works without the external shuffle service. A shuffle the driver
 * hands to Spark's own shuffle instead (see {@link EmberShuffleConf}) is written to executors'
 * local disks, as Spark's own plugin would; a lost executor's share of it is found missing only
 * when a reducer fails to fetch it, and Spark recomputes it then.
 */
public final class EmberShuffleDataIO implements ShuffleDataIO {
  static final String ROOT_KEY = "ember.root";

  /** The delegation token the driver hands its executors, under TLS. */
  static final String TOKEN_KEY = "ember.delegation-token";

  private static final Logger LOG = LoggerFactory.getLogger(EmberShuffleDataIO.class);

  private final SparkConf conf;

  /** Called by Spark with the application's configuration. */
  public EmberShuffleDataIO(SparkConf conf) {
    this.conf = conf;
  }

  @Override
  public ShuffleExecutorComponents executor() {
    return new Executor(conf);
  }

  @Override
  public ShuffleDriverComponents driver() {
    return new Driver(conf);
  }

  /** The directory of one shuffle. */
  static String shuffleDir(String appRoot, int shuffleId) {
    return Paths.child(appRoot, Integer.toString(shuffleId));
  }

  /**
   * Where the driver puts shuffle {@code shuffleId}, of {@code partitions} reduce partitions: on
   * Ember (null, its directory made), or on Spark's own shuffle (why, for the log).
   *
   * @throws UncheckedIOException when Ember cannot take it and the policy is never to fall back
   */
  static String place(int shuffleId, int partitions) {
    Driver driver = Driver.current;
    if (driver == null) {
      // Spark made the plugin's driver side in another class loader, or not at all: the shuffle
      // goes to Ember as it did before fallbacks existed, and the registration makes its directory.
      LOG.warn(
          "Ember shuffle: shuffle {} goes to Ember without the fallback settings applied: this"
              + " class loader has no Ember shuffle driver (is the Ember jar on the class path"
              + " twice?)",
          shuffleId);
      return null;
    }
    return driver.place(shuffleId, partitions);
  }

  /**
   * Shuffles this executor writes to Spark's own local-disk shuffle: the ones whose handle the
   * driver marked. Static because Spark makes the executor components without the shuffle manager
   * that sees the handle. Each map task's writer is made after its handle set or cleared the
   * shuffle's entry here, so an entry left by an earlier application in this JVM (shuffle ids start
   * at 0 again) never decides a later one's writes; unregistering removes it.
   */
  private static final Set<Integer> SPARK_OWN_ON_EXECUTOR = ConcurrentHashMap.newKeySet();

  /** Records whether this executor's map tasks of {@code shuffleId} write to Spark's shuffle. */
  static void sparkOwnOnExecutor(int shuffleId, boolean sparkOwn) {
    if (sparkOwn) {
      SPARK_OWN_ON_EXECUTOR.add(shuffleId);
    } else {
      SPARK_OWN_ON_EXECUTOR.remove(shuffleId);
    }
  }

  private static final class Driver implements ShuffleDriverComponents {
    /** The application's driver side, for the shuffle manager (one SparkContext per JVM). */
    static volatile Driver current;

    private final SparkConf conf;

    /** Each shuffle placed, and whether on Ember (else on Spark's own shuffle). */
    private final Map<Integer, Boolean> onEmber = new ConcurrentHashMap<>();

    private String appRoot;

    private final EmberShuffleConf.FallbackPolicy policy;
    private final int maxPartitions;
    private final long retryIntervalMillis;

    // Under auto, after Ember failed to take a shuffle: why (null while it has not), when, and when
    // the next shuffle may ask it again (System.nanoTime). One shuffle asks per interval.
    private String emberFailure;
    private long emberFailedAt;
    private long nextAskAt;

    /** Whether the application's directory may exist in Ember, for the clean-up to delete. */
    private volatile boolean appRootMade;

    /**
     * Reads the fallback settings at once, so that a bad one stops the application at its start.
     *
     * @throws IllegalArgumentException when a fallback setting is bad
     */
    Driver(SparkConf conf) {
      this.conf = conf;
      this.policy = EmberShuffleConf.fallbackPolicy(conf);
      this.maxPartitions = EmberShuffleConf.fallbackMaxPartitions(conf);
      this.retryIntervalMillis = EmberShuffleConf.fallbackRetryIntervalMillis(conf);
    }

    /**
     * Makes the application's directory, readable by its user alone, under the shuffle root, which
     * every user's applications share: the root is made as /tmp is (anyone makes entries, only
     * their owner removes them), so on a cluster with permissions the first application to run does
     * not shut the others out.
     */
    private static void makeAppRoot(EmberClient client, String root, String appRoot)
        throws EmberException {
      try {
        client.createDirectory(
            root,
            CreateOptions.DEFAULT
                .withCreateParents(true)
                .withPermission(Permissions.STICKY | 0777));
      } catch (EmberException e) {
        if (e.code() != ErrorCode.ALREADY_EXISTS) {
          throw e;
        }
      }
      client.createDirectory(appRoot, CreateOptions.DEFAULT.withPermission(0700));
    }

    @Override
    public Map<String, String> initializeApplication() {
      String app = conf.get("spark.app.id", "app") + "-" + UUID.randomUUID();
      appRoot = Paths.child(EmberShuffleConf.root(conf), app.replaceAll("[^A-Za-z0-9._-]", "_"));
      if (policy != EmberShuffleConf.FallbackPolicy.ALWAYS) {
        try {
          makeAppRoot(EmberShuffleConf.client(conf), EmberShuffleConf.root(conf), appRoot);
          appRootMade = true;
        } catch (EmberException e) {
          if (policy == EmberShuffleConf.FallbackPolicy.NEVER) {
            throw new UncheckedIOException(
                "Ember shuffle: cannot create " + appRoot + ": " + e.getMessage(), e);
          }
          // The first shuffle after the retry interval tries Ember again.
          LOG.warn(
              "Ember shuffle: cannot create {} ({}); shuffles go to Spark's own shuffle while Ember"
                  + " cannot take them",
              appRoot,
              e.getMessage());
          noteFailure(e);
        }
      }
      current = this;
      Map<String, String> executors = new HashMap<>();
      executors.put(ROOT_KEY, appRoot);
      String token = tokenForExecutors();
      if (token != null) {
        executors.put(TOKEN_KEY, token);
      }
      return executors;
    }

    /** The application's delegation token, renewed while it runs; null when none was made. */
    private DelegationToken token;

    private ScheduledExecutorService renewer;

    /**
     * Under TLS, a delegation token for the executors, so that they need no certificate of their
     * own: a new one, renewed by this driver until the application ends, when the driver has a
     * certificate; the driver's own when it holds one instead; null without TLS, or when the name
     * node cannot be reached (executors with certificates still work then).
     */
    private String tokenForExecutors() {
      // Decided from the settings: a driver without TLS, or whose name node just failed it, asks
      // the name node nothing more at start.
      EmberConfig config = EmberShuffleConf.config(conf);
      if (!EmberKeys.authenticates(config) || !appRootMade) {
        return null;
      }
      if (!EmberKeys.hasOwnIdentity(config)) {
        String own = config.get(EmberKeys.DELEGATION_TOKEN);
        return own.isEmpty() ? null : own;
      }
      try {
        EmberClient client = EmberShuffleConf.client(conf);
        token = client.getDelegationToken("");
        long expires = client.renewDelegationToken(token);
        renewer =
            Executors.newSingleThreadScheduledExecutor(
                r -> {
                  Thread t = new Thread(r, "ember-token-renewer");
                  t.setDaemon(true);
                  return t;
                });
        scheduleRenewal(expires);
        return token.encodeToString();
      } catch (EmberException e) {
        LOG.warn(
            "Ember shuffle: no delegation token for the executors ({}); they need certificates of"
                + " their own",
            e.getMessage());
        return null;
      }
    }

    /** Renews the token halfway to {@code expires}, until its maximum life. */
    private void scheduleRenewal(long expires) {
      long now = System.currentTimeMillis();
      long delay = Math.max(1000, (expires - now) / 2);
      var unused =
          renewer.schedule(
              () -> {
                DelegationToken t = token;
                if (t == null) {
                  return;
                }
                try {
                  long next = EmberShuffleConf.client(conf).renewDelegationToken(t);
                  if (next >= t.identifier().maxMillis()) {
                    LOG.warn(
                        "Ember shuffle: the executors' {} reached its maximum life: it expires at"
                            + " {}",
                        t,
                        java.time.Instant.ofEpochMilli(next));
                    return;
                  }
                  scheduleRenewal(next);
                } catch (EmberException | RuntimeException e) {
                  if (expires > System.currentTimeMillis()) {
                    LOG.warn(
                        "Ember shuffle: cannot renew the executors' {} ({}); trying again",
                        t,
                        e.getMessage());
                    scheduleRenewal(expires);
                  } else {
                    LOG.error(
                        "Ember shuffle: the executors' {} expired unrenewed: {}",
                        t,
                        e.getMessage());
                  }
                }
              },
              delay,
              TimeUnit.MILLISECONDS);
    }

    /** Stops renewing the executors' token and cancels it: the application is over. */
    private void endToken() {
      DelegationToken t = token;
      token = null;
      if (renewer != null) {
        renewer.shutdownNow();
      }
      if (t != null) {
        try {
          EmberShuffleConf.client(conf).cancelDelegationToken(t);
        } catch (EmberException e) {
          LOG.warn("Ember shuffle: cannot cancel the executors' {}: {}", t, e.getMessage());
        }
      }
    }

    private synchronized void noteFailure(EmberException e) {
      emberFailure = String.valueOf(e.getMessage());
      emberFailedAt = System.nanoTime();
      nextAskAt = emberFailedAt + TimeUnit.MILLISECONDS.toNanos(retryIntervalMillis);
    }

    private synchronized void noteSuccess() {
      emberFailure = null;
    }

    /**
     * Why this shuffle skips Ember, or null when it should ask. Once the interval has passed, the
     * first caller asks and the others go on skipping until the interval after that, so that
     * shuffles registered together do not each wait for a name node that does not answer.
     */
    private synchronized String skippingEmber() {
      if (emberFailure == null) {
        return null;
      }
      long now = System.nanoTime();
      if (now - nextAskAt >= 0) {
        nextAskAt = now + TimeUnit.MILLISECONDS.toNanos(retryIntervalMillis);
        return null;
      }
      return "Ember could not take a shuffle "
          + TimeUnit.NANOSECONDS.toMillis(now - emberFailedAt)
          + " ms ago ("
          + emberFailure
          + "); shuffles ask it again every "
          + retryIntervalMillis
          + " ms ("
          + EmberShuffleConf.FALLBACK_RETRY_INTERVAL
          + ")";
    }

    String place(int shuffleId, int partitions) {
      String why = null;
      String skipping;
      if (policy == EmberShuffleConf.FallbackPolicy.ALWAYS) {
        why = EmberShuffleConf.FALLBACK_POLICY + " is always";
      } else if (policy == EmberShuffleConf.FallbackPolicy.AUTO && partitions > maxPartitions) {
        why =
            "its "
                + partitions
                + " reduce partitions are more than "
                + EmberShuffleConf.FALLBACK_MAX_PARTITIONS
                + " ("
                + maxPartitions
                + ")";
      } else if (policy == EmberShuffleConf.FallbackPolicy.AUTO
          && (skipping = skippingEmber()) != null) {
        // Asked only here: a shuffle that falls back for another reason does not use up the ask.
        why = skipping;
      } else {
        try {
          createShuffleDir(shuffleId);
          noteSuccess();
        } catch (EmberException e) {
          if (policy == EmberShuffleConf.FallbackPolicy.NEVER) {
            throw new UncheckedIOException(
                "Ember shuffle: cannot register shuffle "
                    + shuffleId
                    + ": "
                    + e.getMessage()
                    + " ("
                    + EmberShuffleConf.FALLBACK_POLICY
                    + "=auto would send it to Spark's own shuffle)",
                e);
          }
          why = "Ember cannot take it: " + e.getMessage();
          noteFailure(e);
        }
      }
      onEmber.put(shuffleId, why == null);
      return why;
    }

    private void createShuffleDir(int shuffleId) throws EmberException {
      try {
        EmberShuffleConf.client(conf).createDirectory(shuffleDir(appRoot, shuffleId), true);
      } catch (EmberException e) {
        if (e.code() != ErrorCode.ALREADY_EXISTS) {
          throw e;
        }
      }
      appRootMade = true;
    }

    @Override
    public void registerShuffle(int shuffleId) {
      // The shuffle manager placed it just before, unless another manager runs with this plugin.
      if (onEmber.containsKey(shuffleId)) {
        return;
      }
      try {
        createShuffleDir(shuffleId);
        onEmber.put(shuffleId, true);
      } catch (EmberException e) {
        throw new UncheckedIOException(
            "Ember shuffle: cannot register shuffle " + shuffleId + ": " + e.getMessage(), e);
      }
    }

    @Override
    public void removeShuffle(int shuffleId, boolean blocking) {
      if (Boolean.TRUE.equals(onEmber.remove(shuffleId))) {
        deleteQuietly(shuffleDir(appRoot, shuffleId));
      }
    }

    @Override
    public void cleanupApplication() {
      if (current == this) {
        current = null;
      }
      // Not when nothing was made: asking a name node that does not answer would hold up the stop.
      if (appRootMade) {
        deleteQuietly(appRoot);
      }
      endToken();
      EmberShuffleConf.closeClient();
    }

    /**
     * Ember keeps map output when executors go, so Spark need not re-run map tasks then, nor keep
     * executors for their shuffle files under dynamic allocation. Not so when every shuffle is
     * Spark's own; under {@code auto}, a shuffle that fell back is recomputed when a reducer fails
     * to fetch it from a lost executor.
     */
    @Override
    public boolean supportsReliableStorage() {
      return policy != EmberShuffleConf.FallbackPolicy.ALWAYS;
    }

    private void deleteQuietly(String path) {
      if (path == null) {
        return;
      }
      try {
        EmberShuffleConf.client(conf).delete(path, true);
      } catch (EmberException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          LOG.warn("Ember shuffle: cannot delete {}: {}", path, e.getMessage());
        }
      }
    }
  }

  private static final class Executor implements ShuffleExecutorComponents {
    private final SparkConf conf;
    private String appRoot;
    private String appId;
    private String execId;
    private Map<String, String> extraConfigs;
    private ShuffleExecutorComponents localDisk;

    Executor(SparkConf conf) {
      this.conf = conf;
    }

    @Override
    public void initializeExecutor(String appId, String execId, Map<String, String> extraConfigs) {
      appRoot = extraConfigs.get(ROOT_KEY);
      if (appRoot == null) {
        throw new IllegalStateException(
            "Ember shuffle: the driver did not pass its shuffle "
                + "directory (is spark.shuffle.sort.io.plugin.class set on the driver too?)");
      }
      this.appId = appId;
      this.execId = execId;
      this.extraConfigs = extraConfigs;
      String token = extraConfigs.get(TOKEN_KEY);
      if (token != null) {
        EmberShuffleConf.useDelegationToken(token);
      }
    }

    /** Spark's own local-disk shuffle storage, made when a shuffle first falls back to it. */
    private synchronized ShuffleExecutorComponents localDisk() {
      if (localDisk == null) {
        ShuffleExecutorComponents made = new LocalDiskShuffleExecutorComponents(conf);
        made.initializeExecutor(appId, execId, extraConfigs);
        localDisk = made;
      }
      return localDisk;
    }

    @Override
    public ShuffleMapOutputWriter createMapOutputWriter(
        int shuffleId, long mapTaskId, int numPartitions) throws IOException {
      if (SPARK_OWN_ON_EXECUTOR.contains(shuffleId)) {
        return localDisk().createMapOutputWriter(shuffleId, mapTaskId, numPartitions);
      }
      EmberClient client = EmberShuffleConf.client(conf);
      return new EmberMapOutputWriter(
          client,
          Paths.child(shuffleDir(appRoot, shuffleId), Long.toString(mapTaskId)),
          numPartitions,
          EmberShuffleConf.storageClass(conf));
    }

    @Override
    public Optional<SingleSpillShuffleMapOutputWriter> createSingleFileMapOutputWriter(
        int shuffleId, long mapId) throws IOException {
      if (SPARK_OWN_ON_EXECUTOR.contains(shuffleId)) {
        return localDisk().createSingleFileMapOutputWriter(shuffleId, mapId);
      }
      return Optional.empty();
    }
  }
}
