package io.ember.namenode;

import io.ember.http.ServerMetrics;
import io.ember.http.StatusServer;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import io.ember.protocol.Deferred;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Frame;
import io.ember.protocol.FrameDecoder;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcClients;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.util.AttributeKey;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The name node: holds the namespace and the block map in memory, hands out blocks of the data
 * nodes that register with it, and marks data nodes lost when their heartbeats stop. It is never on
 * the data path.
 *
 * <p>Requests run on the network thread that read them, or with {@link
 * NameNodeKeys#HANDLER_THREADS} set, on a pool of that many threads: each connection's requests one
 * at a time and in order, as on a network thread, many connections' at once.
 *
 * <pre>{@code
 * try (NameNode nn = NameNode.start(config)) {
 *   System.out.println("listening on " + nn.address());
 *   // ... serves until closed
 * }
 * }</pre>
 */
public final class NameNode implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NameNode.class);

  /** Requests a connection may have waiting for the pool before the name node stops reading it. */
  private static final int MAX_QUEUED_PER_CONNECTION = 256;

  /** Requests of one connection a pool thread runs before it lets other connections' run. */
  private static final int BATCH = 32;

  private static final AttributeKey<Lane> LANE = AttributeKey.valueOf("ember.namenode.lane");

  private final NameNodeState state;
  private final RpcServer server;

  /** What answers requests, counted and timed: on the network threads or in the lanes. */
  private final RpcService service;

  /** Runs the periodic tasks: expiry of silent data nodes and of leases, checkpoints. */
  private final ScheduledExecutorService reaper;

  /** Connections to data nodes, for lease recovery and to probe registering ones. */
  private final RpcClients datanodeClients;

  /** Whether registrations are taken only from data nodes whose address answers. */
  private final boolean probeDatanodes;

  /** The IANA port of NVMe-oF, where an {@code nvmf+tcp} URI without a port is served. */
  private static final int NVMF_DEFAULT_PORT = 4420;

  /**
   * The tier name DRAM data nodes register with (the DRAM tier's name; the name node does not
   * depend on the tier's client code); they answer BLOCK_LENGTH.
   */
  private static final String DRAM_TIER = "dram";

  /** The tier name of DRAM data nodes that serve one-sided RDMA; they answer BLOCK_LENGTH too. */
  private static final String DRAM_RDMA_TIER = "dram-rdma";

  /** The handler pool, or null when requests run on the network threads. */
  private final ExecutorService handlers;

  /** The connection each data node registered on; see {@link #checkHeartbeatConnection}. */
  private final Map<Integer, Channel> datanodeConnections = new ConcurrentHashMap<>();

  /** The journal, or null when the namespace lives in memory only. */
  private final Journal journal;

  /** The journal's and checkpoints' directory, or null. */
  private final Path dir;

  /** Held while this name node uses {@link #dir}, so a second one cannot. */
  private final FileChannel dirLock;

  private final int checkpointRecords;
  private final long checkpointIntervalNanos;
  private volatile long lastCheckpointNanos = System.nanoTime();

  private final LifeCycle lifeCycle = new LifeCycle("name node");
  private volatile boolean closing;
  private final InetSocketAddress address;

  private final ServerMetrics metrics;

  /** The status pages and metrics, or null when they are off. */
  private final StatusServer http;

  private final Counter leaseRecoveries;

  /**
   * True under TLS or SCRAM: callers are told apart by their certificates or passwords, and
   * checked.
   */
  private final boolean authenticated;

  /** Whether connections are TLS: callers may show certificates. */
  private final boolean tlsOn;

  /** The password users under {@link EmberKeys#SCRAM}; null without it. */
  private final Credentials credentials;

  /** A connection's SCRAM exchange, between its first message and its last. */
  private static final AttributeKey<io.ember.protocol.Scram.Server> SCRAM_EXCHANGE =
      AttributeKey.valueOf("ember.scram");

  private static final AttributeKey<Caller> CALLER = AttributeKey.valueOf("ember.caller");

  /**
   * Set on a connection a delegation token authenticated: its block tokens are bearer tokens (its
   * client shows data nodes no certificate), and it gets no further delegation token.
   */
  private static final AttributeKey<DelegationToken> BY_DELEGATION =
      AttributeKey.valueOf("ember.by-delegation");

  /** Signs the block locations handed out under TLS; null without it. */
  private final BlockTokenSigner tokens;

  /**
   * Under TLS, who may act as a data node (and so hold the block token keys): the name node's own
   * certificate's identity and {@link NameNodeKeys#DATANODE_IDENTITIES}, besides super-users.
   */
  private final java.util.Set<String> datanodeIdentities;

  private NameNode(EmberConfig config, String host, int port) throws EmberException {
    metrics = new ServerMetrics(config.get(EmberKeys.METRICS_ENABLED));
    authenticated = EmberKeys.authenticates(config);
    tlsOn = EmberKeys.secured(config);
    credentials = config.get(EmberKeys.SCRAM) ? loadCredentials(config) : null;
    tokens =
        authenticated
            ? new BlockTokenSigner(
                config.get(NameNodeKeys.BLOCK_TOKEN_LIFETIME),
                config.get(NameNodeKeys.BLOCK_TOKEN_WRITE_LIFETIME),
                System::currentTimeMillis)
            : null;
    java.util.Set<String> nodes = new java.util.HashSet<>();
    if (EmberKeys.secured(config)) {
      nodes.add(io.ember.protocol.Tls.ownIdentity(config));
    }
    if (authenticated && !config.get(EmberKeys.USER).isEmpty()) {
      nodes.add(config.get(EmberKeys.USER));
    }
    if (authenticated) {
      for (String name : config.get(NameNodeKeys.DATANODE_IDENTITIES).split(",", -1)) {
        if (!name.isBlank()) {
          nodes.add(name.strip());
        }
      }
    }
    datanodeIdentities = java.util.Set.copyOf(nodes);
    lifeCycle.beginStart();
    long blockSize = config.get(EmberKeys.BLOCK_SIZE);
    if (Long.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          EmberKeys.BLOCK_SIZE.name() + ": " + blockSize + " is not a power of two");
    }
    Duration timeout = config.get(NameNodeKeys.DATANODE_TIMEOUT);
    if (config.get(NameNodeKeys.DEALLOCATION_RETRY).compareTo(Duration.ofSeconds(30)) <= 0) {
      LOG.warn(
          "name node: {} is {}, not above the NVMf command timeout (30 s): a deallocation still"
              + " queued on a target when it is sent again could zero a block after its reuse",
          NameNodeKeys.DEALLOCATION_RETRY.name(),
          config.get(NameNodeKeys.DEALLOCATION_RETRY));
    }
    checkpointRecords = config.get(NameNodeKeys.CHECKPOINT_RECORDS);
    checkpointIntervalNanos = config.get(NameNodeKeys.CHECKPOINT_INTERVAL).toNanos();
    String dirText = config.get(NameNodeKeys.DIR);
    if (dirText.isBlank()) {
      dir = null;
      dirLock = null;
      journal = null;
      state = newState(config);
      LOG.warn(
          "name node: {} is not set; the namespace lives in memory and is lost when the name node"
              + " stops",
          NameNodeKeys.DIR.name());
    } else {
      dir = Path.of(dirText).toAbsolutePath();
      dirLock = lockDirectory(dir);
      try {
        Recovered recovered = recover(config, dir);
        state = recovered.state();
        journal =
            Journal.open(
                dir,
                Journal.Sync.parse(config.get(NameNodeKeys.JOURNAL_SYNC)),
                recovered.lastSeq() + 1);
      } catch (EmberException | RuntimeException e) {
        closeQuietly(dirLock);
        throw e;
      } catch (IOException e) {
        closeQuietly(dirLock);
        throw new EmberException(
            ErrorCode.JOURNAL_FAILED,
            e instanceof Journal.CorruptJournalException
                ? e.getMessage()
                : "the name node cannot load its state from " + dir + ": " + e.getMessage(),
            e);
      }
      state.attachJournal(journal);
    }
    probeDatanodes = config.get(NameNodeKeys.PROBE_DATANODES);
    int handlerThreads = config.get(NameNodeKeys.HANDLER_THREADS);
    handlers =
        handlerThreads == 0
            ? null
            : Executors.newFixedThreadPool(
                handlerThreads,
                new ThreadFactory() {
                  private final AtomicInteger next = new AtomicInteger();

                  @Override
                  public Thread newThread(Runnable r) {
                    Thread t = new Thread(r, "namenode-handler-" + next.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                  }
                });
    leaseRecoveries =
        Counter.builder()
            .name("ember_namenode_lease_recoveries_total")
            .help("files closed because their writer's lease expired")
            .register(metrics.registry());
    registerGauges(state, metrics);
    service = metrics.meter(new Service());
    server = new RpcServer("name node", config, service);
    RpcClients clients = null;
    StatusServer httpServer = null;
    try {
      clients = new RpcClients(config, "namenode-datanodes", 1);
      address = server.start(host, port);
      String journalText =
          journal == null
              ? "none (in memory)"
              : dir + ", sync=" + config.get(NameNodeKeys.JOURNAL_SYNC);
      NameNodeHttp pages =
          new NameNodeHttp(
              state,
              host + ":" + address.getPort(),
              journalText,
              authenticated ? Caller.NOBODY : state.internal());
      httpServer =
          StatusServer.startAsConfigured(
              "namenode",
              pages.routes(metrics),
              config.get(NameNodeKeys.HTTP_PORT),
              host,
              port,
              io.ember.protocol.Tls.from(config));
      if (httpServer != null) {
        LOG.info("name node status pages and metrics at {}", httpServer.url());
      }
    } catch (EmberException | RuntimeException e) {
      if (httpServer != null) {
        httpServer.close();
      }
      server.close();
      if (clients != null) {
        clients.close();
      }
      if (handlers != null) {
        handlers.shutdownNow();
      }
      if (journal != null) {
        journal.close();
        closeQuietly(dirLock);
      }
      throw e;
    }
    datanodeClients = clients;
    http = httpServer;
    reaper =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "namenode-liveness");
              t.setDaemon(true);
              return t;
            });
    long period = Math.max(10, timeout.toMillis() / 4);
    var unused =
        reaper.scheduleWithFixedDelay(
            state::expireDatanodes, period, period, TimeUnit.MILLISECONDS);
    long leaseTick = Math.max(25, Math.min(1000, state.leaseTimeoutMillis() / 4));
    unused =
        reaper.scheduleWithFixedDelay(
            () -> {
              try {
                leaseRecoveries.inc(state.expireLeases(this::heldLength));
              } catch (RuntimeException e) {
                // Thrown out of a periodic task, it would end lease recovery for good.
                LOG.error("name node: lease recovery failed; tried again at the next tick", e);
              }
            },
            leaseTick,
            leaseTick,
            TimeUnit.MILLISECONDS);
    if (journal != null) {
      long tick = Math.max(100, Math.min(1000, checkpointIntervalNanos / 1_000_000 / 4));
      unused =
          reaper.scheduleWithFixedDelay(this::checkpointIfDue, tick, tick, TimeUnit.MILLISECONDS);
    }
    lifeCycle.started();
  }

  /**
   * Asks a DRAM data node how many bytes a block holds from its start, for lease recovery. Other
   * tiers cannot say: an NVMf target is written by clients directly, and keeps no lengths.
   */
  private CompletableFuture<OptionalLong> heldLength(BlockLocation block) {
    HostPort at = HostPort.tryParse(block.endpoint(), 0);
    boolean dram = DRAM_TIER.equals(block.tier()) || DRAM_RDMA_TIER.equals(block.tier());
    if (!dram || at == null) {
      return CompletableFuture.completedFuture(OptionalLong.empty());
    }
    String node = "data node " + block.datanodeId();
    return datanodeClients
        .get(at, node)
        .thenCompose(
            c ->
                c.call(
                    MessageType.BLOCK_LENGTH,
                    // Under passwords only, a token of a mode no client is granted is how the data
                    // node knows the name node asks.
                    Messages.BlockLengthRequest.of(
                        tokens == null ? block : tokens.sign(block, BlockToken.LENGTH, "")),
                    Messages.BlockLengthResponse::decode))
        .thenApply(r -> OptionalLong.of(r.length()))
        .whenComplete(
            (r, e) -> {
              if (e != null) {
                LOG.info(
                    "lease recovery: {} did not say what block {} holds ({}); asked again",
                    node,
                    block.blockId(),
                    e.getCause() == null ? e.toString() : e.getCause().getMessage());
              }
            });
  }

  /** The address of the status pages and {@code /metrics}, or null when they are off. */
  public InetSocketAddress httpAddress() {
    return http == null ? null : http.address();
  }

  /** Where a browser on this machine opens the status pages (https under TLS), or null. */
  public String httpUrl() {
    return http == null ? null : http.url();
  }

  private static void registerGauges(NameNodeState state, ServerMetrics metrics) {
    // One report per scrape, the one the status page and /api/cluster show.
    metrics
        .registry()
        .register(
            (MultiCollector)
                () -> {
                  ClusterReport r = state.report();
                  GaugeSnapshot.Builder bytes =
                      GaugeSnapshot.builder()
                          .name("ember_namenode_storage_bytes")
                          .help(
                              "bytes of the live data nodes, by storage class and state (used or"
                                  + " free)");
                  for (ClusterReport.ClassRow c : r.classes()) {
                    String sc = c.storageClass().toLowerCase(Locale.ROOT);
                    bytes.dataPoint(gauge((double) c.usedBytes(), "class", sc, "state", "used"));
                    bytes.dataPoint(gauge((double) c.freeBytes(), "class", sc, "state", "free"));
                  }
                  Map<String, int[]> byClass = new java.util.TreeMap<>();
                  for (Messages.DatanodeInfo d : r.datanodes()) {
                    String sc = d.storageClass().displayName().toLowerCase(Locale.ROOT);
                    byClass
                        .computeIfAbsent(sc, k -> new int[DATANODE_STATES.size()])[
                        DATANODE_STATES.indexOf(d.state())]++;
                  }
                  GaugeSnapshot.Builder nodes =
                      GaugeSnapshot.builder()
                          .name("ember_namenode_datanodes")
                          .help(
                              "data nodes by storage class and state (live, lost, unreported,"
                                  + " replaced)");
                  byClass.forEach(
                      (sc, counts) -> {
                        for (int i = 0; i < counts.length; i++) {
                          nodes.dataPoint(
                              gauge(counts[i], "class", sc, "state", DATANODE_STATES.get(i)));
                        }
                      });
                  return MetricSnapshots.of(
                      GaugeSnapshot.builder()
                          .name("ember_namenode_files")
                          .help("files in the namespace")
                          .dataPoint(
                              GaugeDataPointSnapshot.builder().value((double) r.files()).build())
                          .build(),
                      bytes.build(),
                      nodes.build());
                });
  }

  private static final List<String> DATANODE_STATES =
      List.of("live", "lost", "unreported", "replaced");

  private static GaugeDataPointSnapshot gauge(double value, String... labels) {
    return GaugeDataPointSnapshot.builder().labels(Labels.of(labels)).value(value).build();
  }

  /** The state loaded at start-up, and the last journal record it holds. */
  private record Recovered(NameNodeState state, long lastSeq) {}

  private static NameNodeState newState(EmberConfig config) throws EmberException {
    NameNodeState s =
        new NameNodeState(
            Math.toIntExact(config.get(EmberKeys.BLOCK_SIZE)),
            NameNodeKeys.parseOrder(config.get(NameNodeKeys.STORAGE_CLASS_ORDER)),
            config.get(NameNodeKeys.DATANODE_TIMEOUT),
            System::nanoTime);
    s.leaseTimeout(config.get(NameNodeKeys.LEASE_TIMEOUT));
    s.deallocationRetry(config.get(NameNodeKeys.DEALLOCATION_RETRY));
    s.configureDelegationTokens(
        config.get(NameNodeKeys.DELEGATION_TOKEN_RENEW_INTERVAL),
        config.get(NameNodeKeys.DELEGATION_TOKEN_MAX_LIFETIME),
        config.get(NameNodeKeys.DELEGATION_KEY_UPDATE_INTERVAL));
    List<String> superusers = new ArrayList<>();
    for (String name : config.get(NameNodeKeys.SUPERUSERS).split(",", -1)) {
      if (!name.isBlank()) {
        superusers.add(name.strip());
      }
    }
    if (superusers.isEmpty()) {
      superusers.add(System.getProperty("user.name", "ember"));
    }
    s.useIdentities(
        Identities.of(
            superusers,
            config.get(NameNodeKeys.SUPERUSER_GROUP).strip(),
            config.get(NameNodeKeys.GROUPS)),
        io.ember.protocol.Permissions.parseOctal(config.get(NameNodeKeys.ROOT_PERMISSION)));
    return s;
  }

  /** The delegation token a RENEW, CANCEL or AUTHENTICATE request carries. */
  private static DelegationToken tokenIn(ByteBuf in) throws EmberException {
    return DelegationToken.decode(Messages.TokenMessage.decode(in).token());
  }

  private static Credentials loadCredentials(EmberConfig config) throws EmberException {
    String file = config.get(NameNodeKeys.CREDENTIALS);
    if (file.isEmpty()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          EmberKeys.SCRAM.name()
              + "=true needs "
              + NameNodeKeys.CREDENTIALS.name()
              + ", the file of users and their verifiers: `ember security add-user NAME"
              + " --credentials FILE` writes it");
    }
    Credentials c = Credentials.load(java.nio.file.Path.of(file));
    LOG.info("name node: {} password users in {}", c.size(), file);
    return c;
  }

  /**
   * Whether a delegation token authenticated {@code channel}. (Not {@code hasAttr}: that is true of
   * an attribute once looked up, set or not.)
   */
  private static boolean byDelegation(Channel channel) {
    return channel.attr(BY_DELEGATION).get() != null;
  }

  /**
   * Who sent a request on {@code channel}: its certificate's identity, or the owner of the
   * delegation token it authenticated with (while that token lives), under TLS; without TLS nobody
   * is told apart, and every caller passes every check.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} under TLS for a connection with
   *     neither, or whose token was cancelled or expired
   */
  private Caller caller(Channel channel) throws EmberException {
    Caller known = channel.attr(CALLER).get();
    if (known != null) {
      DelegationToken token = channel.attr(BY_DELEGATION).get();
      if (token != null) {
        // A cancelled or expired token stops a connection it authenticated, too.
        state.checkDelegationToken(token);
      }
      return known;
    }
    String identity = io.ember.protocol.Tls.peerIdentity(channel);
    Caller caller;
    if (identity != null) {
      if (identity.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
          > io.ember.protocol.Permissions.MAX_NAME_BYTES) {
        throw new EmberException(
            ErrorCode.UNAUTHENTICATED,
            "this client's identity (its certificate's common name, or its whole subject without"
                + " one) is longer than "
                + io.ember.protocol.Permissions.MAX_NAME_BYTES
                + " bytes: give its certificate a shorter common name");
      }
      caller = state.caller(identity);
    } else if (authenticated && credentials == null) {
      throw new EmberException(
          ErrorCode.UNAUTHENTICATED,
          "this client showed no certificate signed by a CA in "
              + io.ember.protocol.EmberKeys.TLS_CA.name()
              + " and has not authenticated: give it such a certificate ("
              + io.ember.protocol.EmberKeys.TLS_CERTIFICATE.name()
              + ") or a delegation token ("
              + io.ember.protocol.EmberKeys.DELEGATION_TOKEN.name()
              + ")");
    } else if (authenticated) {
      throw new EmberException(
          ErrorCode.UNAUTHENTICATED,
          "this client has not authenticated: the name node runs with "
              + EmberKeys.SCRAM.name()
              + ", so give it "
              + EmberKeys.USER.name()
              + " and "
              + EmberKeys.PASSWORD.name()
              + " (or "
              + EmberKeys.PASSWORD_FILE.name()
              + "), a delegation token ("
              + EmberKeys.DELEGATION_TOKEN.name()
              + ")"
              + (tlsOn ? ", or a certificate" : ""));
    } else {
      caller = state.internal();
    }
    channel.attr(CALLER).set(caller);
    return caller;
  }

  /** Loads the newest checkpoint that reads whole and replays the journal after it. */
  private static Recovered recover(EmberConfig config, Path dir)
      throws IOException, EmberException {
    List<Path> checkpoints = Checkpoints.list(dir);
    if (checkpoints.isEmpty()) {
      throw new EmberException(
          ErrorCode.JOURNAL_FAILED,
          dir
              + " is not a formatted name node directory: run 'ember namenode --format' first"
              + " (or point "
              + NameNodeKeys.DIR.name()
              + " at the directory the name node used)");
    }
    long started = System.nanoTime();
    NameNodeState loaded = null;
    long seq = -1;
    IOException firstFailure = null;
    for (Path checkpoint : checkpoints) {
      NameNodeState candidate = newState(config);
      try {
        seq = Checkpoints.read(checkpoint, candidate::load);
        loaded = candidate;
        break;
      } catch (IOException e) {
        LOG.error("name node: cannot use checkpoint {}: {}", checkpoint, e.getMessage());
        if (firstFailure == null) {
          firstFailure = e;
        }
      }
    }
    if (loaded == null) {
      throw firstFailure;
    }
    long loadedAt = System.nanoTime();
    NameNodeState state = loaded;
    Journal.Replayed replayed = Journal.replay(dir, seq, (s, payload) -> state.replay(payload));
    state.finishRestore();
    LOG.info(
        "name node: loaded checkpoint of record {} in {} ms and replayed {} journal records in {}"
            + " ms ({} bytes after the last good record cut): {} files",
        seq,
        (loadedAt - started) / 1_000_000,
        replayed.records(),
        (System.nanoTime() - loadedAt) / 1_000_000,
        replayed.droppedBytes(),
        state.fileCount());
    return new Recovered(state, replayed.lastSeq());
  }

  private static FileChannel lockDirectory(Path dir) throws EmberException {
    try {
      Files.createDirectories(dir);
      FileChannel ch =
          FileChannel.open(
              dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      FileLock lock;
      try {
        lock = ch.tryLock();
      } catch (java.nio.channels.OverlappingFileLockException e) {
        lock = null;
      }
      if (lock == null) {
        ch.close();
        throw new EmberException(
            ErrorCode.ALREADY_EXISTS, "another name node is using " + dir + ": stop it first");
      }
      return ch;
    } catch (IOException e) {
      throw new EmberException(
          ErrorCode.JOURNAL_FAILED, "cannot use name node directory " + dir + ": " + e, e);
    }
  }

  private static void closeQuietly(FileChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      LOG.debug("name node: closing the directory lock failed", e);
    }
  }

  private static final String LOCK_FILE = "in_use.lock";

  /**
   * Prepares {@link NameNodeKeys#DIR} for a name node with an empty namespace.
   *
   * @param force wipe a directory that holds a name node's state (its files only)
   * @throws EmberException {@link ErrorCode#ALREADY_EXISTS} when the directory holds a name node's
   *     state and {@code force} is false, holds other files, or a name node is using it; {@link
   *     ErrorCode#INVALID_ARGUMENT} when no directory is configured; {@link
   *     ErrorCode#JOURNAL_FAILED} when it cannot be written
   */
  public static void format(EmberConfig config, boolean force) throws EmberException {
    String dirText = config.get(NameNodeKeys.DIR);
    if (dirText.isBlank()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "set " + NameNodeKeys.DIR.name() + " (or --dir) to the directory to format");
    }
    Path dir = Path.of(dirText).toAbsolutePath();
    FileChannel lock = lockDirectory(dir);
    try {
      List<Path> ours = new ArrayList<>();
      List<Path> others = new ArrayList<>();
      try (var files = Files.list(dir)) {
        files
            .filter(p -> !p.getFileName().toString().equals(LOCK_FILE))
            .forEach(p -> (isOurs(p) ? ours : others).add(p));
      }
      if (!others.isEmpty()) {
        throw new EmberException(
            ErrorCode.ALREADY_EXISTS,
            dir
                + " holds files that are not a name node's (such as "
                + others.get(0).getFileName()
                + "): choose an empty directory");
      }
      if (!ours.isEmpty() && !force) {
        throw new EmberException(
            ErrorCode.ALREADY_EXISTS,
            dir + " holds a name node's namespace: add --force to wipe it");
      }
      for (Path p : ours) {
        Files.delete(p);
      }
      NameNodeState empty = newState(config);
      Checkpoints.write(dir, 0, empty::save);
      LOG.info("name node: formatted {}", dir);
    } catch (IOException e) {
      throw new EmberException(
          ErrorCode.JOURNAL_FAILED, "cannot format " + dir + ": " + e.getMessage(), e);
    } finally {
      closeQuietly(lock);
    }
  }

  /**
   * Whether {@link NameNodeKeys#DIR} holds a name node's state ({@link #format} ran on it); false
   * when no directory is configured.
   */
  public static boolean isFormatted(EmberConfig config) {
    String dirText = config.get(NameNodeKeys.DIR);
    if (dirText.isBlank() || !Files.isDirectory(Path.of(dirText))) {
      return false;
    }
    try {
      return !Checkpoints.list(Path.of(dirText)).isEmpty();
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean isOurs(Path p) {
    return Checkpoints.seqOf(p) >= 0 || Journal.segmentSeq(p) >= 0 || Checkpoints.isTemporary(p);
  }

  private void checkpointIfDue() {
    long appended = journal.appendedSinceRoll();
    if (appended == 0) {
      return;
    }
    if (appended < checkpointRecords
        && System.nanoTime() - lastCheckpointNanos < checkpointIntervalNanos) {
      return;
    }
    try {
      checkpoint();
    } catch (IOException e) {
      LOG.error("name node: checkpoint failed (retried later): {}", e.toString());
    }
  }

  /**
   * Writes a checkpoint of the namespace now and drops the journal it makes unneeded (keeping what
   * the previous checkpoint needs, in case the newest is damaged). Changes wait while it is
   * written; reads do not.
   *
   * @return the journal record the checkpoint is of
   * @throws IOException when it cannot be written (the journal is kept)
   * @throws IllegalStateException when the name node has no directory
   */
  public synchronized long checkpoint() throws IOException {
    if (journal == null) {
      throw new IllegalStateException("the name node keeps no journal (ember.namenode.dir)");
    }
    long started = System.nanoTime();
    long seq = state.checkpoint(dir);
    lastCheckpointNanos = System.nanoTime();
    List<Path> checkpoints = Checkpoints.list(dir);
    long oldestKept = Checkpoints.seqOf(checkpoints.get(Math.min(1, checkpoints.size() - 1)));
    for (int i = 2; i < checkpoints.size(); i++) {
      Files.deleteIfExists(checkpoints.get(i));
    }
    List<Path> segments = Journal.segments(dir);
    for (int i = 0; i + 1 < segments.size(); i++) {
      if (Journal.segmentSeq(segments.get(i + 1)) <= oldestKept + 1) {
        Files.deleteIfExists(segments.get(i));
      }
    }
    LOG.info(
        "name node: checkpoint of record {} written in {} ms",
        seq,
        (System.nanoTime() - started) / 1_000_000);
    return seq;
  }

  /**
   * Starts a name node on the configured bind host and port.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalArgumentException when a configuration value is bad
   */
  public static NameNode start(EmberConfig config) throws EmberException {
    return new NameNode(config, config.get(NameNodeKeys.BIND_HOST), config.get(NameNodeKeys.PORT));
  }

  /**
   * Starts a name node on the given host and port (0 for any free port).
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalArgumentException when a configuration value is bad
   */
  public static NameNode start(EmberConfig config, String host, int port) throws EmberException {
    return new NameNode(config, host, port);
  }

  /** The address the name node listens on. */
  public InetSocketAddress address() {
    return address;
  }

  /**
   * Stops reading requests ({@code true}), as a stalled process would: clients' requests wait in
   * socket buffers, unanswered, and are read in order once it reads again ({@code false}). Leases,
   * heartbeats already read and checkpoints go on. For tests of clients that send many requests
   * before the first answer.
   */
  public void pauseReading(boolean pause) {
    server.pauseReading(pause);
  }

  /** The cluster's block size. */
  public int blockSize() {
    return state.blockSize();
  }

  /** Checks heartbeats now instead of at the next tick; returns the data nodes marked lost. */
  public int expireDatanodes() {
    return state.expireDatanodes();
  }

  /** Stops serving and drops all metadata. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    closing = true;
    // Not shutdownNow: an interrupt would close the journal's channel under a checkpoint that is
    // rolling it. Shutting down drops the periodic tasks; one that is running finishes.
    reaper.shutdown();
    try {
      if (!reaper.awaitTermination(30, TimeUnit.SECONDS)) {
        LOG.warn("name node: a periodic task (checkpoint?) still running 30 s after close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    datanodeClients.close();
    if (http != null) {
      http.close();
    }
    server.close();
    if (handlers != null) {
      // Queued requests are released unanswered (their connections are closed by now).
      handlers.shutdown();
      try {
        if (!handlers.awaitTermination(5, TimeUnit.SECONDS)) {
          LOG.warn("name node: request handlers still busy 5 s after close");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (journal != null) {
      synchronized (this) {
        journal.close();
      }
      closeQuietly(dirLock);
    }
    lifeCycle.closed();
  }

  /**
   * Refuses a heartbeat that comes on another connection than the one its data node registered on,
   * while that one is open. Data node ids start at 1 again when a name node restarts, so a data
   * node that registered with the previous one can heartbeat with an id this one has given another
   * node: accepted, it would keep that node's registration alive and take its blocks to deallocate,
   * and never register itself. Refused, it registers again; a node that only reconnected gets its
   * id back that way.
   */
  private void checkHeartbeatConnection(int datanodeId, Channel channel) throws EmberException {
    Channel registeredOn = datanodeConnections.get(datanodeId);
    if (registeredOn != null && registeredOn != channel && registeredOn.isActive()) {
      throw new EmberException(
          ErrorCode.UNKNOWN_DATANODE,
          "data node " + datanodeId + " is registered on another connection: register again");
    }
  }

  /**
   * Answers a request; a change is answered only once the journal holds it as durably as {@link
   * NameNodeKeys#JOURNAL_SYNC} asks, without holding the thread meanwhile.
   */
  private Message durable(Channel channel, MessageType type, ByteBuf in) throws EmberException {
    if (type == MessageType.REGISTER_DATANODE && probeDatanodes) {
      // Before the probe: a caller that may not register learns nothing of what it named.
      checkDatanode(channel, type);
      Messages.RegisterRequest r = Messages.RegisterRequest.decode(in);
      return new Deferred(
          probe(channel, r.endpoint())
              .thenCompose(
                  reached -> {
                    try {
                      // A node that hung up while it was probed retries on a new connection:
                      // registering this attempt would leave a node nobody heartbeats for.
                      if (!channel.isActive()) {
                        throw new EmberException(
                            ErrorCode.CONNECTION_CLOSED,
                            "the data node's connection closed while it was probed");
                      }
                      return answered(durably(() -> register(channel, r)));
                    } catch (EmberException e) {
                      return CompletableFuture.failedFuture(e);
                    }
                  }));
    }
    return durably(() -> answer(channel, type, in));
  }

  /** A request's answering, which may change the namespace. */
  private interface Answering {
    Message answer() throws EmberException;
  }

  private static CompletableFuture<Message> answered(Message answer) {
    return answer instanceof Deferred deferred
        ? deferred.answer().thenApply(Message.class::cast)
        : CompletableFuture.completedFuture(answer);
  }

  /**
   * Answers through {@code answering}, once the journal holds what it changed; see {@link
   * #durable}.
   */
  private Message durably(Answering answering) throws EmberException {
    Message answer;
    try {
      answer = answering.answer();
    } catch (EmberException | RuntimeException e) {
      // An error after a change was recorded (a create that made parents first) is answered at
      // once: the change is kept or not by the journal's fate, as for a lost answer.
      var unused = state.takeLogged();
      throw e;
    }
    CompletableFuture<Void> logged = state.takeLogged();
    if (logged.isDone() && !logged.isCompletedExceptionally()) {
      return answer;
    }
    return new Deferred(logged.thenApply(v -> answer));
  }

  private Messages.RegisterResponse register(Channel channel, Messages.RegisterRequest r)
      throws EmberException {
    Messages.RegisterResponse registered =
        state.register(
            r.storageClass(),
            r.tier(),
            r.endpoint(),
            r.capacityBytes(),
            r.trimOnFree(),
            r.incarnation(),
            r.reviveOnly());
    datanodeConnections.put(registered.datanodeId(), channel);
    if (tokens == null) {
      return registered;
    }
    return new Messages.RegisterResponse(
        registered.datanodeId(),
        registered.blockSize(),
        registered.blockCount(),
        blockKeysFor(channel));
  }

  /**
   * The block keys as {@code channel}'s data node may see them: as they are over TLS, masked with
   * the data node's password ({@link io.ember.protocol.BlockKey#masked}) on a connection that only
   * SCRAM authenticated, where anyone on the path would otherwise read keys that sign any token.
   */
  private List<io.ember.protocol.BlockKey> blockKeysFor(Channel channel) throws EmberException {
    List<io.ember.protocol.BlockKey> keys = tokens.keys();
    if (channel.pipeline().get(io.netty.handler.ssl.SslHandler.class) != null) {
      return keys;
    }
    io.ember.protocol.Scram.Server exchange = channel.attr(SCRAM_EXCHANGE).get();
    byte[] wrap = exchange == null ? null : exchange.blockKeyWrap();
    if (wrap == null) {
      // Nothing to mask them with: they would cross the wire as they are.
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED,
          "block token keys go only to a data node that proved a password or runs TLS");
    }
    return keys.stream().map(k -> k.masked(wrap)).toList();
  }

  /**
   * Under TLS, refuses a data node's request ({@code type}) from a caller that may not act as one:
   * it would learn the keys block tokens are signed with, and could add storage to the cluster.
   */
  private void checkDatanode(Channel channel, MessageType type) throws EmberException {
    if (!authenticated) {
      return;
    }
    Caller caller = caller(channel);
    if (byDelegation(channel)) {
      // Data nodes learn the block token keys: only a certificate may act as one.
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED,
          "cannot "
              + type
              + ": a client authenticated by a delegation token may not act as a data"
              + " node");
    }
    if (caller.superuser() || datanodeIdentities.contains(caller.name())) {
      return;
    }
    throw new EmberException(
        ErrorCode.PERMISSION_DENIED,
        "cannot "
            + type
            + ": "
            + caller
            + " may not act as a data node (the name node takes data nodes that present its own"
            + " certificate's identity, a super-user's, or one in "
            + NameNodeKeys.DATANODE_IDENTITIES.name()
            + ")");
  }

  /**
   * {@code location} with a token for the caller on {@code channel}, under TLS, when a DRAM data
   * node holds it (an NVMe/TCP target checks no tokens).
   */
  private BlockLocation granted(Channel channel, BlockLocation location, int modes)
      throws EmberException {
    if (tokens == null || location == null || !location.tier().startsWith("dram")) {
      return location;
    }
    // A client that authenticated with a delegation token shows data nodes no certificate: its
    // block tokens name no identity, and hold for whoever presents them over TLS.
    // Nor does one that proved a password: a token names only what data nodes can check, the
    // identity of the certificate on the connection.
    caller(channel);
    String certified = io.ember.protocol.Tls.peerIdentity(channel);
    String holder = certified == null || byDelegation(channel) ? "" : certified;
    return tokens.sign(location, modes, holder);
  }

  private List<BlockLocation> granted(Channel channel, List<BlockLocation> locations, int modes)
      throws EmberException {
    if (tokens == null) {
      return locations;
    }
    List<BlockLocation> out = new ArrayList<>(locations.size());
    for (BlockLocation b : locations) {
      out.add(granted(channel, b, modes));
    }
    return out;
  }

  /**
   * Connects to the address a registering data node advertises and closes the connection again:
   * completes when it could, and fails with {@link ErrorCode#UNREACHABLE} naming the address
   * otherwise. A loopback address is refused outright when the node registers from another host, as
   * only its own host could reach it (the name node's loopback may even answer, for another
   * process). An endpoint not reached over TCP (an RDMA target) is taken as it is.
   */
  private CompletableFuture<Void> probe(Channel channel, String endpoint) {
    HostPort reach = probeAddress(endpoint);
    if (reach == null) {
      return CompletableFuture.completedFuture(null);
    }
    boolean nvmf = endpoint.startsWith("nvmf+");
    String advice =
        nvmf
            ? "give the data node a --target URI naming an address of the target that clients and"
                + " the name node can reach"
            : "start the data node with --advertise naming an address that clients and the name"
                + " node can reach";
    String refused =
        "registration refused: the name node cannot reach the address the data node advertises, "
            + endpoint;
    if (isLoopback(reach.host())
        && channel.remoteAddress() instanceof InetSocketAddress from
        && !from.getAddress().isLoopbackAddress()) {
      return CompletableFuture.failedFuture(
          new EmberException(
              ErrorCode.UNREACHABLE,
              refused + " (a loopback address, and the node is on another host); " + advice));
    }
    // A DRAM data node is opened as any connection to it is (over TLS, checking its certificate);
    // an NVMe/TCP target speaks neither Ember nor TLS, so only its port is tried.
    CompletableFuture<Void> reached =
        nvmf
            ? datanodeClients.probe(reach, "target")
            : datanodeClients
                .open(reach, "data node")
                .thenAccept(io.ember.protocol.RpcClient::close);
    return reached.handle(
        (ok, failure) -> {
          if (failure == null) {
            return null;
          }
          EmberException cause =
              EmberException.unwrap(failure) instanceof EmberException e
                  ? e
                  : new EmberException(ErrorCode.UNREACHABLE, String.valueOf(failure), failure);
          if (cause.code() != ErrorCode.UNREACHABLE) {
            throw new java.util.concurrent.CompletionException(cause); // closing, say
          }
          throw new java.util.concurrent.CompletionException(
              new EmberException(
                  ErrorCode.UNREACHABLE,
                  refused + " (" + cause.getMessage() + "); " + advice,
                  cause));
        });
  }

  private static boolean isLoopback(String host) {
    return host.equalsIgnoreCase("localhost") || host.startsWith("127.") || host.equals("::1");
  }

  /**
   * Where a data node's endpoint is reached over TCP: {@code host:port} of a DRAM data node, or the
   * host and port of an {@code nvmf+tcp} URI (4420 when it names none); null for other transports.
   */
  static HostPort probeAddress(String endpoint) {
    String tcp = "nvmf+tcp://";
    if (endpoint.startsWith(tcp)) {
      // Not java.net.URI: it finds no host in names such as storage_1, which Docker allows.
      String authority = endpoint.substring(tcp.length());
      int slash = authority.indexOf('/');
      return HostPort.tryParse(
          slash < 0 ? authority : authority.substring(0, slash), NVMF_DEFAULT_PORT);
    }
    if (endpoint.contains("://")) {
      return null;
    }
    return HostPort.tryParse(endpoint, 0);
  }

  private Message answer(Channel channel, MessageType type, ByteBuf in) throws EmberException {
    switch (type) {
      case CREATE:
        {
          Messages.CreateRequest r = Messages.CreateRequest.decode(in);
          Messages.CreateResponse created =
              state.create(
                  caller(channel),
                  r.path(),
                  r.type(),
                  r.storageClass(),
                  r.createParents(),
                  r.leaseHolder(),
                  r.firstBlock(),
                  r.overwrite(),
                  r.permission());
          if (!r.firstBlock()) {
            return created.status();
          }
          return new Messages.CreateResponse(
              created.status(),
              granted(channel, created.firstBlock(), BlockToken.READ | BlockToken.WRITE));
        }
      case LOOKUP:
        return state.lookup(caller(channel), Messages.PathRequest.decode(in).path());
      case OPEN:
        {
          Messages.OpenRequest r = Messages.OpenRequest.decode(in);
          Messages.OpenResponse opened = state.open(caller(channel), r.path(), r.maxBlocks());
          return new Messages.OpenResponse(
              opened.status(), granted(channel, opened.blocks(), BlockToken.READ));
        }
      case LIST:
        {
          Messages.ListRequest r = Messages.ListRequest.decode(in);
          return state.list(caller(channel), r.path(), r.startAfter(), r.limit());
        }
      case DELETE:
        {
          Messages.DeleteRequest r = Messages.DeleteRequest.decode(in);
          state.delete(caller(channel), r.path(), r.recursive());
          return Message.EMPTY;
        }
      case RENAME:
        {
          Messages.RenameRequest r = Messages.RenameRequest.decode(in);
          state.rename(caller(channel), r.source(), r.target());
          return Message.EMPTY;
        }
      case SET_ATTRIBUTES:
        {
          Messages.SetAttributesRequest r = Messages.SetAttributesRequest.decode(in);
          return state.setAttributes(
              caller(channel), r.path(), r.owner(), r.group(), r.permission());
        }
      case ALLOCATE_BLOCK:
        {
          Messages.AllocateBlockRequest r = Messages.AllocateBlockRequest.decode(in);
          return granted(
              channel,
              state.allocateBlock(caller(channel), r.fileId(), r.index()),
              BlockToken.READ | BlockToken.WRITE);
        }
      case ALLOCATE_BLOCKS:
      case ALLOCATE_AHEAD:
        {
          Messages.AllocateBlocksRequest r = Messages.AllocateBlocksRequest.decode(in);
          Caller c = caller(channel);
          List<BlockLocation> given =
              type == MessageType.ALLOCATE_AHEAD
                  ? state.allocateAhead(c, r.fileId(), r.index(), r.count())
                  : state.allocateBlocks(c, r.fileId(), r.index(), r.count());
          return new Messages.BlocksResponse(
              granted(channel, given, BlockToken.READ | BlockToken.WRITE));
        }
      case GET_BLOCKS:
        {
          Messages.GetBlocksRequest r = Messages.GetBlocksRequest.decode(in);
          return new Messages.BlocksResponse(
              granted(
                  channel,
                  state.getBlocks(caller(channel), r.fileId(), r.startIndex(), r.maxCount()),
                  BlockToken.READ));
        }
      case CLOSE_FILE:
        {
          Messages.CloseFileRequest r = Messages.CloseFileRequest.decode(in);
          return state.closeFile(caller(channel), r.fileId(), r.length());
        }
      case RENEW_LEASE:
        {
          Messages.RenewLeaseRequest r = Messages.RenewLeaseRequest.decode(in);
          return new Messages.RenewLeaseResponse(
              state.leaseTimeoutMillis(), state.renewLease(caller(channel), r.holder(), r.files()));
        }
      case ABANDON_FILE:
        state.abandon(caller(channel), Messages.AbandonFileRequest.decode(in).fileId());
        return Message.EMPTY;
      case GET_DELEGATION_TOKEN:
        {
          Messages.DelegationTokenRequest r = Messages.DelegationTokenRequest.decode(in);
          Caller caller = caller(channel);
          if (!authenticated) {
            throw new EmberException(
                ErrorCode.INVALID_ARGUMENT,
                "this name node issues no delegation tokens: it runs without "
                    + io.ember.protocol.EmberKeys.TLS.name()
                    + " or "
                    + EmberKeys.SCRAM.name()
                    + ", and every caller is let through");
          }
          if (byDelegation(channel)) {
            throw new EmberException(
                ErrorCode.PERMISSION_DENIED,
                "a client authenticated by a delegation token gets no further token: ask with a"
                    + " certificate or a password");
          }
          return new Messages.TokenMessage(
              state.issueDelegationToken(caller, r.renewer()).encode());
        }
      case RENEW_DELEGATION_TOKEN:
        {
          DelegationToken token = tokenIn(in);
          if (byDelegation(channel)) {
            // Else a stolen token could keep itself alive to its maximum life.
            throw new EmberException(
                ErrorCode.PERMISSION_DENIED,
                "a client authenticated by a delegation token renews no token: renew with the"
                    + " renewer's certificate");
          }
          return new Messages.TokenExpiryResponse(
              state.renewDelegationToken(caller(channel), token));
        }
      case CANCEL_DELEGATION_TOKEN:
        {
          DelegationToken token = tokenIn(in);
          state.cancelDelegationToken(caller(channel), token);
          return Message.EMPTY;
        }
      case AUTHENTICATE:
        {
          DelegationToken token = tokenIn(in);
          if (!authenticated) {
            return Message.EMPTY; // every caller is let through already
          }
          if (io.ember.protocol.Tls.peerIdentity(channel) != null
              || channel.attr(CALLER).get() != null
              || channel.attr(SCRAM_EXCHANGE).get() != null) {
            // A token does not finish or replace a password exchange begun on this connection.
            throw new EmberException(
                ErrorCode.INVALID_ARGUMENT,
                "this connection is authenticated already, or began a password exchange: a"
                    + " delegation token is for a client without a certificate or password, once"
                    + " per connection");
          }
          Caller caller = state.authenticate(token);
          channel.attr(BY_DELEGATION).set(token);
          channel.attr(CALLER).set(caller);
          LOG.debug("{} authenticated {} by {}", channel.remoteAddress(), caller, token);
          return Message.EMPTY;
        }
      case SCRAM_FIRST:
        {
          String first =
              Wire.readString(in, "SCRAM message", io.ember.protocol.Scram.MAX_MESSAGE_BYTES);
          Wire.expectEnd(in, "SCRAM_FIRST");
          if (credentials == null) {
            throw new EmberException(
                ErrorCode.UNAUTHENTICATED,
                "this name node takes no passwords: it runs without "
                    + EmberKeys.SCRAM.name()
                    + "=true"
                    + (authenticated ? "" : ", and every caller is let through"));
          }
          if (channel.attr(CALLER).get() != null
              || io.ember.protocol.Tls.peerIdentity(channel) != null
              || channel.attr(SCRAM_EXCHANGE).get() != null) {
            // One exchange per connection: a guesser must connect again for every password.
            throw new EmberException(
                ErrorCode.UNAUTHENTICATED,
                "this connection has authenticated, or tried to, already: one password exchange"
                    + " per connection");
          }
          io.ember.protocol.Scram.Server exchange =
              new io.ember.protocol.Scram.Server(credentials::verifier, credentials.secret());
          channel.attr(SCRAM_EXCHANGE).set(exchange);
          String answer = exchange.first(first);
          return out -> Wire.writeString(out, answer);
        }
      case SCRAM_LAST:
        {
          String last =
              Wire.readString(in, "SCRAM message", io.ember.protocol.Scram.MAX_MESSAGE_BYTES);
          Wire.expectEnd(in, "SCRAM_LAST");
          io.ember.protocol.Scram.Server exchange = channel.attr(SCRAM_EXCHANGE).get();
          if (exchange == null || channel.attr(CALLER).get() != null) {
            throw new EmberException(
                ErrorCode.UNAUTHENTICATED, "SCRAM_LAST without SCRAM_FIRST on this connection");
          }
          String answer;
          try {
            answer = exchange.last(last);
          } catch (EmberException refused) {
            LOG.warn("name node: {} from {}", refused.getMessage(), channel.remoteAddress());
            throw refused;
          }
          Caller caller = state.caller(exchange.user());
          channel.attr(CALLER).set(caller);
          LOG.debug("{} authenticated as {} by password", channel.remoteAddress(), caller);
          return out -> Wire.writeString(out, answer);
        }
      case DF:
        caller(channel);
        Wire.expectEnd(in, "DF");
        return new Messages.DfResponse(state.usage());
      case DATANODES:
        caller(channel);
        Wire.expectEnd(in, "DATANODES");
        return new Messages.DatanodesResponse(state.report().datanodes());
      case REGISTER_DATANODE:
        checkDatanode(channel, type);
        return register(channel, Messages.RegisterRequest.decode(in));
      case HEARTBEAT:
        {
          checkDatanode(channel, type);
          Messages.HeartbeatRequest r = Messages.HeartbeatRequest.decode(in);
          checkHeartbeatConnection(r.datanodeId(), channel);
          Messages.HeartbeatResponse answer =
              new Messages.HeartbeatResponse(
                  state.heartbeat(r.datanodeId(), r.trimmed()),
                  tokens == null ? List.of() : blockKeysFor(channel));
          // A node whose connection closed may heartbeat on its new one: that is its connection
          // now.
          datanodeConnections.put(r.datanodeId(), channel);
          return answer;
        }
      case BLOCK_REPORT:
        {
          checkDatanode(channel, type);
          Messages.BlockReportRequest r = Messages.BlockReportRequest.decode(in);
          checkHeartbeatConnection(r.datanodeId(), channel);
          state.blockReport(r.datanodeId(), r.incarnation(), r.blocks());
          return Message.EMPTY;
        }
      default:
        throw new EmberException(
            ErrorCode.UNKNOWN_MESSAGE, type + " is not served by the name node");
    }
  }

  private final class Service implements RpcService {
    @Override
    public Message handle(Channel channel, MessageType type, ByteBuf in) throws EmberException {
      if (handlers != null && !channel.hasAttr(LANE)) {
        // RpcServer answers each request on the network thread that read it and has no place
        // for an executor; a lane placed in front of its handler takes this connection's later
        // requests to the pool. The first one runs here, on the network thread.
        Lane lane = new Lane(channel);
        channel.attr(LANE).set(lane);
        ChannelPipeline pipeline = channel.pipeline();
        ChannelHandlerContext frames = pipeline.context(FrameDecoder.class);
        if (frames == null) {
          LOG.error(
              "name node: no frame decoder on {}; its requests run on the network thread", channel);
        } else {
          pipeline.addAfter(frames.name(), "namenode-handlers", lane);
        }
      }
      return durable(channel, type, in);
    }

    @Override
    public void connectionClosed(Channel channel) {
      datanodeConnections.values().removeIf(c -> c == channel);
    }
  }

  /**
   * Takes a connection's requests from its network thread to the handler pool and runs them there,
   * one at a time and in the order they came, answering each as the RPC server would. Frames the
   * server answers by itself (no-ops, malformed frames, frames of another version) go on to it.
   * Reading from the connection pauses while many of its requests wait.
   */
  private final class Lane extends ChannelInboundHandlerAdapter implements Runnable {
    private final Channel channel;
    private final Queue<Frame> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();

    /** True while this lane is on the pool's queue or running: it runs on one thread at once. */
    private final AtomicBoolean scheduled = new AtomicBoolean();

    Lane(Channel channel) {
      this.channel = channel;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      Frame frame = (Frame) msg;
      MessageType type =
          frame.version() == Frame.VERSION && !frame.isResponse()
              ? MessageType.fromCode(frame.type())
              : null;
      if (type == null || type == MessageType.NOOP) {
        ctx.fireChannelRead(msg);
        return;
      }
      queue.add(frame);
      if (queued.incrementAndGet() >= MAX_QUEUED_PER_CONNECTION || !channel.isWritable()) {
        channel.config().setAutoRead(false);
      }
      schedule();
    }

    private void schedule() {
      if (!scheduled.compareAndSet(false, true)) {
        return;
      }
      try {
        handlers.execute(this);
      } catch (RejectedExecutionException e) {
        // The name node is closing: nothing more is answered.
        for (Frame f; (f = queue.poll()) != null; ) {
          f.release();
        }
        scheduled.set(false);
      }
    }

    @Override
    public void run() {
      int done = 0;
      try {
        for (Frame frame; done < BATCH && (frame = queue.poll()) != null; done++) {
          try {
            if (!closing) {
              respond(frame);
            }
          } catch (RuntimeException e) {
            // An answer that cannot be written: as on the network thread, the connection goes.
            LOG.error("name node: closing connection from {}", channel.remoteAddress(), e);
            channel
                .close()
                .addListener(
                    f -> {
                      if (!f.isSuccess()) {
                        LOG.debug(
                            "name node: closing {} failed", channel.remoteAddress(), f.cause());
                      }
                    });
          } finally {
            frame.release();
          }
        }
        if (done > 0) {
          channel.flush();
        }
      } finally {
        int left = queued.addAndGet(-done);
        if (left < MAX_QUEUED_PER_CONNECTION / 2
            && channel.isWritable()
            && !channel.config().isAutoRead()) {
          channel.config().setAutoRead(true);
        }
        scheduled.set(false);
        if (!queue.isEmpty()) {
          schedule();
        }
      }
    }

    /** What the RPC server does with an answer or an error, here off its thread. */
    private void respond(Frame frame) {
      Message answer;
      try {
        answer = service.handle(channel, MessageType.fromCode(frame.type()), frame.payload());
      } catch (EmberException | RuntimeException e) {
        RpcServer.replyError(channel, "name node", frame.type(), frame.requestId(), e);
        return;
      }
      RpcServer.reply(channel, "name node", frame.type(), frame.requestId(), answer);
    }
  }
}
