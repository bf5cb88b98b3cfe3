package io.ember.datanode.nvmf;

import io.ember.datanode.DataNode;
import io.ember.datanode.NameNodeLink;
import io.ember.http.Page;
import io.ember.http.ServerMetrics;
import io.ember.http.StatusServer;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.target.ControllerStats;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.HostKeys;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Messages;
import io.ember.protocol.StorageClass;
import io.ember.tier.nvmf.NvmfTier;
import io.ember.tier.nvmf.NvmfTierKeys;
import io.ember.tier.nvmf.TargetStamp;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An NVMf data node: connects to a target as an admin host, reads the namespace's size and LBA
 * format, registers the namespace as blocks of storage class NVMf, and heartbeats. It is never on
 * the data path: clients talk to the target directly. Freed blocks come back through heartbeats and
 * are deallocated on the target (Dataset Management) before the name node reuses them. When the
 * target stops answering, heartbeats stop and the name node marks the blocks lost; when it answers
 * again, the node reconnects and registers anew. The namespace's last LBA records the incarnation
 * the node registered with ({@link TargetStamp}): clients check it, since they reach the target
 * without the node, and a target that kept its contents gets its blocks back.
 *
 * <p>Without a target URI it starts an embedded target backed by a file or by memory.
 */
public final class NvmfDataNode implements DataNode {
  /** The tier name clients look up to read and write this node's blocks. */
  public static final String TIER = NvmfTier.NAME;

  /** Subsystem NQN of the embedded target. */
  public static final String EMBEDDED_NQN = "nqn.2026-11.io.ember:embedded";

  private static final Logger LOG = LoggerFactory.getLogger(NvmfDataNode.class);

  private final NvmfTarget embedded;
  private final NvmfUri uri;

  /** The namespace's URI with its id, as block locations name it. */
  private final String endpoint;

  private final NvmfHostOptions options;
  private final int nsid;
  private final IdentifyNamespace namespace;
  private final NameNodeLink link;
  private final LifeCycle lifeCycle = new LifeCycle("NVMf data node");
  private final String namenodeAddress;
  private final ServerMetrics metrics;

  /** The status page and metrics, or null when they are off. */
  private final StatusServer http;

  private volatile NvmfController controller;
  private volatile boolean dsmWarned;

  /** The incarnation this node last recorded on the target, or 0 before it did. */
  private volatile long stamped;

