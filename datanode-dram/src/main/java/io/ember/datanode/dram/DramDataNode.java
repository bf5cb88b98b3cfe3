package io.ember.datanode.dram;

import io.ember.datanode.DataNode;
import io.ember.datanode.NameNodeLink;
import io.ember.http.Page;
import io.ember.http.ServerMetrics;
import io.ember.http.StatusServer;
import io.ember.protocol.Addresses;
import io.ember.protocol.Deferred;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Framing;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.StorageClass;
import io.ember.protocol.Transports;
import io.ember.tier.dram.DramTier;
import io.ember.tier.dram.RdmaDramTier;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A DRAM data node: serves reads and writes of its off-heap region over Netty, registers the region
 * with the name node as blocks of storage class DRAM, and heartbeats. When the name node forgets it
 * (a restart, or it was marked lost) it registers again with its whole region.
 */
public final class DramDataNode implements DataNode {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DramDataNode.class);

  /** The tier name clients look up to read and write this node's blocks over TCP. */
  public static final String TIER = DramTier.NAME;

  /** The tier name of a node that also serves one-sided RDMA. */
  public static final String RDMA_TIER = RdmaDramTier.NAME;

  private final DramRegion region;
  private final RpcServer server;
  private final String endpoint;

  /** How errors name this node; made once, not per request. */
  private final String describe;

  /** True under TLS: every read, write and grant needs a block token from the name node. */
  private final boolean checkTokens;

  /** Whether connections are TLS, so that the name node's shows its certificate. */
  private final boolean tlsOn;

  private final NameNodeLink link;

  /** The incarnation of this node's contents; reads and writes must name it. */
  private final NameNodeLink.MemoryStamp stamp = new NameNodeLink.MemoryStamp(this::heldBlocks);

  /** Blocks' generations, for one incarnation; made anew at the first request of another. */
  private volatile BlockGenerations generations;

  /**
   * Writes whose bytes are landing in the region from their sockets, so that the connections of
   * those of an earlier incarnation can be closed when a new one begins.
   */
  private final Set<DirectWrite> directWrites = ConcurrentHashMap.newKeySet();

  private final LongAdder bytesWrittenDirectly = new LongAdder();
  private final boolean writesDirectly;
  private final AtomicInteger writesWaiting = new AtomicInteger();

  private final LifeCycle lifeCycle = new LifeCycle("DRAM data node");

  private final ServerMetrics metrics;
  private final String namenodeAddress;
  // The tier's series, looked up once rather than on every read and write.
  private final CounterDataPoint bytesWritten;
  private final CounterDataPoint bytesRead;

  /** The status page and metrics, or null when they are off. */
  private final StatusServer http;

  /** One-sided RDMA access to the region, or null with the TCP transport. */
  private final RdmaBlockServer rdma;

  /** The tier this node registers: {@link #TIER} or {@link #RDMA_TIER}. */
  private final String tier;

  private DramDataNode(EmberConfig config) throws EmberException {
    lifeCycle.beginStart();
    region = new DramRegion(config.get(DramDataNodeKeys.CAPACITY));
    metrics = new ServerMetrics(config.get(EmberKeys.METRICS_ENABLED));
    namenodeAddress = config.get(EmberKeys.NAMENODE_ADDRESS);
    checkTokens = EmberKeys.authenticates(config);
    tlsOn = EmberKeys.secured(config);
    bytesWritten =
        Counter.builder()
            .name("ember_datanode_written_bytes_total")
            .help("bytes clients wrote to this data node, by tier")
            .labelNames("tier")
            .register(metrics.registry())
            .labelValues(TIER);
    bytesRead =
        Counter.builder()
            .name("ember_datanode_read_bytes_total")
            .help("bytes clients read from this data node, by tier")
            .labelNames("tier")
            .register(metrics.registry())
            .labelValues(TIER);
    GaugeWithCallback.builder()
        .name("ember_datanode_capacity_bytes")
        .help("bytes this data node offers, by tier")
        .labelNames("tier")
        .callback(cb -> cb.call((double) region.capacity(), TIER))
        .register(metrics.registry());
    // Looked at twice per RPC timeout, a stalled writer is cut off within two (a look that finds
    // nothing new lowers the socket's receive low-water mark first).
    long stallNanos = config.get(EmberKeys.RPC_TIMEOUT).toNanos() / 2;
    String directSetting = config.get(DramDataNodeKeys.DIRECT_WRITES);
    boolean directWrites =
        directSetting.equalsIgnoreCase("auto")
            ? DirectWriteDecoder.LOW_WATER_USABLE && Transports.from(config).epoll()
            : Boolean.parseBoolean(directSetting);
    if (directWrites && checkTokens) {
      // Under TLS the socket's bytes are ciphertext, and under either a write's block token must
      // check out before a byte of it lands. Only a setting someone made is worth a warning.
      if (directSetting.equalsIgnoreCase("true")) {
        LOG.warn(
            "{} is ignored: {}, {} or {} is on, and writes are checked before they land",
            DramDataNodeKeys.DIRECT_WRITES.name(),
            EmberKeys.TLS.name(),
            EmberKeys.SCRAM.name(),
            EmberKeys.SECURITY_ENABLED.name());
      }
      directWrites = false;
    }
    this.writesDirectly = directWrites;
    Framing framing =
        directWrites
            ? (ch, maxFrame) -> DirectWriteDecoder.install(ch, maxFrame, this, stallNanos)
            : Framing.WHOLE_FRAMES;
    server = new RpcServer("data node", config, metrics.meter(new Service()), framing);
    String bindHost = config.get(DramDataNodeKeys.BIND_HOST);
    InetSocketAddress bound = server.start(bindHost, config.get(DramDataNodeKeys.PORT));
    String advertised = Addresses.advertised(config.get(DramDataNodeKeys.ADVERTISE_HOST), bindHost);
    endpoint = new HostPort(advertised, bound.getPort()).toString();
    describe = "data node at " + endpoint;
    if (config.get(DramDataNodeKeys.TRANSPORT).equals("rdma")) {
      rdma = startRdma(config, bindHost, advertised, bound.getPort());
      tier = RDMA_TIER;
    } else {
      rdma = null;
      tier = TIER;
    }
    // DRAM blocks need no deallocation: the name node frees them at once.
    link =
        new NameNodeLink(
            config,
            "DRAM data node at " + endpoint,
            new Messages.RegisterRequest(
                StorageClass.DRAM, tier, endpoint, region.capacity(), false),
            slots -> slots,
            () -> true,
            stamp);
    try {
      http =
          StatusServer.startAsConfigured(
              "datanode",
              routes(),
              config.get(DramDataNodeKeys.HTTP_PORT),
              bindHost,
              config.get(DramDataNodeKeys.PORT),
              io.ember.protocol.Tls.from(config));
    } catch (EmberException | RuntimeException e) {
      link.close();
      server.close();
      if (rdma != null) {
        rdma.close();
      }
      throw e;
    }
    link.start();
    lifeCycle.started();
  }

  private RdmaBlockServer startRdma(
      EmberConfig config, String bindHost, String advertised, int port) throws EmberException {
    var reason = io.ember.rdma.RdmaSupport.unavailableReason();
    if (reason.isPresent()) {
      server.close();
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT, "the rdma transport cannot run here: " + reason.get());
    }
    String host = bindHost.equals("0.0.0.0") || bindHost.equals("::") ? advertised : bindHost;
    int rdmaPort = config.get(DramDataNodeKeys.RDMA_PORT);
    InetSocketAddress at = new InetSocketAddress(host, rdmaPort == 0 ? port : rdmaPort);
    try {
      return RdmaBlockServer.start(region, at, this::rdmaWrote, describe);
    } catch (EmberException | RuntimeException e) {
      server.close();
      throw e;
    }
  }

  /** What the status page and {@code /api/summary} show. */
  record Summary(
      String endpoint,
      String tier,
      int datanodeId,
      long incarnation,
      long capacityBytes,
      int blocksWritten,
      long bytesWritten,
      long bytesRead,
      String namenode,
      String transport,
      int rdmaConnections) {}

  private Summary summary() {
    return new Summary(
        endpoint,
        TIER,
        link.datanodeId(),
        stamp.held(),
        region.capacity(),
        heldBlocks().size(),
        (long) bytesWritten.get(),
        (long) bytesRead.get(),
        namenodeAddress,
        rdma == null ? "tcp" : "rdma (port " + rdma.port() + "), and tcp",
        rdmaConnections());
  }

  private Map<String, StatusServer.Route> routes() {
    Map<String, StatusServer.Route> routes = new LinkedHashMap<>();
    routes.put(
        "/",
        q -> {
          Summary s = summary();
          return new Page(
                  "Ember DRAM data node " + s.endpoint(),
                  5,
                  List.of(
                      new String[] {"JSON", "/api/summary"}, new String[] {"Metrics", "/metrics"}))
              .table(
                  List.of("", ""),
                  List.of(
                      List.of("name node", s.namenode()),
                      List.of(
                          "registered as",
                          s.datanodeId() < 0 ? "not yet" : "data node " + s.datanodeId()),
                      List.of("capacity", Page.bytes(s.capacityBytes())),
                      List.of("transport", s.transport()),
                      List.of("blocks written", Integer.toString(s.blocksWritten())),
                      List.of("bytes written", Page.bytes(s.bytesWritten())),
                      List.of(
                          // One-sided RDMA READs never reach this node's CPU to be counted.
                          rdma == null ? "bytes read" : "bytes read over TCP",
                          Page.bytes(s.bytesRead()))))
              .done();
        });
    routes.put("/api/summary", q -> Page.json(summary()));
    routes.put("/metrics", metrics.route());
    return routes;
  }

  /** The address of the status page and {@code /metrics}, or null when they are off. */
  public InetSocketAddress httpAddress() {
    return http == null ? null : http.address();
  }

  /** Where a browser on this machine opens the status page (https under TLS), or null. */
  public String httpUrl() {
    return http == null ? null : http.url();
  }

  /**
   * Starts a DRAM data node: allocates its region, listens, and registers with the name node at
   * {@link EmberKeys#NAMENODE_ADDRESS} (retrying in the background if it is not up yet).
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalStateException when the region cannot be allocated
   */
  public static DramDataNode start(EmberConfig config) throws EmberException {
    return new DramDataNode(config);
  }

  @Override
  public String tier() {
    return tier;
  }

  /** The RDMA port clients connect to, or -1 with the TCP transport. */
  public int rdmaPort() {
    return rdma == null ? -1 : rdma.port();
  }

  /** RDMA clients connected now (0 with the TCP transport). */
  public int rdmaConnections() {
    return rdma == null ? 0 : rdma.connections();
  }

  /** Block slots registered for RDMA now (0 with the TCP transport). */
  public int rdmaRegisteredSlots() {
    return rdma == null ? 0 : rdma.registeredSlots();
  }

  @Override
  public StorageClass storageClass() {
    return StorageClass.DRAM;
  }

  /** The address clients are told to use. */
  @Override
  public String endpoint() {
    return endpoint;
  }

  /** The id the name node gave this node, or -1 before registration. */
  @Override
  public int datanodeId() {
    return link.datanodeId();
  }

  /** The incarnation block locations of this node name, or 0 before it registers. */
  @Override
  public long incarnation() {
    return stamp.held();
  }

  /**
   * Whether this node lands writes over 64 KiB in their blocks straight from the socket ({@link
   * DramDataNodeKeys#DIRECT_WRITES}, as set or as {@code auto} and security decided).
   */
  public boolean writesDirectly() {
    return writesDirectly;
  }

  /** Bytes of writes that went from their socket straight into their block. */
  public long bytesWrittenDirectly() {
    return bytesWrittenDirectly.sum();
  }

  /** Writes whose bytes are arriving straight into their blocks now. */
  public int directWritesArriving() {
    return directWrites.size();
  }

  /**
   * Writes waiting for a write of another generation that is arriving in their block (a writer of a
   * deleted file, still sending) to end.
   */
  public int writesWaiting() {
    return writesWaiting.get();
  }

  /**
   * Stops (or restarts) taking RDMA write notices while everything else goes on: a client's RDMA
   * writes then wait once its connection's posted receives are used up. For tests of clients facing
   * a data node that falls behind.
   */
  public void pauseRdmaNotices(boolean pause) {
    if (rdma != null) {
      rdma.pause(pause);
    }
  }

  /** The region's size in bytes. */
  public long capacity() {
    return region.capacity();
  }

  /**
   * Neither reads requests, RDMA write notices nor heartbeats until {@link #resume}. One-sided RDMA
   * reads and writes still land (the device serves them), as for a stalled process.
   */
  @Override
  public void suspend() {
    link.suspend();
    server.pauseReading(true);
    if (rdma != null) {
      rdma.pause(true);
    }
  }

  @Override
  public void resume() {
    if (rdma != null) {
      rdma.pause(false);
    }
    server.pauseReading(false);
    link.resume();
  }

  /** Stops heartbeats, closes every connection at once and stops listening. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    link.close();
    if (http != null) {
      http.close();
    }
    server.close();
    if (rdma != null) {
      rdma.close();
    }
    lifeCycle.closed();
  }

  /**
   * Refuses a location from an earlier registration at this address (a process that restarted here,
   * or this one before the name node restarted): those bytes are gone or no longer known, and the
   * name node may have given the same addresses to new files since.
   */
  private void checkServes(long incarnation) throws EmberException {
    long serving = stamp.held();
    if (incarnation != serving) {
      throw new EmberException(
          ErrorCode.STALE_LOCATION,
          "the location is of contents "
              + endpoint
              + " no longer holds ("
              + (serving == 0 ? "it is not registered yet" : "it restarted, or registered anew")
              + "): ask the name node again");
    }
  }

  /**
   * Refuses a request whose block token does not let the caller on {@code channel} reach block
   * {@code blockId} of {@code generation}, whose slot holds {@code address}, for {@code mode}: the
   * name node's check of who may read or write which file, enforced where the bytes are. A token
   * this node cannot check any more (an unknown key, past its expiry) is a stale location, which
   * readers answer by asking the name node again.
   */
  private void checkToken(
      Channel channel,
      io.ember.protocol.BlockToken token,
      long incarnation,
      long blockId,
      long generation,
      long address,
      int mode)
      throws EmberException {
    if (!checkTokens) {
      return;
    }
    String block = "block " + blockId + " (generation " + generation + ")";
    if (token.isNone()) {
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED,
          describe
              + " refuses "
              + block
              + " without a block token: it runs under ember.security.tls or"
              + " ember.security.scram, and takes only locations the name node handed out");
    }
    io.ember.protocol.BlockKey key = link.blockKey(token.keyId());
    if (key == null) {
      throw new EmberException(
          ErrorCode.STALE_LOCATION,
          "the block token for "
              + block
              + " is signed with a key "
              + describe
              + " does not hold (the name node restarted, or the token is old): ask the name"
              + " node again");
    }
    String identity = io.ember.protocol.Tls.peerIdentity(channel);
    long slotStart = address - Math.floorMod(address, (long) link.blockSize());
    if (!token.signs(
        key.secret(),
        blockId,
        generation,
        incarnation,
        slotStart,
        identity == null ? "" : identity)) {
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED,
          describe
              + " refuses "
              + block
              + ": its block token was not granted to "
              + identity
              + " for this block (it names another block, node or caller, or was altered)");
    }
    if (token.expiresMillis() < System.currentTimeMillis()) {
      throw new EmberException(
          ErrorCode.STALE_LOCATION,
          "the block token for " + block + " expired: ask the name node again");
    }
    if ((token.modes() & mode) == 0) {
      if (mode == io.ember.protocol.BlockToken.LENGTH) {
        throw new EmberException(
            ErrorCode.PERMISSION_DENIED,
            describe + " tells only the name node how much " + block + " holds");
      }
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED,
          describe
              + " refuses to "
              + (mode == io.ember.protocol.BlockToken.WRITE ? "write " : "read ")
              + block
              + ": its block token grants "
              + (mode == io.ember.protocol.BlockToken.WRITE ? "reading only" : "writing only"));
    }
  }

  /**
   * The block generations of {@code incarnation}, which {@link #checkServes} found this node
   * serving: new contents start with no generation known.
   */
  private BlockGenerations generations(long incarnation) throws EmberException {
    BlockGenerations g = generations;
    if (g != null && g.incarnation() == incarnation) {
      return g;
    }
    synchronized (this) {
      g = generations;
      if (g == null || g.incarnation() != incarnation) {
        // Checked again under the lock: a request that passed checkServes just before the node
        // registered anew must not start the new incarnation's table.
        checkServes(incarnation);
        if (rdma != null) {
          // Keys handed out for the old contents must stop working before any new write lands.
          rdma.contentsChanged(incarnation);
          RdmaBlockServer r = rdma;
          g =
              new BlockGenerations(
                  incarnation,
                  region.capacity(),
                  link.blockSize(),
                  (slot, generation) -> r.slotMoved(incarnation, slot, generation));
        } else {
          g = new BlockGenerations(incarnation, region.capacity(), link.blockSize());
        }
        for (DirectWrite w : directWrites) {
          if (w.incarnation != incarnation) {
            // Its block may go to a new file at once, and its connection closes only once its
            // thread gets to it: until it ends, the new contents' writes to its slot wait.
            w.holdBack(g);
            var unused = w.channel.close();
          }
        }
        // Published once the old writes hold their slots, so no new write finds one free.
        generations = g;
      }
      return g;
    }
  }

  /** The written slots of the contents this node serves, for the name node's block report. */
  private List<Messages.HeldBlock> heldBlocks() {
    BlockGenerations g = generations;
    return g == null || g.incarnation() != stamp.held() ? List.of() : g.heldBlocks();
  }

  /** Writes {@code r}'s bytes into the region; call under the slot's lock. */
  private void writeBuffered(BlockGenerations g, Messages.BlockWriteRequest r)
      throws EmberException {
    int length = r.data().readableBytes();
    g.checkWrite(r.blockId(), r.generation(), r.address(), length, describe);
    region.write(r.address(), r.data());
    g.wrote(r.address(), length);
    if (metrics.enabled()) {
      bytesWritten.inc(length);
    }
  }

  /**
   * Answers {@code r} once the receives now landing in its slot end and it is written; call under
   * the slot's lock, when {@link BlockGenerations#mustWait} said so.
   */
  private Deferred waitForReceives(BlockGenerations g, Messages.BlockWriteRequest r) {
    CompletableFuture<Message> answer = new CompletableFuture<>();
    ByteBuf data = r.data().retain();
    writesWaiting.incrementAndGet();
    g.await(
        r.address(),
        () -> {
          writesWaiting.decrementAndGet();
          try {
            checkServes(r.incarnation());
            writeBuffered(g, r);
            answer.complete(Message.EMPTY);
          } catch (EmberException | RuntimeException e) {
            answer.completeExceptionally(e);
          } finally {
            data.release();
          }
        });
    return new Deferred(answer);
  }

  /**
   * A BLOCK_WRITE whose bytes land in the region from its socket ({@link DirectWriteDecoder}): it
   * was checked when its fields arrived, and counts as receiving in its slot until it ends.
   */
  final class DirectWrite {
    private final Channel channel;
    private final long requestId;
    private final long incarnation;
    private final long address;
    private final int length;
    private final BlockGenerations generations;
    private final ByteBuffer window;
    private final long startNanos;

    /** Set once it ended; guarded by this write. */
    private boolean ended;

    /** Newer contents' table it holds its slot in, or null; guarded by this write. */
    private BlockGenerations heldBackIn;

    private DirectWrite(
        Channel channel,
        long requestId,
        long incarnation,
        long address,
        int length,
        BlockGenerations generations,
        ByteBuffer window,
        long startNanos) {
      this.channel = channel;
      this.requestId = requestId;
      this.incarnation = incarnation;
      this.address = address;
      this.length = length;
      this.generations = generations;
      this.window = window;
      this.startNanos = startNanos;
    }

    /** The block's bytes this write fills, from its first. */
    ByteBuffer window() {
      return window;
    }

    int length() {
      return length;
    }

    /** How logs name this data node. */
    String node() {
      return describe;
    }

    /** All its bytes are in the region: counts them and answers the writer. */
    void finish() {
      directWrites.remove(this);
      try {
        checkServes(incarnation);
      } catch (EmberException e) {
        end();
        metrics.observe(MessageType.BLOCK_WRITE, startNanos, e.code().name());
        RpcServer.replyError(channel, "data node", MessageType.BLOCK_WRITE.code(), requestId, e);
        return;
      }
      synchronized (generations.lockFor(address)) {
        generations.wrote(address, length);
      }
      end();
      bytesWrittenDirectly.add(length);
      if (metrics.enabled()) {
        bytesWritten.inc(length);
      }
      metrics.observe(MessageType.BLOCK_WRITE, startNanos, "OK");
      RpcServer.reply(
          channel, "data node", MessageType.BLOCK_WRITE.code(), requestId, Message.EMPTY);
    }

    /** Its connection closed before all its bytes came: they count for nothing. */
    void abandon() {
      directWrites.remove(this);
      end();
    }

    /**
     * Makes the writes of {@code newer} contents to this write's slot wait until it ends, as writes
     * of another generation wait in its own contents' table.
     */
    synchronized void holdBack(BlockGenerations newer) {
      if (ended) {
        return;
      }
      synchronized (newer.lockFor(address)) {
        newer.startReceive(address, BlockGenerations.OTHER_CONTENTS);
      }
      heldBackIn = newer;
    }

    /** Ends the receive in its table (and the one it holds back), running the writes it held. */
    private void end() {
      BlockGenerations newer;
      synchronized (this) {
        ended = true;
        newer = heldBackIn;
      }
      synchronized (generations.lockFor(address)) {
        runInOrder(generations.endReceive(address));
      }
      if (newer != null) {
        synchronized (newer.lockFor(address)) {
          runInOrder(newer.endReceive(address));
        }
      }
    }
  }

  /** Checks {@code r} against the slot and grants its key; under the slot's lock. */
  private Messages.BlockGrantResponse grant(BlockGenerations g, Messages.BlockGrantRequest r)
      throws EmberException {
    int size = g.blockSize();
    if (r.forWrite()) {
      g.checkWrite(r.blockId(), r.generation(), r.address(), size, describe);
    } else {
      g.checkRead(r.blockId(), r.generation(), r.address(), size, describe);
    }
    RdmaBlockServer.Key key =
        rdma.grant(
            r.incarnation(),
            r.address(),
            size,
            r.generation(),
            r.forWrite(),
            checkTokens ? r.token().expiresMillis() : Long.MAX_VALUE);
    return new Messages.BlockGrantResponse(rdma.port(), key.remoteAddress(), key.rkey());
  }

  /**
   * Counts the bytes an RDMA client says it wrote, as a TCP write's are counted; a notice of other
   * contents or of a generation the slot no longer holds counts for nothing.
   */
  private void rdmaWrote(
      long incarnation, long blockId, long generation, long address, int length) {
    try {
      checkServes(incarnation);
      BlockGenerations g = generations(incarnation);
      synchronized (g.lockFor(address)) {
        g.checkRead(blockId, generation, address, length, describe);
        g.wrote(address, length);
      }
      if (metrics.enabled()) {
        bytesWritten.inc(length);
      }
    } catch (EmberException e) {
      LOG.debug("{}: an RDMA write notice counts for nothing: {}", describe, e.getMessage());
    }
  }

  private static void runInOrder(List<Runnable> writes) {
    for (Runnable w : writes) {
      w.run();
    }
  }

  /**
   * Begins a direct write ({@link DirectWriteDecoder}) of {@code length} bytes whose fields have
   * arrived, or returns null when it must take the usual path: refused (which checks it again and
   * says why), or waiting for writes of another generation in its slot.
   */
  DirectWrite beginDirectWrite(
      Channel ch,
      long requestId,
      long incarnation,
      long blockId,
      long generation,
      long address,
      int length) {
    long start = System.nanoTime();
    try {
      checkServes(incarnation);
      BlockGenerations g = generations(incarnation);
      ByteBuffer window = region.window(address, length).slice();
      synchronized (g.lockFor(address)) {
        if (g.mustWait(address, generation)) {
          return null;
        }
        g.checkWrite(blockId, generation, address, length, describe);
        g.startReceive(address, generation);
      }
      DirectWrite w =
          new DirectWrite(ch, requestId, incarnation, address, length, g, window, start);
      directWrites.add(w);
      if (stamp.held() != incarnation) {
        // A new incarnation began after the check, and may have missed this write when it
        // closed the old one's connections.
        w.abandon();
        return null;
      }
      return w;
    } catch (EmberException e) {
      return null;
    }
  }

  private final class Service implements RpcService {
    @Override
    public Message handle(Channel channel, MessageType type, ByteBuf in) throws EmberException {
      switch (type) {
        case BLOCK_WRITE:
          {
            Messages.BlockWriteRequest r = Messages.BlockWriteRequest.decode(in);
            try {
              checkServes(r.incarnation());
              checkToken(
                  channel,
                  r.token(),
                  r.incarnation(),
                  r.blockId(),
                  r.generation(),
                  r.address(),
                  io.ember.protocol.BlockToken.WRITE);
              BlockGenerations g = generations(r.incarnation());
              // Checked and copied under the slot's lock: a write of an older generation that
              // passed its check cannot land after the newer generation's first write.
              synchronized (g.lockFor(r.address())) {
                if (g.mustWait(r.address(), r.generation())) {
                  return waitForReceives(g, r);
                }
                writeBuffered(g, r);
              }
            } finally {
              r.data().release();
            }
            return Message.EMPTY;
          }
        case BLOCK_READ:
          {
            Messages.BlockReadRequest r = Messages.BlockReadRequest.decode(in);
            checkServes(r.incarnation());
            checkToken(
                channel,
                r.token(),
                r.incarnation(),
                r.blockId(),
                r.generation(),
                r.address(),
                io.ember.protocol.BlockToken.READ);
            generations(r.incarnation())
                .checkRead(r.blockId(), r.generation(), r.address(), r.length(), describe);
            Messages.DataResponse data =
                new Messages.DataResponse(region.read(r.address(), r.length()));
            if (metrics.enabled()) {
              bytesRead.inc(r.length());
            }
            return data;
          }
        case BLOCK_LENGTH:
          {
            Messages.BlockLengthRequest r = Messages.BlockLengthRequest.decode(in);
            // The name node asks, at lease recovery; nobody else has any business learning what
            // a slot holds. Under TLS it shows its certificate; under passwords only, a token of
            // a mode only it is given.
            if (tlsOn && io.ember.protocol.Tls.peerIdentity(channel) == null) {
              throw new EmberException(
                  ErrorCode.PERMISSION_DENIED,
                  describe + " answers BLOCK_LENGTH only to callers with a certificate");
            }
            checkServes(r.incarnation());
            if (!tlsOn) {
              checkToken(
                  channel,
                  r.token(),
                  r.incarnation(),
                  r.blockId(),
                  r.generation(),
                  r.address(),
                  io.ember.protocol.BlockToken.LENGTH);
            }
            BlockGenerations g = generations(r.incarnation());
            synchronized (g.lockFor(r.address())) {
              return new Messages.BlockLengthResponse(
                  g.heldLength(r.blockId(), r.generation(), r.address(), describe));
            }
          }
        case BLOCK_GRANT:
          {
            Messages.BlockGrantRequest r = Messages.BlockGrantRequest.decode(in);
            if (rdma == null) {
              throw new EmberException(
                  ErrorCode.UNKNOWN_MESSAGE,
                  describe + " does not serve RDMA (its transport is tcp)");
            }
            checkServes(r.incarnation());
            checkToken(
                channel,
                r.token(),
                r.incarnation(),
                r.blockId(),
                r.generation(),
                r.address(),
                r.forWrite()
                    ? io.ember.protocol.BlockToken.WRITE
                    : io.ember.protocol.BlockToken.READ);
            BlockGenerations g = generations(r.incarnation());
            synchronized (g.lockFor(r.address())) {
              if (r.forWrite() && g.mustWait(r.address(), r.generation())) {
                // Writes of another generation are landing in the slot from a socket: the grant
                // waits for them to end, as a TCP write would.
                CompletableFuture<Message> answer = new CompletableFuture<>();
                g.await(
                    r.address(),
                    () -> {
                      try {
                        checkServes(r.incarnation());
                        answer.complete(grant(g, r));
                      } catch (EmberException | RuntimeException e) {
                        answer.completeExceptionally(e);
                      }
                    });
                return new Deferred(answer);
              }
              return grant(g, r);
            }
          }
        default:
          throw new EmberException(
              ErrorCode.UNKNOWN_MESSAGE, type + " is not served by a data node");
      }
    }
  }
}
