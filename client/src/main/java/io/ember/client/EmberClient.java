package io.ember.client;

import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.StorageTier;
import io.ember.client.spi.TierContext;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.DirectConnection;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.Paths;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClient;
import io.ember.protocol.RpcClients;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The entry point to an Ember cluster: namespace operations against the name node, and streams that
 * move bytes straight between this process and the data nodes.
 *
 * <p>Every operation has an asynchronous form returning a {@link CompletableFuture} that fails with
 * an {@link EmberException}, and a blocking convenience that throws it. Futures complete on the
 * client's network threads: continuations must not block. Paths are absolute and follow {@link
 * Paths}' rules. A client is thread-safe; share one per process.
 *
 * <pre>{@code
 * try (EmberClient client = EmberClient.connect("127.0.0.1:9060")) {
 *   try (EmberOutputStream out = client.create("/data/part-0", CreateOptions.DEFAULT)) {
 *     out.write(bytes);
 *   }
 *   try (EmberInputStream in = client.open("/data/part-0")) {
 *     in.readNBytes(buffer, 0, buffer.length);
 *   }
 * }
 * }</pre>
 */
public final class EmberClient implements AutoCloseable {
  private static final int LIST_PAGE = 1024;
  private static final int BLOCKS_PER_FETCH = 64;
  private static final long UNCHECKED_TRUST_NANOS = BlockLocation.UNCHECKED_TRUST.toNanos();

  private final EmberConfig config;
  private final HostPort namenode;
  private final RpcClients connections;
  private final LifeCycle lifeCycle = new LifeCycle("Ember client");
  private final Map<String, StorageTier> tiers = new HashMap<>();
  private final Map<String, StorageEndpoint> endpoints = new ConcurrentHashMap<>();
  private final BlockCache blockCache;
  private final ClientMetrics metrics = new ClientMetrics();
  private final int transferSize;

  /** Names this client to the name node as the holder of the files it writes. */
  private final String leaseHolder = newLeaseHolder();

  /** Streams writing, by file id: their leases are renewed while they are open. */
  private final Map<Long, EmberOutputStream> writing = new ConcurrentHashMap<>();

  /** Renews leases, started with the first stream that writes. */
  private java.util.concurrent.ScheduledExecutorService renewer;

  /** Set at close: no renewer starts after it. Guarded by {@link #writing}. */
  private boolean renewerStopped;

  /** How often leases are renewed: a quarter of the name node's lease timeout once known. */
  private volatile long renewMillis = 1000;

  /** Orders calls to the name node that wait for the shared connection to open. */
  private final Object sendOrder = new Object();

  /** Calls that wait for the shared connection to open, in the order made (sendOrder's lock). */
  private final java.util.ArrayDeque<WaitingCall> waiting = new java.util.ArrayDeque<>();

  /** True while waiting calls are being sent (sendOrder's lock): later calls queue behind them. */
  private boolean draining;

  /** True on a thread inside {@link #blocking}: its name node calls may be made on it. */
  private static final ThreadLocal<Boolean> CALLER_WAITS = ThreadLocal.withInitial(() -> false);

  /** The name node connection of calls made on their callers' threads, or null. */
  private final DirectConnection direct;

  /** Longest a blocking call waits: every call's own timeouts are shorter. */
  private final java.time.Duration waitLimit;

  /** Memory for output streams' data, kept from one write to the next. */
  private final WriteBuffers writeBuffers;

  private final long writeBuffersIdleNanos;