  private NvmfDataNode(EmberConfig config) throws EmberException {
    lifeCycle.beginStart();
    try {
      String target = config.get(NvmfDataNodeKeys.TARGET);
      namenodeAddress = config.get(EmberKeys.NAMENODE_ADDRESS);
      if (EmberKeys.authenticates(config)) {
        LOG.warn(
            "{} and {} secure this node's calls to the name node, not the NVMe/TCP data between"
                + " clients and the target (which has DH-HMAC-CHAP for hosts instead): keep the"
                + " target on a network only the cluster reaches",
            EmberKeys.TLS.name(),
            EmberKeys.SCRAM.name());
      }
      metrics = new ServerMetrics(config.get(EmberKeys.METRICS_ENABLED));
      options =
          NvmfTierKeys.identity(
                  NvmfHostOptions.builder()
                      .ioQueues(1)
                      .ioQueueSize(32)
                      .commandTimeout(Duration.ofSeconds(10))
                      .connectTimeout(config.get(EmberKeys.CONNECT_TIMEOUT)),
                  config)
              .build();
      if (target.isBlank()) {
        embedded = lifeCycle.opened(startEmbedded(config));
        uri = NvmfUri.parse(embedded.uri(EMBEDDED_NQN) + "/1");
      } else {
        embedded = null;
        uri = parseTarget(target);
      }
      NvmfController c = lifeCycle.opened(connect());
      controller = c;
      namespace = activeNamespace(c);
      nsid = namespace.nsid();
      long blockSize = config.get(EmberKeys.BLOCK_SIZE);
      if (blockSize % namespace.blockSize() != 0) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            "the cluster block size ("
                + EmberKeys.BLOCK_SIZE.name()
                + ") "
                + blockSize
                + " is not a multiple of "
                + uri
                + "'s LBA size "
                + namespace.blockSize());
      }
      endpoint =
          new NvmfUri(uri.transport(), uri.host(), uri.port(), uri.subsystemNqn(), nsid).toString();
      // The last LBA holds the stamp, so it is left out of the blocks.
      link =
          lifeCycle.opened(
              new NameNodeLink(
                  config,
                  "NVMf data node for " + endpoint,
                  new Messages.RegisterRequest(StorageClass.NVMF, TIER, endpoint, capacity(), true),
                  this::deallocate,
                  this::healthy,
                  new Stamp()));
      GaugeWithCallback.builder()
          .name("ember_datanode_capacity_bytes")
          .help("bytes this data node offers, by tier")
          .labelNames("tier")
          .callback(cb -> cb.call((double) capacity(), TIER))
          .register(metrics.registry());
      if (embedded != null) {
        metrics.registry().register(new TargetMetrics(embedded));
      }
      http =
          lifeCycle.opened(
              StatusServer.startAsConfigured(
                  "nvmf-datanode",
                  routes(),
                  config.get(NvmfDataNodeKeys.HTTP_PORT),
                  config.get(NvmfDataNodeKeys.HTTP_HOST),
                  0,
                  io.ember.protocol.Tls.from(config)));
      link.start();
      LOG.info(
          "NVMf data node: {} bytes of {} (LBA {} bytes){}",
          namespace.sizeBytes(),
          endpoint,
          namespace.blockSize(),
          http == null ? "" : "; status page and metrics at " + http.url());
      lifeCycle.started();
    } catch (Throwable e) {
      // A node that never ran leaves no target, connection or heartbeat behind.
      lifeCycle.startFailed(e);
      throw e;
    }
  }

  /**
   * Starts an NVMf data node for {@link NvmfDataNodeKeys#TARGET}, or for an embedded target when it
   * is empty, and registers it with the name node. A start that fails closes whatever it had
   * started (the embedded target, the connection to the target) before it throws.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the target cannot be reached, {@link
   *     ErrorCode#INVALID_ARGUMENT} for a bad URI, a namespace id that is not active on the target
   *     (or a target with no active namespace), an LBA size the block size does not fit, or an
   *     embedded target that cannot start
   */
  public static NvmfDataNode start(EmberConfig config) throws EmberException {
    return new NvmfDataNode(config);
  }

  private static NvmfUri parseTarget(String target) throws EmberException {
    try {
      return NvmfUri.parse(target);
    } catch (IllegalArgumentException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT, NvmfDataNodeKeys.TARGET.name() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Connects to the target's subsystem as a whole, not to the one namespace: a connect naming an
   * inactive namespace fails like an unreachable target, which would hide a wrong namespace id.
   */
  private NvmfController connect() throws EmberException {
    NvmfUri subsystem = new NvmfUri(uri.transport(), uri.host(), uri.port(), uri.subsystemNqn(), 0);
    try {
      return NvmfHost.connect(subsystem, options);
    } catch (NvmfException e) {
      throw new EmberException(
          ErrorCode.UNREACHABLE, "cannot reach NVMf target " + uri + ": " + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          NvmfDataNodeKeys.TARGET.name() + ": " + uri + ": " + e.getMessage(),
          e);
    }
  }

  /** The namespace the URI names, or the first active one when it names none. */
  private IdentifyNamespace activeNamespace(NvmfController c) throws EmberException {
    List<IdentifyNamespace> active = c.namespaces();
    if (active.isEmpty()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "NVMf target "
              + uri
              + " has no active namespace: check the subsystem NQN in "
              + NvmfDataNodeKeys.TARGET.name());
    }
    if (uri.nsid() == 0) {
      return active.get(0);
    }
    List<Integer> ids = new ArrayList<>(active.size());
    for (IdentifyNamespace ns : active) {
      if (ns.nsid() == uri.nsid()) {
        return ns;
      }
      ids.add(ns.nsid());
    }
    throw new EmberException(
        ErrorCode.INVALID_ARGUMENT,
        "namespace "
            + uri.nsid()
            + " is not active on NVMf target "
            + uri
            + " (active: "
            + ids
            + "): check the namespace id in "
            + NvmfDataNodeKeys.TARGET.name());
  }

  /** What the status page and {@code /api/summary} show. */
  record Summary(
      String endpoint,
      String tier,
      int datanodeId,
      long incarnation,
      long capacityBytes,
      int lbaBytes,
      boolean connected,
      boolean embeddedTarget,
      String namenode,
      List<ControllerStats> controllers) {}

  private Summary summary() {
    NvmfController c = controller;
    return new Summary(
        endpoint,
        TIER,
        link.datanodeId(),
        stamped,
        capacity(),
        namespace.blockSize(),
        c != null && c.isConnected(),
        embedded != null,
        namenodeAddress,
        embedded == null ? List.of() : embedded.controllerStats());
  }

  private Map<String, StatusServer.Route> routes() {
    Map<String, StatusServer.Route> routes = new LinkedHashMap<>();
    routes.put("/", q -> statusPage());
    routes.put("/api/summary", q -> Page.json(summary()));
    routes.put("/metrics", metrics.route());
    return routes;
  }

  private StatusServer.Response statusPage() {
    Summary s = summary();
    Page page =
        new Page(
            "Ember NVMf data node " + s.endpoint(),
            5,
            List.of(new String[] {"JSON", "/api/summary"}, new String[] {"Metrics", "/metrics"}));
    page.table(
        List.of("", ""),
        List.of(
            List.of("name node", s.namenode()),
            List.of(
                "registered as", s.datanodeId() < 0 ? "not yet" : "data node " + s.datanodeId()),
            List.of("target", s.embeddedTarget() ? "embedded, in this process" : uri.toString()),
            List.of(
                "target state",
                Page.styled(
                    s.connected() ? "answering" : "not answering",
                    s.connected() ? "live" : "lost")),
            List.of("capacity", Page.bytes(s.capacityBytes())),
            List.of("LBA size", s.lbaBytes() + " B")));
    if (s.embeddedTarget()) {
      page.heading("Controllers of the embedded target");
      List<List<String>> rows = new ArrayList<>();
      for (ControllerStats c : s.controllers()) {
        rows.add(
            List.of(
                Integer.toString(c.cntlid()),
                c.hostNqn(),
                Integer.toString(c.ioQueues()),
                Integer.toString(c.outstanding()),
                Long.toString(c.reads()),
                Long.toString(c.writes()),
                Long.toString(c.others()),
                Long.toString(c.failed()),
                Page.bytes(c.bytesRead()),
                Page.bytes(c.bytesWritten()),
                c.commands() == 0
                    ? "-"
                    : String.format(
                        Locale.ROOT, "%.1f µs", c.latencySumSeconds() * 1e6 / c.commands())));
      }
      page.table(
          List.of(
              "controller",
              "host",
              "I/O queues",
              "outstanding",
              "reads",
              "writes",
              "other",
              "failed",
              "read",
              "written",
              "mean latency"),
          rows);
    }
    return page.done();
  }

  /** The address of the status page and {@code /metrics}, or null when they are off. */
  public InetSocketAddress httpAddress() {
    return http == null ? null : http.address();
  }

  /** Where a browser on this machine opens the status page (https under TLS), or null. */
  public String httpUrl() {
    return http == null ? null : http.url();
  }

  /** The target namespace, as clients address it. */
  public NvmfUri target() {
    return uri;
  }

  /** The embedded target, or null when the node exports an external one. */
  public NvmfTarget embeddedTarget() {
    return embedded;
  }

  /** The bytes of the namespace this node registers: all but the last LBA, which is its stamp. */
  public long capacity() {
    return namespace.sizeBytes() - namespace.blockSize();
  }

  /** The id the name node gave this node, or -1 while unregistered. */
  @Override
  public int datanodeId() {
    return link.datanodeId();
  }

  @Override
  public String tier() {
    return TIER;
  }

  @Override
  public StorageClass storageClass() {
    return StorageClass.NVMF;
  }

  /** The target namespace's URI with its namespace id, as block locations name it. */
  @Override
  public String endpoint() {
    return endpoint;
  }

  /** The incarnation the target's stamp recorded when last read or written, or 0. */
  @Override
  public long incarnation() {
    return stamped;
  }

  /**
   * Stops heartbeats until {@link #resume}, so the name node marks the node lost; the target is not
   * the data node's to stall, and clients reach it without the node.
   */
  @Override
  public void suspend() {
    link.suspend();
  }

  @Override
  public void resume() {
    link.resume();
  }

  private static NvmfTarget startEmbedded(EmberConfig config) throws EmberException {
    long size = config.get(NvmfDataNodeKeys.EMBEDDED_SIZE);
    String file = config.get(NvmfDataNodeKeys.EMBEDDED_FILE);
    try {
      Namespace ns =
          file.isBlank()
              ? new MemoryNamespace(size, 4096)
              : new FileNamespace(Path.of(file), size, 4096, true);
      Subsystem subsystem = new Subsystem(EMBEDDED_NQN).namespace(1, ns);
      String hosts = config.get(NvmfDataNodeKeys.EMBEDDED_HOSTS);
      if (!hosts.isBlank()) {
        HostKeys.read(Path.of(hosts)).forEach(subsystem::allowHost);
      }
      return NvmfTarget.builder()
          .listen("127.0.0.1", 0)
          .subsystem(subsystem)
          .countCommands(config.get(EmberKeys.METRICS_ENABLED))
          .busyPoll(config.get(NvmfDataNodeKeys.EMBEDDED_BUSY_POLL))
          .build()
          .start();
    } catch (IOException | IllegalArgumentException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot start the embedded NVMf target"
              + (file.isBlank() ? "" : " on " + file)
              + ": "
              + e.getMessage(),
          e);
    }
  }

  /**
   * Reads the stamp: the target answers and still holds this node's registration, or this node is
   * unhealthy (and tries to reconnect). A target that answers again after going away but no longer
   * holds the stamp lost its contents, however short the outage was.
   */
  private boolean healthy() {
    NvmfController c = controller;
    if (c != null) {
      try {
        return holdsStamp(c);
      } catch (Exception e) {
        LOG.warn(
            "NVMf target {} does not answer: {}",
            uri,
            // A timed-out wait carries no message of its own.
            e instanceof TimeoutException
                ? "no answer to a read of its stamp within " + PROBE_SECONDS + " s"
                : e.getMessage());
        controller = null;
        c.close();
      }
    }
    try {
      c = NvmfHost.connect(uri, options);
    } catch (NvmfException e) {
      return false;
    }
    controller = c;
    LOG.info("NVMf target {} answers again", uri);
    try {
      return holdsStamp(c);
    } catch (Exception e) {
      return false;
    }
  }

  /** How long the health probe waits for the target to answer a read of the stamp. */
  private static final int PROBE_SECONDS = 5;

  private boolean holdsStamp(NvmfController c) throws Exception {
    long held = TargetStamp.read(c.ioQueue(0), namespace).get(PROBE_SECONDS, TimeUnit.SECONDS);
    long expected = stamped;
    if (expected != 0 && held != expected) {
      // Unhealthy once: heartbeats stop, and the node registers again under whatever the target
      // records now, or as a new node.
      LOG.warn("NVMf target {} no longer holds this node's stamp: its contents are gone", uri);
      stamped = 0;
      return false;
    }
    return true;
  }

  /** The incarnation recorded in the target's last LBA ({@link TargetStamp}). */
  private final class Stamp implements NameNodeLink.Stamp {
    @Override
    public long held() throws EmberException {
      long held = await(TargetStamp.read(connected().ioQueue(0), namespace), "read");
      // What the node serves if the name node takes it back; the health probe watches it.
      stamped = held;
      return held;
    }

    @Override
    public void record(long incarnation, long replacing) throws EmberException {
      NvmfController c = connected();
      await(
          TargetStamp.write(c.ioQueue(0), namespace, incarnation)
              .thenCompose(v -> c.ioQueue(0).flush(nsid)),
          "record");
      stamped = incarnation;
      if (replacing != 0) {
        // Clients trust a stamp they read for a while without reading it again; until they all
        // have read this one, none of this registration's locations may exist.
        try {
          Thread.sleep(2 * TargetStamp.TRUSTED_FOR.toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new EmberException(ErrorCode.CLOSED, "interrupted registering " + uri, e);
        }
      }
    }

    private NvmfController connected() throws EmberException {
      NvmfController c = controller;
      if (c == null) {
        throw new EmberException(ErrorCode.UNREACHABLE, "NVMf target " + uri + " is not connected");
      }
      return c;
    }

    private <T> T await(CompletableFuture<T> f, String what) throws EmberException {
      try {
        return Futures.await(f, Duration.ofSeconds(10));
      } catch (EmberException e) {
        // Whatever the target answered, the node cannot register through it now.
        ErrorCode code =
            Thread.currentThread().isInterrupted() ? ErrorCode.CLOSED : ErrorCode.UNREACHABLE;
        throw new EmberException(
            code,
            "cannot "
                + what
                + " the registration stamp on NVMf "
                + "target "
                + uri
                + ": "
                + e.getMessage(),
            e);
      }
    }
  }

  /**
   * How long a batch of deallocations is waited for before those unanswered count as failed; the
   * name node sends them again only after {@code ember.namenode.deallocation-retry}, as the target
   * may still hold them.
   */
  private static final Duration DEALLOCATION_WAIT = Duration.ofSeconds(10);

  /**
   * Deallocates freed blocks on the target; returns the slots done. Runs on the link's deallocation
   * thread, so a target slow to answer delays no heartbeat.
   */
  private List<Long> deallocate(List<Long> slots) {
    NvmfController c = controller;
    int blockSize = link.blockSize();
    if (c == null || blockSize == 0) {
      return List.of();
    }
    long sectorsPerBlock = blockSize / namespace.blockSize();
    if (!c.identify().supportsDsm()) {
      if (!dsmWarned) {
        dsmWarned = true;
        LOG.warn(
            "NVMf target {} lacks Dataset Management: freed blocks are reused as they are", uri);
      }
      return slots;
    }
    List<CompletableFuture<Void>> calls = new ArrayList<>(slots.size());
    for (long slot : slots) {
      calls.add(c.ioQueue(0).deallocate(nsid, slot * sectorsPerBlock, sectorsPerBlock));
    }
    List<Long> done = new ArrayList<>(slots.size());
    int failed = 0;
    String firstFailure = null;
    // One deadline for the batch, not one per slot: the commands went out together, and a target
    // that answers none would otherwise hold up every later batch for as many waits as slots.
    long deadline = System.nanoTime() + DEALLOCATION_WAIT.toNanos();
    for (int i = 0; i < slots.size(); i++) {
      try {
        calls.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        done.add(slots.get(i));
      } catch (InterruptedException e) {
        // The node is closing: the slots not reported done are the name node's to ask for again,
        // and a warning per slot would only fill the log of an orderly stop.
        Thread.currentThread().interrupt();
        LOG.debug("{}: deallocation stopped by close, {} slot(s) left", uri, slots.size() - i);
        return done;
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        failed++;
        if (firstFailure == null) {
          firstFailure = "slot " + slots.get(i) + ": " + describe(e);
        }
      }
    }
    if (failed > 0) {
      // One line a batch: a target that keeps failing would otherwise log a line per slot.
      LOG.warn(
          "deallocating {} of {} block slot(s) on {} failed ({}); the name node sends them again"
              + " later",
          failed,
          slots.size(),
          uri,
          firstFailure);
    }
    return done;
  }

  /** Why a deallocation failed, without the future's wrapping. */
  private static String describe(Exception e) {
    if (e instanceof TimeoutException) {
      return "no answer within " + DEALLOCATION_WAIT.toSeconds() + " s";
    }
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    return cause.getMessage() != null ? cause.getMessage() : cause.toString();
  }

  /** Stops heartbeats, disconnects and stops the embedded target, if any. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    if (http != null) {
      http.close();
    }
    link.close();
    NvmfController c = controller;
    if (c != null) {
      c.close();
    }
    closeEmbedded();
    lifeCycle.closed();
  }

  private void closeEmbedded() {
    if (embedded != null) {
      embedded.close();
    }
  }
}
