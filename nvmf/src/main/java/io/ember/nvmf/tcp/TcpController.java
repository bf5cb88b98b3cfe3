package io.ember.nvmf.tcp;

import io.ember.nvmf.DiscoveryLogEntry;
import io.ember.nvmf.IdentifyController;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.host.ControllerSetup;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVMe/TCP host side of one controller association: the admin queue, the enable sequence, identify,
 * the keep-alive timer and the I/O queues. Create with {@link #connect(NvmfUri, NvmfHostOptions)}.
 */
public final class TcpController implements NvmfController {
  private static final Logger LOG = LoggerFactory.getLogger(TcpController.class);

  private final NvmfUri uri;
  private final NvmfHostOptions opts;
  private final EventLoopGroup group;
  private TcpQueue admin;

  /**
   * Copy-on-write: the keep-alive failure path walks it while connect may still be adding queues.
   */
  private final List<TcpQueue> ioQueues = new CopyOnWriteArrayList<>();

  private volatile Map<Integer, IdentifyNamespace> namespaces = Collections.emptyMap();
  private IdentifyController identify;
  private long cap;
  private int vs;
  private int cntlid;
  private volatile String authentication;
  private int maxTransfer;
  private ScheduledFuture<?> keepAlive;
  private volatile boolean closed;
  private final AtomicBoolean lost = new AtomicBoolean();

  private TcpController(NvmfUri uri, NvmfHostOptions opts, int threads) {
    this.uri = uri;
    this.opts = opts;
    this.group =
        Transports.group(
            threads, opts.busyPoll().isZero() ? "nvmf-host" : "nvmf-host-poll", opts.busyPoll());
    this.maxTransfer = opts.maxTransferSize();
  }

  /**
   * Connects to the NVM subsystem named by {@code uri}: admin queue, controller enable, identify,
   * then {@link NvmfHostOptions#ioQueues()} I/O queues. Blocks until done.
   *
   * @throws NvmfException when any step fails; the message names the step and the target
   */
  public static TcpController connect(NvmfUri uri, NvmfHostOptions opts) throws NvmfException {
    if (!uri.transport().equals("tcp")) {
      throw new IllegalArgumentException("not an NVMe/TCP URI: " + uri);
    }
    TcpController c =
        new TcpController(
            uri,
            opts,
            Math.max(1, Math.min(opts.ioQueues() + 1, Runtime.getRuntime().availableProcessors())));
    try {
      c.start();
      return c;
    } catch (NvmfException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /**
   * Reads the discovery log page of the discovery controller at {@code host:port}.
   *
   * @throws NvmfException when the discovery controller cannot be reached or refuses
   */
  public static List<DiscoveryLogEntry> discover(String host, int port, NvmfHostOptions opts)
      throws NvmfException {
    NvmfUri u = new NvmfUri("tcp", host, port, Nvme.DISCOVERY_NQN, 0);
    TcpController c = new TcpController(u, opts, 1);
    try {
      c.startAdmin(0);
      int cc = c.propGet(Nvme.PROP_CC, false) == 0 ? 1 : 0;
      if (cc == 1) {
        c.propSet(Nvme.PROP_CC, 1);
        ControllerSetup.waitReady(c::adminSync, u, c.propGet(Nvme.PROP_CAP, true), true);
      }
      byte[] head = c.getLog(Nvme.LOG_DISCOVERY, 0, 1024);
      long numrec = ByteBuffer.wrap(head).order(ByteOrder.LITTLE_ENDIAN).getLong(8);
      int n = (int) Math.min(numrec, 1000);
      byte[] all = n == 0 ? head : c.getLog(Nvme.LOG_DISCOVERY, 0, 1024 * (n + 1));
      List<DiscoveryLogEntry> out = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        out.add(DiscoveryLogEntry.parse(all, 1024 * (i + 1)));
      }
      return out;
    } finally {
      c.close();
    }
  }

  private void startAdmin(int kato) throws NvmfException {
    long tmo = opts.connectTimeout().toMillis();
    long commandTimeout = opts.commandTimeout().toNanos();
    // Keep Alive gets KATO, not the command timeout (see sendKeepAlive): the sweeper must look that
    // often.
    admin =
        new TcpQueue(
            this,
            0,
            opts.adminQueueSize(),
            commandTimeout,
            kato > 0 ? TimeUnit.MILLISECONDS.toNanos(kato) : commandTimeout);
    admin.open(
        group, opts.headerDigest(), opts.dataDigest(), Math.max(8192, opts.maxTransferSize()), tmo);
    Cqe r = connectQueue(admin, 0xFFFF, opts.adminQueueSize(), kato, false);
    cntlid = r.dw0() & 0xFFFF;
    // Linux's target takes the admin queue's AUTH_Send data only in the capsule.
    authentication = ControllerSetup.authenticateIfAsked(authPort(admin, true), r, opts, uri, 0);
  }

  private void start() throws NvmfException {
    long kato = opts.keepAlive().toMillis();
    startAdmin((int) kato);
    cap = ControllerSetup.enable(this::adminSync, uri, cntlid);
    vs = (int) propGet(Nvme.PROP_VS, false);
    identify = ControllerSetup.identifyController(this::adminSync);
    if (identify.icdoff() != 0) {
      throw new NvmfException(
          "controller at "
              + uri
              + " needs in-capsule data offset "
              + identify.icdoff()
              + " (ICDOFF), which this host does not support");
    }
    maxTransfer = ControllerSetup.maxTransfer(cap, identify, opts.maxTransferSize());
    if (kato > 0) {
      long period = Math.max(100, kato / 2);
      // On the admin queue's own loop: the submit then needs no hand-off, and a polling group
      // keeps no second loop awake for it.
      keepAlive =
          admin
              .eventLoop()
              .scheduleAtFixedRate(this::sendKeepAlive, period, period, TimeUnit.MILLISECONDS);
    }
    namespaces = ControllerSetup.identifyNamespaces(this::adminSync, uri, identify);
    int granted = ControllerSetup.negotiateIoQueues(this::adminSync, opts.ioQueues());
    int mqes = (int) (cap & 0xFFFF) + 1;
    int qsize = Math.min(opts.ioQueueSize(), mqes);
    int inCapsule = identify.inCapsuleDataSize();
    for (int qid = 1; qid <= granted; qid++) {
      TcpQueue q = new TcpQueue(this, qid, qsize, opts.commandTimeout().toNanos());
      ioQueues.add(q);
      q.open(
          group,
          opts.headerDigest(),
          opts.dataDigest(),
          Math.max(maxTransfer, 8192),
          opts.connectTimeout().toMillis());
      Cqe r = connectQueue(q, cntlid, qsize, 0, opts.disableSqFlowControl());
      q.inCapsuleLimit(inCapsule);
      ControllerSetup.authenticateIfAsked(authPort(q, false), r, opts, uri, qid);
    }
    LOG.debug(
        "connected to {}: cntlid {}, {} I/O queues of {}, in-capsule {} bytes, max transfer {}",
        uri,
        cntlid,
        granted,
        qsize,
        inCapsule,
        maxTransfer);
  }

  /**
   * Sends Keep Alive, which must be answered within KATO: the target gives up on a controller that
   * long without a command, so an unanswered one means the association is gone (or the network
   * between), even while TCP still looks healthy. That, not a slow command, is what closes the
   * controller.
   */
  private void sendKeepAlive() {
    if (closed || lost.get()) {
      return;
    }
    TcpQueue.Cmd ka =
        new TcpQueue.Cmd(
            new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE),
            null,
            false,
            false,
            ControllerSetup.keepAliveOutcome(uri, cntlid, () -> closed, this::lose));
    ka.timeoutNanos = opts.keepAlive().toNanos();
    admin.submit(ka);
  }

  /**
   * The association is gone: fails every queue, so that commands in flight and new ones fail at
   * once (instead of each waiting out its timeout) and {@link #isConnected()} says to connect
   * again.
   */
  private void lose(NvmfException cause) {
    if (!lost.compareAndSet(false, true)) {
      return;
    }
    LOG.warn("{}; closing its queues", cause.getMessage());
    if (keepAlive != null) {
      keepAlive.cancel(false);
    }
    for (TcpQueue q : ioQueues) {
      q.fail(cause);
    }
    admin.fail(cause);
  }

  private Cqe connectQueue(TcpQueue q, int cntlid, int qsize, int kato, boolean disableSqFlow)
      throws NvmfException {
    ByteBuffer d =
        ControllerSetup.connectData(opts.hostId(), cntlid, uri.subsystemNqn(), opts.hostNqn());
    Sqe sqe = ControllerSetup.connect(q.qid(), qsize, kato, disableSqFlow);
    CompletableFuture<Cqe> f = new CompletableFuture<>();
    TcpQueue.Cmd[] holder = new TcpQueue.Cmd[1];
    holder[0] = new TcpQueue.Cmd(sqe, d, true, true, err -> complete(f, holder[0], err));
    q.submit(holder[0]);
    return ControllerSetup.await(f, opts.connectTimeout().toMillis(), "Connect of " + q.where());
  }

  private static void complete(CompletableFuture<Cqe> f, TcpQueue.Cmd c, Throwable err) {
    if (err != null) {
      f.completeExceptionally(err);
    } else {
      f.complete(c.cqe);
    }
  }

  /** Sends the commands of in-band authentication on {@code q}, before it carries anything else. */
  private ControllerSetup.AdminPort authPort(TcpQueue q, boolean inCapsule) {
    return (sqe, buf, dataOut) -> {
      CompletableFuture<Cqe> f = new CompletableFuture<>();
      TcpQueue.Cmd[] holder = new TcpQueue.Cmd[1];
      holder[0] =
          new TcpQueue.Cmd(
              sqe, buf, dataOut, inCapsule && dataOut, err -> complete(f, holder[0], err));
      q.submit(holder[0]);
      return ControllerSetup.await(
          f,
          opts.commandTimeout().toMillis() + 1000,
          ControllerSetup.describe(sqe, q.qid() == 0) + " on " + q.where());
    };
  }

  Cqe adminSync(Sqe sqe, ByteBuffer buf, boolean dataOut) throws NvmfException {
    CompletableFuture<Cqe> f = new CompletableFuture<>();
    TcpQueue.Cmd[] holder = new TcpQueue.Cmd[1];
    holder[0] = new TcpQueue.Cmd(sqe, buf, dataOut, false, err -> complete(f, holder[0], err));
    admin.submit(holder[0]);
    return ControllerSetup.await(
        f, opts.commandTimeout().toMillis() + 1000, ControllerSetup.describe(sqe, true));
  }

  private byte[] getLog(int lid, long offset, int len) throws NvmfException {
    int numd = len / 4 - 1;
    return ControllerSetup.adminRead(
        this::adminSync,
        new Sqe()
            .opcode(Nvme.ADMIN_GET_LOG_PAGE)
            .cdw(10, lid | ((numd & 0xFFFF) << 16))
            .cdw(11, numd >>> 16)
            .cdw(12, (int) offset)
            .cdw(13, (int) (offset >>> 32)),
        len);
  }

  long propGet(int offset, boolean eight) throws NvmfException {
    return ControllerSetup.propGet(this::adminSync, offset, eight);
  }

  void propSet(int offset, int value) throws NvmfException {
    ControllerSetup.propSet(this::adminSync, offset, value);
  }

  // ---------------------------------------------------------------------------------------------
  // accessors

  @Override
  public NvmfUri uri() {
    return uri;
  }

  @Override
  public String authentication() {
    return authentication;
  }

  @Override
  public boolean isConnected() {
    if (closed || lost.get() || !admin.isActive()) {
      return false;
    }
    for (TcpQueue q : ioQueues) {
      if (!q.isActive()) {
        return false;
      }
    }
    return true;
  }

  @Override
  public IdentifyController identify() {
    return identify;
  }

  @Override
  public List<IdentifyNamespace> namespaces() {
    return List.copyOf(namespaces.values());
  }

  @Override
  public IdentifyNamespace namespace(int nsid) {
    return ControllerSetup.namespace(namespaces, nsid, uri);
  }

  @Override
  public int ioQueueCount() {
    return ioQueues.size();
  }

  @Override
  public NvmfQueue ioQueue(int index) {
    return ioQueues.get(index);
  }

  @Override
  public long cap() {
    return cap;
  }

  @Override
  public int version() {
    return vs;
  }

  @Override
  public int maxTransferSize() {
    return maxTransfer;
  }

  /** The controller id the target assigned. */
  public int controllerId() {
    return cntlid;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (keepAlive != null) {
      keepAlive.cancel(false);
    }
    for (TcpQueue q : ioQueues) {
      q.close("host closed the controller");
    }
    if (admin != null && identify != null) {
      try {
        ControllerSetup.shutdown(this::adminSync);
      } catch (NvmfException e) {
        LOG.debug("shutdown notification to {} failed: {}", uri, e.getMessage());
      }
    }
    if (admin != null) {
      admin.close("host closed the controller");
    }
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5000);
  }
}