  private EmberClient(EmberConfig config, HostPort namenode) {
    this.config = config;
    this.namenode = namenode;
    long transfer = config.get(ClientKeys.TRANSFER_SIZE);
    if (Long.bitCount(transfer) != 1) {
      throw new IllegalArgumentException(
          ClientKeys.TRANSFER_SIZE.name() + ": " + transfer + " is not a power of two");
    }
    if (transfer + 1024 > config.get(EmberKeys.MAX_FRAME_BYTES)) {
      throw new IllegalArgumentException(
          ClientKeys.TRANSFER_SIZE.name()
              + " ("
              + transfer
              + ") must be below "
              + EmberKeys.MAX_FRAME_BYTES.name());
    }
    this.transferSize = (int) transfer;
    this.waitLimit =
        config
            .get(EmberKeys.RPC_TIMEOUT)
            .plus(config.get(EmberKeys.CONNECT_TIMEOUT))
            .plusSeconds(10);
    this.blockCache = new BlockCache(config.get(ClientKeys.BLOCK_CACHE_FILES));
    this.writeBuffers = new WriteBuffers(config.get(ClientKeys.WRITE_BUFFERS_KEPT));
    this.writeBuffersIdleNanos = config.get(ClientKeys.WRITE_BUFFERS_IDLE).toNanos();
    metrics.writeMemoryKept = writeBuffers::idleBytes;
    for (StorageTier t :
        ServiceLoader.load(StorageTier.class, EmberClient.class.getClassLoader())) {
      tiers.put(t.name(), t);
    }
    this.connections = new RpcClients(config, "ember-client");
    // A client without a certificate to show proves a password or shows a delegation token as each
    // name node connection opens, and acts as that user from then on.
    io.ember.protocol.Greeting greeting;
    try {
      greeting = EmberKeys.greeting(config);
    } catch (IllegalArgumentException e) {
      connections.close();
      throw e;
    }
    if (greeting != null) {
      connections.greet(namenode, greeting);
    }
    // A direct call's socket is a plain one; under TLS every call takes the secured connection.
    this.direct =
        config.get(ClientKeys.DIRECT_CALLS) && !EmberKeys.secured(config)
            ? new DirectConnection(namenode, "name node", config, config.get(ClientKeys.SPIN_WAIT))
                .greetWith(greeting)
            : null;
  }

  /**
   * Connects to the name node at {@link EmberKeys#NAMENODE_ADDRESS} and checks that it answers.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the name node does not answer
   * @throws IllegalArgumentException when a configuration value is bad
   */
  public static EmberClient connect(EmberConfig config) throws EmberException {
    HostPort nn =
        HostPort.parse(config.get(EmberKeys.NAMENODE_ADDRESS), EmberKeys.DEFAULT_NAMENODE_PORT);
    EmberClient client = new EmberClient(config, nn);
    client.lifeCycle.beginStart();
    try {
      client.blocking(client::noopAsync);
    } catch (EmberException e) {
      client.close();
      throw e;
    }
    client.lifeCycle.started();
    return client;
  }

