package io.ember.nvmf.target;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.tcp.Transports;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.SocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embedded NVMe/TCP target: serves one or more {@link Subsystem}s and the discovery subsystem on
 * one TCP port to any number of hosts and queues. Speaks the NVMe/TCP transport 1.0 with
 * header/data digests, in-capsule data, R2T/H2CData and C2HData (with the SUCCESS short-cut when
 * the host disabled SQ flow control). Built with {@link #builder()}, started with {@link #start()},
 * stopped with {@link #close()}.
 */
public final class NvmfTarget implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NvmfTarget.class);

  final String bindHost;
  final int bindPort;
  final Map<String, Subsystem> subsystems = new ConcurrentHashMap<>();
  final int maxH2CData;
  final int inCapsuleDataSize;
  final int maxQueueSize;
  final int maxIoQueues;
  final int mdts;
  final int c2hChunk;
  final boolean successFlag;
  final boolean countCommands;
  final long authTimeoutMs;
  private final int threads;
  private final java.time.Duration busyPoll;
  private final AtomicInteger nextCntlid = new AtomicInteger(1);
  final Map<Integer, TargetController> controllers = new ConcurrentHashMap<>();
  final AtomicInteger discoveryGeneration = new AtomicInteger(1);
  private PlacingEventLoopGroup group;
  ExecutorService blockingIo;

  /**
   * DH-HMAC-CHAP steps: two threads and a short queue of their own, so that hosts that have not
   * authenticated can neither delay namespace I/O nor queue work without bound (a full queue
   * refuses the step).
   */
  ExecutorService authWork;

  private Channel server;

  /** Bytes of host writes received straight into namespace memory (see {@link #bytesLanded()}). */
  final java.util.concurrent.atomic.LongAdder landed = new java.util.concurrent.atomic.LongAdder();

  private NvmfTarget(Builder b) {
    this.bindHost = b.host;
    this.bindPort = b.port;
    for (Subsystem s : b.subsystems) {
      if (subsystems.putIfAbsent(s.nqn(), s) != null) {
        throw new IllegalArgumentException("two subsystems named " + s.nqn());
      }
    }
    this.maxH2CData = b.maxH2CData;
    this.inCapsuleDataSize = b.inCapsuleDataSize;
    this.maxQueueSize = b.maxQueueSize;
    this.maxIoQueues = b.maxIoQueues;
    this.mdts = b.mdts;
    this.c2hChunk = b.c2hChunk;
    this.successFlag = b.successFlag;
    this.countCommands = b.countCommands;
    this.authTimeoutMs = b.authTimeout.toMillis();
    this.threads = b.threads;
    this.busyPoll = b.busyPoll;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds the port and starts serving.
   *
   * @return this
   * @throws IOException when the port cannot be bound
   */
  public NvmfTarget start() throws IOException {
    group =
        new PlacingEventLoopGroup(
            threads, busyPoll.isZero() ? "nvmf-target" : "nvmf-target-poll", busyPoll);
    AtomicInteger n = new AtomicInteger();
    ThreadFactory tf =
        r -> {
          Thread t = new Thread(r, "nvmf-target-io-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        };
    blockingIo = Executors.newFixedThreadPool(Math.max(2, threads), tf);
    AtomicInteger a = new AtomicInteger();
    authWork =
        new java.util.concurrent.ThreadPoolExecutor(
            2,
            2,
            0,
            TimeUnit.SECONDS,
            new java.util.concurrent.ArrayBlockingQueue<>(64),
            r -> {
              Thread t = new Thread(r, "nvmf-target-auth-" + a.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    ServerBootstrap b =
        new ServerBootstrap()
            .group(group)
            .channel(Transports.serverChannel())
            .option(ChannelOption.SO_BACKLOG, 256)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    TargetConnection.install(NvmfTarget.this, ch);
                  }
                });
    try {
      server = b.bind(new InetSocketAddress(bindHost, bindPort)).sync().channel();
    } catch (Exception e) {
      close();
      // Netty's native transport reports a taken port in the system call's words.
      String message = String.valueOf(e.getMessage());
      String why =
          message.contains("Address already in use")
              ? "address in use"
              : message.contains("Cannot assign requested address")
                  ? "not an address of this host"
                  : message;
      throw new IOException("cannot listen on " + bindHost + ":" + bindPort + ": " + why, e);
    }
    LOG.info(
        "NVMe/TCP target listening on {} ({}) with subsystems {}",
        server.localAddress(),
        Transports.epoll() ? "epoll" : "NIO",
        subsystems.keySet());
    return this;
  }

  /** The bound port (useful after binding port 0). */
  public int port() {
    return ((InetSocketAddress) server.localAddress()).getPort();
  }

  /** The bound address. */
  public String host() {
    return ((InetSocketAddress) server.localAddress()).getAddress().getHostAddress();
  }

  /** {@code nvmf+tcp://host:port/nqn} of a served subsystem. */
  public String uri(String nqn) {
    String h = host();
    return "nvmf+tcp://" + (h.contains(":") ? "[" + h + "]" : h) + ":" + port() + "/" + nqn;
  }

  /** Served subsystems, by NQN. */
  public Map<String, Subsystem> subsystems() {
    return Map.copyOf(subsystems);
  }

  /**
   * Bytes of host writes that the socket received straight into a namespace's memory, with no copy
   * in between: data of at least {@link io.ember.nvmf.tcp.PduFrameDecoder#MIN_LANDING_BYTES} in one
   * H2CData PDU, to a memory namespace, on a connection without data digests. Other writes are
   * copied into the namespace as they arrive. Counted when a PDU's data starts landing, so a
   * connection that ends in the middle of one counts all of its bytes.
   */
  public long bytesLanded() {
    return landed.sum();
  }

  /**
   * How many I/O queues each network thread serves, one entry per thread; empty before {@link
   * #start}. A connection goes to the thread with the fewest, so these differ by at most one while
   * hosts only connect.
   */
  public List<Integer> ioQueuesPerThread() {
    PlacingEventLoopGroup g = group;
    return g == null ? List.of() : g.ioQueuesPerLoop();
  }

  /** The network threads, which count the I/O queues each serves. */
  PlacingEventLoopGroup networkThreads() {
    return group;
  }

  /** Number of live controllers (admin queues connected), for tests and monitoring. */
  public int controllerCount() {
    return controllers.size();
  }

  /**
   * What each I/O controller (not discovery) has served since its host connected, by controller id;
   * a controller whose host went away is gone from the list.
   */
  public List<ControllerStats> controllerStats() {
    List<ControllerStats> out = new ArrayList<>();
    for (TargetController c : controllers.values()) {
      if (!c.discovery()) {
        out.add(c.counters.snapshot(c));
      }
    }
    out.sort(java.util.Comparator.comparingInt(ControllerStats::cntlid));
    return out;
  }

  int newCntlid() {
    for (int i = 0; i < 0xFFEF; i++) {
      int id = nextCntlid.getAndUpdate(v -> v >= 0xFFEF ? 1 : v + 1);
      if (!controllers.containsKey(id)) {
        return id;
      }
    }
    return -1;
  }

  /** Stops listening, closes every connection and closes the namespaces. */
  @Override
  public void close() {
    if (server != null) {
      server.close().awaitUninterruptibly(2000);
    }
    for (TargetController c : new ArrayList<>(controllers.values())) {
      c.teardown();
    }
    controllers.clear();
    if (group != null) {
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5000);
    }
    if (authWork != null) {
      authWork.shutdownNow();
    }
    if (blockingIo != null) {
      blockingIo.shutdown();
      try {
        blockingIo.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (Subsystem s : subsystems.values()) {
      for (Namespace ns : s.namespaces().values()) {
        try {
          ns.close();
        } catch (Exception e) {
          LOG.warn("closing a namespace of {} failed: {}", s.nqn(), e.toString());
        }
      }
    }
  }

  /** Builder of {@link NvmfTarget}. */
  public static final class Builder {
    private String host = "127.0.0.1";
    private int port = 4420;
    private final List<Subsystem> subsystems = new ArrayList<>();
    private int maxH2CData = 128 * 1024;
    private int inCapsuleDataSize = 16 * 1024;
    private int maxQueueSize = 1024;
    private int maxIoQueues = 64;
    private int mdts = 8;
    private int c2hChunk = 128 * 1024;
    private boolean successFlag = true;
    private boolean countCommands = true;
    private java.time.Duration authTimeout = java.time.Duration.ofMinutes(2);
    private int threads = Runtime.getRuntime().availableProcessors();
    private java.time.Duration busyPoll = java.time.Duration.ZERO;

    private Builder() {}

    /** Address and port to listen on (default 127.0.0.1:4420; port 0 picks a free one). */
    public Builder listen(String host, int port) {
      this.host = host;
      this.port = port;
      return this;
    }

    public Builder subsystem(Subsystem s) {
      subsystems.add(s);
      return this;
    }

    /** MAXH2CDATA announced in ICResp: a multiple of 4, at least 4096. Default 128 KiB. */
    public Builder maxH2CData(int v) {
      if (v < 4096 || v % 4 != 0) {
        throw new IllegalArgumentException(
            "MAXH2CDATA must be a multiple of 4 and >= 4096, got " + v);
      }
      this.maxH2CData = v;
      return this;
    }

    /**
     * In-capsule data accepted on I/O queues (IOCCSZ minus 64), a multiple of 16. Default 16 KiB.
     */
    public Builder inCapsuleDataSize(int v) {
      if (v < 0 || v % 16 != 0 || v > 1 << 20) {
        throw new IllegalArgumentException(
            "in-capsule data size must be a multiple of 16 in 0..1 MiB: " + v);
      }
      this.inCapsuleDataSize = v;
      return this;
    }

    /** CAP.MQES+1: the largest queue a host may create. Default 1024. */
    public Builder maxQueueSize(int v) {
      if (v < 2 || v > 65536) {
        throw new IllegalArgumentException("max queue size must be 2..65536: " + v);
      }
      this.maxQueueSize = v;
      return this;
    }

    /** I/O queues granted per controller. Default 64. */
    public Builder maxIoQueues(int v) {
      if (v < 1 || v > 65535) {
        throw new IllegalArgumentException("max I/O queues must be 1..65535: " + v);
      }
      this.maxIoQueues = v;
      return this;
    }

    /** MDTS: transfers up to 2^mdts * 4 KiB per command. Default 8 (1 MiB). */
    public Builder mdts(int v) {
      if (v < 1 || v > 16) {
        throw new IllegalArgumentException("MDTS must be 1..16 here: " + v);
      }
      this.mdts = v;
      return this;
    }

    /** Largest C2HData PDU the target sends; longer reads take several. Default 128 KiB. */
    public Builder c2hDataChunk(int v) {
      if (v < 512) {
        throw new IllegalArgumentException("C2HData chunk must be >= 512: " + v);
      }
      this.c2hChunk = v;
      return this;
    }

    /**
     * Whether reads on queues without SQ flow control complete with C2HData SUCCESS. Default on.
     */
    public Builder successFlag(boolean v) {
      this.successFlag = v;
      return this;
    }

    /**
     * How long a queue that must authenticate (a host with {@link HostKeys}) may take to finish
     * DH-HMAC-CHAP before the target closes it. Default 120 s, Linux's target's bound when the host
     * sets no keep-alive timeout.
     */
    public Builder authTimeout(java.time.Duration v) {
      if (v.isNegative() || v.isZero()) {
        throw new IllegalArgumentException("authTimeout must be positive, got " + v);
      }
      this.authTimeout = v;
      return this;
    }

    /**
     * Whether each controller's I/O commands are counted and timed for {@link
     * NvmfTarget#controllerStats()}; off, its figures stay at zero. Default on.
     */
    public Builder countCommands(boolean v) {
      this.countCommands = v;
      return this;
    }

    /** Network threads. Default: available processors. */
    public Builder threads(int v) {
      this.threads = Math.max(1, v);
      return this;
    }

    /**
     * How long the network threads keep polling their sockets, without sleeping, after their last
     * event; zero (the default) sleeps at once. A command that comes while a thread polls is read
     * without a wake-up, at the price of up to this much of a core's time per thread after each
     * burst of commands; {@link #threads(int)} bounds how many cores that can be.
     *
     * @throws IllegalArgumentException when {@code v} is negative
     */
    public Builder busyPoll(java.time.Duration v) {
      if (v.isNegative()) {
        throw new IllegalArgumentException("busyPoll must not be negative, got " + v);
      }
      this.busyPoll = v;
      return this;
    }

    public NvmfTarget build() {
      return new NvmfTarget(this);
    }
  }

  static String discoveryNqn() {
    return Nvme.DISCOVERY_NQN;
  }
}
