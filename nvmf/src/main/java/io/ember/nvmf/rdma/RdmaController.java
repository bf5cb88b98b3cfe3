package io.ember.nvmf.rdma;

import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaEventChannel;
import io.ember.nvmf.IdentifyController;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.host.ControllerSetup;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.rdma.CmEvents;
import io.ember.rdma.RdmaSupport;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host interface over RDMA: NVMe-oF's RDMA transport binding written over DiSNI's verbs (not
 * jNVMf, which cannot decode every status, lacks Flush, Dataset Management and Write Zeroes, and
 * needs per-target workarounds). Loaded by name from {@link io.ember.nvmf.NvmfHost} so that the
 * rest of the library never links against DiSNI.
 *
 * <p>Needs an RDMA device, {@code libdisni} on {@code java.library.path}, and the JVM flag {@code
 * --add-exports java.base/sun.nio.ch=ALL-UNNAMED} (DiSNI reads direct buffers' addresses).
 */
public final class RdmaController implements NvmfController {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaController.class);

  /** Linux's nvmet-rdma refuses an admin queue deeper than 32 (NVME_AQ_DEPTH). */
  private static final int ADMIN_DEPTH = 32;

  /** The largest keyed SGL data block (a 24-bit length), rounded down to whole 4 KiB pages. */
  private static final int KEYED_SGL_MAX = 0xFFF000;

  /** The host's own cap on in-capsule write data per command, whatever the target allows. */
  private static final int MAX_IN_CAPSULE = 8192;

  private final NvmfUri uri;
  private final NvmfHostOptions opts;
  private final RdmaEventChannel events;
  private RdmaQueue admin;
  private final List<RdmaQueue> ioQueues = new CopyOnWriteArrayList<>();
  private volatile Map<Integer, IdentifyNamespace> namespaces = Collections.emptyMap();
  private IdentifyController identify;
  private long cap;
  private int vs;
  private int cntlid;
  private volatile String authentication;
  private int maxTransfer;
  private ScheduledExecutorService timers;
  private Thread cmWatcher;
  private volatile boolean closed;
  private final AtomicBoolean lost = new AtomicBoolean();

  private RdmaController(NvmfUri uri, NvmfHostOptions opts) throws IOException {
    this.uri = uri;
    this.opts = opts;
    this.maxTransfer = opts.maxTransferSize();
    this.events = RdmaEventChannel.createEventChannel();
  }

  /**
   * Connects over RDMA: admin queue, controller enable, identify, then the I/O queues.
   *
   * @throws NvmfException when there is no RDMA device, libdisni or the JVM flag is missing, the
   *     target cannot be reached, or it refuses
   */
  public static RdmaController connect(NvmfUri uri, NvmfHostOptions opts) throws NvmfException {
    var reason = RdmaSupport.unavailableReason();
    if (reason.isPresent()) {
      throw new NvmfException("cannot connect to " + uri + ": " + reason.get());
    }
    RdmaController c;
    try {
      c = new RdmaController(uri, opts);
    } catch (IOException e) {
      throw new NvmfException("RDMA to " + uri + " cannot start: " + e.getMessage(), e);
    }
    try {
      c.start();
      return c;
    } catch (NvmfException | RuntimeException e) {
      c.close();
      throw e;
    } catch (IOException e) {
      c.close();
      throw new NvmfException("RDMA connect to " + uri + " failed: " + e.getMessage(), e);
    }
  }

  private void start() throws IOException {
    InetSocketAddress target = new InetSocketAddress(uri.host(), uri.port());
    if (target.isUnresolved()) {
      throw new NvmfException("cannot resolve the host name of " + uri);
    }
    int tmo = (int) Math.min(Integer.MAX_VALUE, opts.connectTimeout().toMillis());
    long commandTimeout = opts.commandTimeout().toNanos();
    int kato = (int) opts.keepAlive().toMillis();
    int adminDepth = Math.min(ADMIN_DEPTH, opts.adminQueueSize());
    admin = new RdmaQueue(this, 0, adminDepth, 0, commandTimeout);
    admin.open(events, target, 0xFFFF, tmo);
    Cqe connected = connectQueue(admin, 0xFFFF, adminDepth, kato);
    cntlid = connected.dw0() & 0xFFFF;
    authentication = ControllerSetup.authenticateIfAsked(this::adminSync, connected, opts, uri, 0);
    cap = ControllerSetup.enable(this::adminSync, uri, cntlid);
    vs = (int) ControllerSetup.propGet(this::adminSync, Nvme.PROP_VS, false);
    identify = ControllerSetup.identifyController(this::adminSync);
    if (identify.icdoff() != 0) {
      throw new NvmfException(
          "controller at "
              + uri
              + " needs in-capsule data offset "
              + identify.icdoff()
              + " (ICDOFF), which this host does not support");
    }
    // A keyed SGL's length field is 24 bits: a larger transfer is split like one past MDTS.
    maxTransfer =
        Math.min(ControllerSetup.maxTransfer(cap, identify, opts.maxTransferSize()), KEYED_SGL_MAX);
    timers =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "nvmf-rdma-keepalive");
              t.setDaemon(true);
              return t;
            });
    if (kato > 0) {
      long period = Math.max(100, kato / 2);
      // Stopped by timers.shutdownNow() at close; sendKeepAlive catches what it can throw.
      var unused =
          timers.scheduleAtFixedRate(this::sendKeepAlive, period, period, TimeUnit.MILLISECONDS);
    }
    namespaces = ControllerSetup.identifyNamespaces(this::adminSync, uri, identify);
    int granted = ControllerSetup.negotiateIoQueues(this::adminSync, opts.ioQueues());
    int mqes = (int) (cap & 0xFFFF) + 1;
    int qsize = Math.min(opts.ioQueueSize(), mqes);
    int inCapsule = Math.max(0, Math.min(MAX_IN_CAPSULE, identify.inCapsuleDataSize()));
    for (int qid = 1; qid <= granted; qid++) {
      RdmaQueue q = new RdmaQueue(this, qid, qsize, inCapsule, commandTimeout);
      ioQueues.add(q);
      q.open(events, target, cntlid, tmo);
      Cqe r = connectQueue(q, cntlid, qsize, 0);
      ControllerSetup.authenticateIfAsked(
          (sqe, data, dataOut) ->
              call(q, sqe, data, dataOut, opts.commandTimeout().toMillis() + 1000),
          r,
          opts,
          uri,
          qid);
    }
    cmWatcher = new Thread(this::watchConnections, "nvmf-rdma-cm");
    cmWatcher.setDaemon(true);
    cmWatcher.start();
    LOG.debug(
        "connected to {} over RDMA: cntlid {}, {} I/O queues of {}, in-capsule {} bytes, max"
            + " transfer {}",
        uri,
        cntlid,
        granted,
        qsize,
        inCapsule,
        maxTransfer);
  }

  /** Reads connection events: a disconnect on any queue ends the association. */
  private void watchConnections() {
    while (!closed && !lost.get()) {
      try {
        RdmaCmEvent ev = events.getCmEvent(100);
        if (ev == null) {
          continue;
        }
        int type = ev.getEvent();
        ev.ackEvent();
        if (type == CmEvents.DISCONNECTED || type == CmEvents.DEVICE_REMOVAL) {
          if (!closed) {
            lose(
                new NvmfException(
                    "controller "
                        + cntlid
                        + " at "
                        + uri
                        + " is gone: the target "
                        + (type == CmEvents.DISCONNECTED
                            ? "disconnected"
                            : "'s RDMA device was removed")));
          }
        }
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          lose(new NvmfException("RDMA connection events of " + uri + " failed: " + e, e));
        }
        return;
      }
    }
  }

  private void sendKeepAlive() {
    if (closed || lost.get()) {
      return;
    }
    RdmaQueue.Cmd ka =
        new RdmaQueue.Cmd(
            new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE),
            null,
            false,
            ControllerSetup.keepAliveOutcome(uri, cntlid, () -> closed, this::lose));
    ka.timeoutNanos = opts.keepAlive().toNanos();
    admin.submit(ka);
  }

  /**
   * The association is gone: fails every queue, so that commands in flight and new ones fail at
   * once and {@link #isConnected()} says to connect again.
   */
  void lose(NvmfException cause) {
    if (!lost.compareAndSet(false, true)) {
      return;
    }
    if (!closed) {
      LOG.warn("{}; closing its queues", cause.getMessage());
    }
    for (RdmaQueue q : ioQueues) {
      q.fail(cause);
    }
    if (admin != null) {
      admin.fail(cause);
    }
  }

  private Cqe connectQueue(RdmaQueue q, int cntlid, int qsize, int kato) throws NvmfException {
    ByteBuffer d =
        ControllerSetup.connectData(opts.hostId(), cntlid, uri.subsystemNqn(), opts.hostNqn());
    Sqe sqe = ControllerSetup.connect(q.qid(), qsize, kato, false);
    try {
      return call(q, sqe, d, true, opts.connectTimeout().toMillis());
    } catch (NvmeStatusException e) {
      throw new NvmeStatusException("Fabrics Connect of " + q.where(), e.status(), true);
    }
  }

  private Cqe adminSync(Sqe sqe, ByteBuffer data, boolean dataOut) throws NvmfException {
    return call(admin, sqe, data, dataOut, opts.commandTimeout().toMillis() + 1000);
  }

  private static Cqe call(RdmaQueue q, Sqe sqe, ByteBuffer data, boolean dataOut, long ms)
      throws NvmfException {
    CompletableFuture<Cqe> f = new CompletableFuture<>();
    Cqe[] reply = new Cqe[1];
    RdmaQueue.Cmd c =
        new RdmaQueue.Cmd(
            sqe,
            data,
            dataOut,
            err -> {
              if (err != null) {
                f.completeExceptionally(err);
              } else {
                f.complete(reply[0]);
              }
            });
    c.reply = reply;
    q.submit(c);
    return ControllerSetup.await(
        f, ms, ControllerSetup.describe(sqe, q.qid() == 0) + " on " + q.where());
  }

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
    if (closed || lost.get() || admin == null || !admin.isActive()) {
      return false;
    }
    for (RdmaQueue q : ioQueues) {
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
    if (timers != null) {
      timers.shutdownNow();
    }
    NvmfException reason = new NvmfException("host closed the controller at " + uri);
    for (RdmaQueue q : ioQueues) {
      q.close(reason);
    }
    if (admin != null && admin.isActive() && identify != null) {
      try {
        ControllerSetup.shutdown(this::adminSync);
      } catch (NvmfException e) {
        LOG.debug("shutdown notification to {} failed: {}", uri, e.getMessage());
      }
    }
    if (admin != null) {
      admin.close(reason);
    }
    if (cmWatcher != null) {
      try {
        cmWatcher.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      events.destroyEventChannel();
    } catch (IOException | RuntimeException e) {
      LOG.debug("destroying the RDMA event channel of {} failed: {}", uri, e.toString());
    }
  }
}