  /**
   * Connects to the name node at {@code host:port} with default settings.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the name node does not answer
   */
  public static EmberClient connect(String namenodeAddress) throws EmberException {
    return connect(EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenodeAddress));
  }

  /** The client's configuration. */
  public EmberConfig config() {
    return config;
  }

  /** The name node's address. */
  public HostPort namenode() {
    return namenode;
  }

  /** The client's counters. */
  public ClientMetrics metrics() {
    return metrics;
  }

  // ---- namespace: async ----------------------------------------------------------------------

  /** A round trip to the name node that does nothing: the floor of every metadata call. */
  public CompletableFuture<Void> noopAsync() {
    return call(MessageType.NOOP, Message.EMPTY, ResponseDecoder.EMPTY);
  }

  /**
   * Creates a file, directory or multifile.
   *
   * @return the new entry; fails with ALREADY_EXISTS, PARENT_NOT_FOUND, NOT_A_DIRECTORY,
   *     INVALID_PATH, or INVALID_ARGUMENT for {@link CreateOptions#overwrite} on other than a file
   */
  public CompletableFuture<NodeStatus> createAsync(
      String path, NodeType type, CreateOptions options) {
    return call(
        MessageType.CREATE,
        new Messages.CreateRequest(
            path,
            type,
            options.storageClass(),
            options.createParents(),
            type == NodeType.FILE ? leaseHolder : "",
            false,
            options.overwrite(),
            options.permission()),
        NodeStatus::decode);
  }

  /** Creates a file under this client's lease, with its first block when a class has room. */
  private CompletableFuture<Messages.CreateResponse> createFileAsync(
      String path, CreateOptions options) {
    return call(
        MessageType.CREATE,
        new Messages.CreateRequest(
            path,
            NodeType.FILE,
            options.storageClass(),
            options.createParents(),
            leaseHolder,
            true,
            options.overwrite(),
            options.permission()),
        Messages.CreateResponse::decode);
  }

  /**
   * The status of one path.
   *
   * @return fails with NOT_FOUND or INVALID_PATH
   */
  public CompletableFuture<NodeStatus> lookupAsync(String path) {
    // Paths are checked here, before they are sent, so that a bad one gets the same clear error
    // from every call rather than the name node's refusal of a malformed frame.
    return normalized(path)
        .thenCompose(
            p ->
                call(
                    MessageType.LOOKUP,
                    new Messages.PathRequest(p),
                    in -> {
                      NodeStatus s = NodeStatus.decode(in);
                      io.ember.protocol.Wire.expectEnd(in, "LOOKUP answer");
                      return s;
                    }));
  }

  /**
   * All entries of a directory or multifile, in name order (fetched in pages).
   *
   * @return fails with NOT_FOUND or NOT_A_DIRECTORY
   */
  public CompletableFuture<List<DirEntry>> listAsync(String path) {
    List<DirEntry> all = new ArrayList<>();
    return normalized(path).thenCompose(p -> listFrom(p, "", all));
  }

  private CompletableFuture<List<DirEntry>> listFrom(
      String path, String after, List<DirEntry> all) {
    return call(
            MessageType.LIST,
            new Messages.ListRequest(path, after, LIST_PAGE),
            Messages.ListResponse::decode)
        .thenCompose(
            page -> {
              all.addAll(page.entries());
              if (page.more() && !page.entries().isEmpty()) {
                return listFrom(path, page.entries().get(page.entries().size() - 1).name(), all);
              }
              return CompletableFuture.completedFuture(all);
            });
  }

  /**
   * Deletes a path and frees its blocks; a non-empty directory needs {@code recursive}.
   *
   * @return fails with NOT_FOUND, DIRECTORY_NOT_EMPTY or INVALID_ARGUMENT (the root)
   */
  public CompletableFuture<Void> deleteAsync(String path, boolean recursive) {
    return normalized(path)
        .thenCompose(
            p ->
                call(
                    MessageType.DELETE,
                    new Messages.DeleteRequest(p, recursive),
                    ResponseDecoder.EMPTY));
  }

  /**
   * Moves {@code source} to {@code target} atomically. The target must not exist and its parent
   * must; a directory cannot move into itself.
   *
   * @return fails with NOT_FOUND, ALREADY_EXISTS, PARENT_NOT_FOUND or RENAME_INTO_ITSELF
   */
  public CompletableFuture<Void> renameAsync(String source, String target) {
    return normalized(source)
        .thenCombine(normalized(target), Messages.RenameRequest::new)
        .thenCompose(r -> call(MessageType.RENAME, r, ResponseDecoder.EMPTY));
  }

  /**
   * Changes an entry's owner (unless {@code owner} is empty), group (unless {@code group} is empty)
   * and mode bits (unless {@code permission} is {@link io.ember.protocol.Permissions#DEFAULT}), in
   * one step. Only the super-user changes an owner; an entry's owner changes its mode, and its
   * group to a group the owner is in. Without TLS every caller is the super-user.
   *
   * @return the entry's new status; fails with NOT_FOUND, INVALID_PATH or PERMISSION_DENIED
   */
  public CompletableFuture<NodeStatus> setAttributesAsync(
      String path, String owner, String group, int permission) {
    return normalized(path)
        .thenCompose(
            p ->
                call(
                    MessageType.SET_ATTRIBUTES,
                    new Messages.SetAttributesRequest(p, owner, group, permission),
                    NodeStatus::decode));
  }

  /**
   * Changes an entry's owner, group or mode bits, as {@link #setAttributesAsync} does, waited for.
   *
   * @throws EmberException as {@link #setAttributesAsync}
   */
  public NodeStatus setAttributes(String path, String owner, String group, int permission)
      throws EmberException {
    return blocking(() -> setAttributesAsync(path, owner, group, permission));
  }

  /** Capacity and use per storage class. */
  public CompletableFuture<List<ClassUsage>> dfAsync() {
    return call(MessageType.DF, Message.EMPTY, Messages.DfResponse::decode)
        .thenApply(Messages.DfResponse::classes);
  }

  /** Every data node the name node knows, lost ones too; see {@link #datanodes()}. */
  public CompletableFuture<List<Messages.DatanodeInfo>> datanodesAsync() {
    return call(MessageType.DATANODES, Message.EMPTY, Messages.DatanodesResponse::decode)
        .thenApply(Messages.DatanodesResponse::datanodes);
  }

  // ---- namespace: blocking -------------------------------------------------------------------

  /**
   * A round trip to the name node that does nothing, waited for.
   *
   * @throws EmberException when the name node cannot be reached or does not answer in time
   */
  public void noop() throws EmberException {
    blocking(this::noopAsync);
  }

  /**
   * Creates an empty directory.
   *
   * @throws EmberException as {@link #createAsync}
   */
  public NodeStatus createDirectory(String path, boolean createParents) throws EmberException {
    return blocking(
        () ->
            createAsync(
                path, NodeType.DIRECTORY, CreateOptions.DEFAULT.withCreateParents(createParents)));
  }

  /**
   * Creates an empty directory with {@code options} (its storage class, parents and mode).
   *
   * @throws EmberException as {@link #createAsync}
   */
  public NodeStatus createDirectory(String path, CreateOptions options) throws EmberException {
    return blocking(() -> createAsync(path, NodeType.DIRECTORY, options));
  }

  /**
   * Creates a multifile: a directory whose child files many writers write at once.
   *
   * @throws EmberException as {@link #createAsync}
   */
  public NodeStatus createMultiFile(String path, CreateOptions options) throws EmberException {
    return blocking(() -> createAsync(path, NodeType.MULTIFILE, options));
  }

  /**
   * Creates a file and opens it for writing, unbuffered: each write goes to the data node as it is
   * (split at block boundaries), with up to {@link ClientKeys#WRITE_WINDOW} bytes in flight.
   *
   * @throws EmberException as {@link #createAsync}
   */
  public EmberOutputStream create(String path, CreateOptions options) throws EmberException {
    return createStream(path, options, 0);
  }

  /**
   * Creates a file and opens it for writing through a buffer of {@link ClientKeys#BUFFER_SIZE}: for
   * many small writes. The buffer is sent when full or on {@code flush()}, in pieces aligned to the
   * buffer and the block.
   *
   * @throws EmberException as {@link #createAsync}
   */
  public EmberOutputStream createBuffered(String path, CreateOptions options)
      throws EmberException {
    return createStream(path, options, (int) (long) config.get(ClientKeys.BUFFER_SIZE));
  }

  /**
   * Creates a file and opens it for writing through a buffer, as {@link #createBuffered} does,
   * without waiting: a caller that starts this before it has bytes to write overlaps the name
   * node's round trips (the create and the first block's allocation) with its own work.
   *
   * @return fails as {@link #createAsync}
   */
  public CompletableFuture<EmberOutputStream> createBufferedAsync(
      String path, CreateOptions options) {
    return createStreamAsync(path, options, (int) (long) config.get(ClientKeys.BUFFER_SIZE));
  }

  private EmberOutputStream createStream(String path, CreateOptions options, int bufferSize)
      throws EmberException {
    return blocking(() -> createStreamAsync(path, options, bufferSize));
  }

  private CompletableFuture<EmberOutputStream> createStreamAsync(
      String path, CreateOptions options, int bufferSize) {
    return normalized(path)
        .thenCompose(
            canonical ->
                createFileAsync(canonical, options)
                    .thenApply(
                        created -> {
                          NodeStatus st = created.status();
                          int blockSize = st.blockSize();
                          EmberOutputStream out =
                              new EmberOutputStream(
                                  this,
                                  canonical,
                                  st.id(),
                                  blockSize,
                                  Math.min(transferSize, blockSize),
                                  bufferSize,
                                  config.get(ClientKeys.WRITE_WINDOW));
                          out.firstBlock(created.firstBlock());
                          startWriting(out);
                          return out;
                        }));
  }

  /** The path in canonical form, or INVALID_PATH as a failed future. */
  private static CompletableFuture<String> normalized(String path) {
    try {
      return CompletableFuture.completedFuture(Paths.normalize(path));
    } catch (EmberException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Opens a file for reading. The reader sees the length published when the file was closed.
   *
   * @throws EmberException NOT_FOUND, or NOT_A_FILE for a directory or multifile
   */
  public EmberInputStream open(String path) throws EmberException {
    return blocking(() -> openAsync(path));
  }

  /**
   * Opens a file for reading without waiting, so a caller can open many at once; otherwise as
   * {@link #open}.
   *
   * @return fails with NOT_FOUND or INVALID_PATH, or NOT_A_FILE for a directory or multifile
   */
  public CompletableFuture<EmberInputStream> openAsync(String path) {
    return normalized(path)
        .thenCompose(
            canonical -> {
              long asked = System.nanoTime();
              return call(
                      MessageType.OPEN,
                      new Messages.OpenRequest(canonical, BLOCKS_PER_FETCH),
                      Messages.OpenResponse::decode)
                  .thenApply(opened -> streamOf(canonical, opened, asked));
            });
  }

  private EmberInputStream streamOf(String path, Messages.OpenResponse opened, long askedNanos) {
    NodeStatus st = opened.status();
    if (!st.isFile()) {
      throw new CompletionException(
          new EmberException(
              ErrorCode.NOT_A_FILE,
              path
                  + " is a "
                  + st.type().name().toLowerCase(Locale.ROOT)
                  + ", not a file"
                  + (st.type() == NodeType.MULTIFILE ? " (use openMultiFile)" : "")));
    }
    // The first blocks' locations come with the status, so a first read needs no round trip to
    // the name node of its own.
    blockCache.put(st.id(), opened.blocks(), askedNanos);
    return new EmberInputStream(this, path, st, transferSize, config.get(ClientKeys.READ_AHEAD));
  }

  /**
   * Opens a multifile for reading: its closed child files one after another, in name order, as one
   * stream. Children still being written are skipped.
   *
   * @throws EmberException NOT_FOUND, or NOT_A_DIRECTORY when the path is not a multifile
   */
  public InputStream openMultiFile(String path) throws EmberException {
    String canonical = Paths.normalize(path);
    NodeStatus st = lookup(canonical);
    if (st.type() != NodeType.MULTIFILE) {
      throw new EmberException(ErrorCode.NOT_A_DIRECTORY, canonical + " is not a multifile");
    }
    List<DirEntry> children = new ArrayList<>(list(canonical));
    children.removeIf(e -> !e.status().isFile() || e.status().open());
    children.sort(Comparator.comparing(DirEntry::name));
    return new MultiFileInputStream(this, canonical, children);
  }

  // ---- delegation tokens ---------------------------------------------------------------------

  /**
   * Asks the name node for a delegation token that acts as this client's identity, for processes
   * this one starts that have no certificate of their own ({@link EmberKeys#DELEGATION_TOKEN}). The
   * token holds for the name node's renew interval unless renewed, and never past its maximum life.
   *
   * @param renewer who may renew it (empty: this client's identity)
   * @throws EmberException INVALID_ARGUMENT on a cluster without TLS (every caller is let through
   *     there, and no token is needed); PERMISSION_DENIED for a client that itself authenticated
   *     with a token
   */
  public DelegationToken getDelegationToken(String renewer) throws EmberException {
    byte[] bytes =
        blocking(
            () ->
                call(
                    MessageType.GET_DELEGATION_TOKEN,
                    new Messages.DelegationTokenRequest(renewer),
                    in -> Messages.TokenMessage.decode(in).token()));
    return DelegationToken.decode(bytes);
  }

  /**
   * Extends a delegation token's life by the name node's renew interval, up to its maximum life.
   *
   * @return when it now expires, milliseconds since the epoch
   * @throws EmberException UNAUTHENTICATED for a token that is altered, cancelled or expired;
   *     PERMISSION_DENIED when this client is not its renewer
   */
  public long renewDelegationToken(DelegationToken token) throws EmberException {
    return blocking(
        () ->
            call(
                MessageType.RENEW_DELEGATION_TOKEN,
                new Messages.TokenMessage(token.encode()),
                in -> Messages.TokenExpiryResponse.decode(in).expiresMillis()));
  }

  /**
   * Ends a delegation token: no new connection authenticates with it.
   *
   * @throws EmberException UNAUTHENTICATED for a token that is altered, cancelled or expired;
   *     PERMISSION_DENIED when this client is neither its owner, its renewer nor a super-user
   */
  public void cancelDelegationToken(DelegationToken token) throws EmberException {
    blocking(
        () ->
            call(
                MessageType.CANCEL_DELEGATION_TOKEN,
                new Messages.TokenMessage(token.encode()),
                ResponseDecoder.EMPTY));
  }

  /**
   * The status of a path.
   *
   * @throws EmberException NOT_FOUND or INVALID_PATH
   */
  public NodeStatus lookup(String path) throws EmberException {
    return blocking(() -> lookupAsync(path));
  }

  /**
   * The entries of a directory or multifile.
   *
   * @throws EmberException NOT_FOUND or NOT_A_DIRECTORY
   */
  public List<DirEntry> list(String path) throws EmberException {
    return blocking(() -> listAsync(path));
  }

  /**
   * Deletes a path.
   *
   * @throws EmberException as {@link #deleteAsync}
   */
  public void delete(String path, boolean recursive) throws EmberException {
    blocking(() -> deleteAsync(path, recursive));
  }

  /**
   * Renames a path.
   *
   * @throws EmberException as {@link #renameAsync}
   */
  public void rename(String source, String target) throws EmberException {
    blocking(() -> renameAsync(source, target));
  }

  /**
   * Capacity and use per storage class.
   *
   * @throws EmberException when the name node cannot be reached
   */
  public List<ClassUsage> df() throws EmberException {
    return blocking(this::dfAsync);
  }

  /**
   * Every data node the name node knows, with its state (live, lost, unreported, replaced) and use.
   *
   * @throws EmberException when the name node cannot be reached
   */
  public List<Messages.DatanodeInfo> datanodes() throws EmberException {
    return blocking(this::datanodesAsync);
  }

  /**
   * Every block location of a file, fetched from the name node (and cached).
   *
   * @throws EmberException NOT_FOUND or NOT_A_FILE
   */
  public List<BlockLocation> blockLocations(String path) throws EmberException {
    NodeStatus st = lookup(path);
    if (!st.isFile()) {
      throw new EmberException(ErrorCode.NOT_A_FILE, path + " is not a file");
    }
    List<BlockLocation> all = new ArrayList<>();
    long fileId = st.id();
    while (all.size() < st.blockCount()) {
      List<BlockLocation> page = blocking(() -> fetchBlocks(fileId, all.size()));
      if (page.isEmpty()) {
        break;
      }
      all.addAll(page);
    }
    return all;
  }

  /** Closes every connection. Streams still open fail on their next call. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    synchronized (writing) {
      renewerStopped = true;
      if (renewer != null) {
        renewer.shutdownNow();
      }
    }
    for (StorageEndpoint e : endpoints.values()) {
      e.close();
    }
    if (direct != null) {
      direct.close();
    }
    connections.close();
    writeBuffers.close();
    lifeCycle.closed();
  }

  // ---- internals used by the streams ---------------------------------------------------------

  /** Memory for output streams' data. */
  WriteBuffers writeBuffers() {
    return writeBuffers;
  }

  /** The name this client's leases are held under. */
  public String leaseHolder() {
    return leaseHolder;
  }

  private static String newLeaseHolder() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      host = "unknown-host";
    }
    return "ember-client@"
        + host
        + ":"
        + ProcessHandle.current().pid()
        + "#"
        + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong());
  }

  /** A stream's file is renewed under this client's lease until {@link #stopWriting}. */
  void startWriting(EmberOutputStream out) {
    writing.put(out.fileId(), out);
    synchronized (writing) {
      if (renewer == null && !renewerStopped) {
        renewer =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                r -> {
                  Thread t = new Thread(r, "ember-lease-renewer");
                  t.setDaemon(true);
                  return t;
                });
        // At once: the lease began at the create, and the name node's timeout is not known yet.
        renewer.execute(this::renewLeases);
      }
    }
  }

  void stopWriting(EmberOutputStream out) {
    writing.remove(out.fileId(), out);
  }

  private void renewLeases() {
    try {
      if (!writing.isEmpty()) {
        List<Messages.WrittenLength> files = new ArrayList<>();
        for (EmberOutputStream out : writing.values()) {
          files.add(new Messages.WrittenLength(out.fileId(), out.acknowledged()));
        }
        // Counted apart: a renewal runs on its own schedule, whatever the application is doing.
        metrics.leaseRenewals.increment();
        Messages.RenewLeaseResponse r =
            await(
                send(
                    MessageType.RENEW_LEASE,
                    new Messages.RenewLeaseRequest(leaseHolder, files),
                    Messages.RenewLeaseResponse::decode));
        renewMillis = Math.max(10, r.leaseTimeoutMillis() / 4);
        for (long id : r.lostFiles()) {
          EmberOutputStream out = writing.remove(id);
          if (out != null) {
            out.leaseLost();
          }
        }
      }
    } catch (EmberException | RuntimeException e) {
      org.slf4j.LoggerFactory.getLogger(EmberClient.class)
          .debug("lease renewal of {} failed (tried again): {}", leaseHolder, e.toString());
    } finally {
      // The renewer runs once a stream has written, which is when there is kept memory to free.
      writeBuffers.trimIfIdle(System.nanoTime(), writeBuffersIdleNanos);
      synchronized (writing) {
        if (renewer != null && !renewer.isShutdown()) {
          try {
            var unused =
                renewer.schedule(
                    this::renewLeases, renewMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
          } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
          }
        }
      }
    }
  }

  /** Gives up a file its writer failed to write: the name node deletes it if still open. */
  CompletableFuture<Void> abandonFile(long fileId) {
    return call(MessageType.ABANDON_FILE, new Messages.AbandonFileRequest(fileId), in -> null);
  }

  /** Waits for {@code f} at most as long as any Ember call may take, and unwraps its error. */
  <T> T await(CompletableFuture<T> f) throws EmberException {
    return Futures.await(f, waitLimit);
  }

  /**
   * Starts {@code call} and waits for it. Name node calls it makes on this thread go over the
   * direct connection when it is free ({@link ClientKeys#DIRECT_CALLS}): this thread waits anyway,
   * so it may as well do the socket work.
   */
  <T> T blocking(Supplier<CompletableFuture<T>> call) throws EmberException {
    if (CALLER_WAITS.get()) {
      return await(call.get()); // nested: the outer call clears the mark
    }
    CompletableFuture<T> f;
    CALLER_WAITS.set(true);
    try {
      f = call.get();
    } finally {
      CALLER_WAITS.set(false);
    }
    return await(f);
  }

  /**
   * Blocks {@code index} onward of a file being written: at least one, at most {@code count}. An
   * answer that is empty, too long or out of order fails as a malformed frame.
   */
  CompletableFuture<List<BlockLocation>> allocateBlocks(long fileId, int index, int count) {
    return allocate(MessageType.ALLOCATE_BLOCKS, fileId, index, count, 1);
  }

  /**
   * Blocks {@code index} onward of a file being written, asked before any write needs them: at most
   * {@code count}, and none when the file's class has no blocks to spare. An answer too long or out
   * of order fails as a malformed frame.
   */
  CompletableFuture<List<BlockLocation>> allocateAhead(long fileId, int index, int count) {
    return allocate(MessageType.ALLOCATE_AHEAD, fileId, index, count, 0);
  }

  private CompletableFuture<List<BlockLocation>> allocate(
      MessageType type, long fileId, int index, int count, int least) {
    return call(
        type,
        new Messages.AllocateBlocksRequest(fileId, index, count),
        in -> {
          List<BlockLocation> blocks = Messages.BlocksResponse.decode(in).blocks();
          if (blocks.size() < least || blocks.size() > count) {
            throw new io.ember.protocol.MalformedFrameException(
                type
                    + " answer holds "
                    + blocks.size()
                    + " blocks; "
                    + least
                    + " to "
                    + count
                    + " asked");
          }
          for (int k = 0; k < blocks.size(); k++) {
            if (blocks.get(k).index() != index + k) {
              throw new io.ember.protocol.MalformedFrameException(
                  type
                      + " answer gives block "
                      + blocks.get(k).index()
                      + " where block "
                      + (index + k)
                      + " was due");
            }
          }
          return blocks;
        });
  }

  CompletableFuture<NodeStatus> closeFile(long fileId, long length) {
    return call(
        MessageType.CLOSE_FILE, new Messages.CloseFileRequest(fileId, length), NodeStatus::decode);
  }

  /**
   * The location of block {@code index} of a file, from the cache or the name node. A cached
   * location of storage that cannot check generations (NVMf) is used only for {@link
   * BlockLocation#UNCHECKED_TRUST} after it was asked for; then the name node is asked again, so a
   * file deleted meanwhile fails to be found, and a reused block is never read as this file's.
   */
  CompletableFuture<BlockLocation> blockLocation(long fileId, int index) {
    BlockCache.Cached cached = blockCache.get(fileId, index);
    if (cached != null
        && (cached.askedWithin(UNCHECKED_TRUST_NANOS, System.nanoTime())
            || checksGenerations(cached.location()))) {
      metrics.blockCacheHits.increment();
      return CompletableFuture.completedFuture(cached.location());
    }
    metrics.blockCacheMisses.increment();
    return fetchBlocks(fileId, index)
        .thenApply(
            page -> {
              if (page.isEmpty() || page.get(0).index() != index) {
                throw new java.util.concurrent.CompletionException(
                    new EmberException(
                        ErrorCode.INTERNAL,
                        "name node has no block " + index + " of file id " + fileId));
              }
              return page.get(0);
            });
  }

  void invalidateBlocks(long fileId) {
    blockCache.invalidate(fileId);
  }

  /** Whether the storage of {@code block} refuses a generation it does not hold. */
  boolean checksGenerations(BlockLocation block) {
    try {
      return endpoint(block).checksGenerations();
    } catch (EmberException e) {
      return false; // the read will fail on the same lookup, with its message
    }
  }

  private CompletableFuture<List<BlockLocation>> fetchBlocks(long fileId, int start) {
    long asked = System.nanoTime();
    return call(
            MessageType.GET_BLOCKS,
            new Messages.GetBlocksRequest(fileId, start, BLOCKS_PER_FETCH),
            Messages.BlocksResponse::decode)
        .thenApply(
            r -> {
              blockCache.put(fileId, r.blocks(), asked);
              return r.blocks();
            });
  }

  /**
   * The endpoint for a block's tier.
   *
   * @throws EmberException when no tier of that name is on the class path
   */
  StorageEndpoint endpoint(BlockLocation block) throws EmberException {
    StorageEndpoint e = endpoints.get(block.tier());
    if (e != null) {
      return e;
    }
    synchronized (endpoints) {
      e = endpoints.get(block.tier());
      if (e == null) {
        lifeCycle.checkRunning();
        StorageTier tier = tiers.get(block.tier());
        if (tier == null) {
          throw new EmberException(
              ErrorCode.INTERNAL,
              "block "
                  + block.index()
                  + " is on tier '"
                  + block.tier()
                  + "', which this client does not have on its class path (tiers: "
                  + tiers.keySet()
                  + ")");
        }
        e = tier.open(new TierContext(config, connections, metrics));
        endpoints.put(block.tier(), e);
      }
      return e;
    }
  }

  private <T> CompletableFuture<T> call(MessageType type, Message body, ResponseDecoder<T> dec) {
    metrics.metadataCalls.increment();
    return send(type, body, dec);
  }

  /** As {@link #call}, without counting the call among the operations' metadata calls. */
  private <T> CompletableFuture<T> send(MessageType type, Message body, ResponseDecoder<T> dec) {
    if (direct != null && CALLER_WAITS.get()) {
      return direct.callOr(type, body, dec, () -> sharedCall(type, body, dec));
    }
    return sharedCall(type, body, dec);
  }

  /**
   * A call over the shared connection, sent after every call made before it. While the connection
   * opens, calls wait in a queue, sent in order once it is open: a future runs the continuations
   * that wait for it in no fixed order, and a writer's block allocations, asked one after another,
   * must reach the name node in the order asked.
   */
  private <T> CompletableFuture<T> sharedCall(
      MessageType type, Message body, ResponseDecoder<T> dec) {
    CompletableFuture<RpcClient> connection = connections.getOrRetry(namenode, "name node");
    boolean startDraining = false;
    CompletableFuture<T> answer;
    synchronized (sendOrder) {
      if (!draining && connection.isDone()) {
        return connection.thenCompose(c -> c.call(type, body, dec));
      }
      answer = new CompletableFuture<>();
      CompletableFuture<T> relayed = answer;
      waiting.add(
          new WaitingCall(
              connection,
              () -> relay(connection.thenCompose(c -> c.call(type, body, dec)), relayed)));
      if (!draining) {
        draining = true;
        startDraining = true;
      }
    }
    if (startDraining) {
      var unused = connection.whenComplete((c, e) -> drainWaiting());
    }
    return answer;
  }

  /** Completes {@code to} as {@code from} completes. */
  private static <T> void relay(CompletableFuture<T> from, CompletableFuture<T> to) {
    var unused =
        from.whenComplete(
            (v, e) -> {
              if (e != null) {
                to.completeExceptionally(EmberException.unwrap(e));
              } else {
                to.complete(v);
              }
            });
  }

  /** A call waiting for its connection to open, and how to send it once it is. */
  private record WaitingCall(CompletableFuture<RpcClient> connection, Runnable send) {}

  /** Sends the waiting calls in order, each once its connection is open (or failed). */
  private void drainWaiting() {
    while (true) {
      WaitingCall next;
      boolean ready;
      synchronized (sendOrder) {
        next = waiting.peek();
        if (next == null) {
          draining = false;
          return;
        }
        ready = next.connection().isDone();
        if (ready) {
          waiting.poll();
        }
      }
      if (!ready) {
        var unused = next.connection().whenComplete((c, e) -> drainWaiting());
        return;
      }
      next.send().run();
    }
  }
}
