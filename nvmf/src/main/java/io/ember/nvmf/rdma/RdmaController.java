package io.ember.nvmf.rdma;

import com.ibm.jnvmf.Controller;
import com.ibm.jnvmf.IdentifyControllerData;
import com.ibm.jnvmf.IdentifyNamespaceData;
import com.ibm.jnvmf.IoQueuePair;
import com.ibm.jnvmf.KeyedNativeBuffer;
import com.ibm.jnvmf.NamespaceIdentifier;
import com.ibm.jnvmf.NvmIoCommand;
import com.ibm.jnvmf.NvmIoCommandSqe;
import com.ibm.jnvmf.NvmReadCommand;
import com.ibm.jnvmf.NvmResponseCapsule;
import com.ibm.jnvmf.NvmWriteCommand;
import com.ibm.jnvmf.Nvme;
import com.ibm.jnvmf.NvmeQualifiedName;
import com.ibm.jnvmf.NvmfTransportId;
import com.ibm.jnvmf.OperationCallback;
import com.ibm.jnvmf.RdmaException;
import com.ibm.jnvmf.Response;
import io.ember.nvmf.IdentifyController;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.NvmfUri;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host interface over RDMA, through jNVMf and DiSNI. Loaded by name from {@link
 * io.ember.nvmf.NvmfHost} so that the rest of the library never links against DiSNI. jNVMf
 * implements only Read and Write on I/O queues: Flush, Dataset Management and Write Zeroes complete
 * with an {@link NvmfException} saying so.
 *
 * <p>jNVMf queue pairs are not thread-safe and progress only when polled, so each queue owns one
 * thread that takes submissions from a lock-free queue and polls for completions. Each command
 * registers the caller's buffer with the RDMA device (memory registration is the price of not
 * copying).
 */
public final class RdmaController implements NvmfController {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaController.class);

  private final NvmfUri uri;
  private final Controller ctrl;
  private final IdentifyController identify;
  private final Map<Integer, IdentifyNamespace> namespaces = new TreeMap<>();
  private final List<RdmaQueue> queues = new ArrayList<>();
  private final ScheduledExecutorService keepAlive;

  private final int maxTransfer;
  private volatile boolean closed;

  private RdmaController(NvmfUri uri, NvmfHostOptions opts) throws IOException {
    this.uri = uri;
    Nvme nvme = new Nvme(new NvmeQualifiedName(opts.hostNqn()));
    long kato = opts.keepAlive().toMillis();
    ctrl =
        nvme.connect(
            new NvmfTransportId(
                new InetSocketAddress(uri.host(), uri.port()),
                new NvmeQualifiedName(uri.subsystemNqn())),
            Math.max(1, kato),
            TimeUnit.MILLISECONDS,
            true);
    ctrl.getControllerConfiguration().setEnable(true);
    ctrl.syncConfiguration();
    try {
      ctrl.waitUntilReady();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new NvmfException("RDMA controller at " + uri + " did not become ready", e);
    }
    IdentifyControllerData id = ctrl.getIdentifyControllerData();
    int mdtsPages = id.getMaximumDataTransferSize().toInt();
    long mdtsBytes =
        mdtsPages <= 0
            ? Long.MAX_VALUE
            : (long) mdtsPages
                * ctrl.getControllerCapabilities().getMemoryPageSizeMinimum().toInt();
    this.maxTransfer = (int) Math.min(opts.maxTransferSize(), mdtsBytes);
    this.identify =
        new IdentifyController(
            id.getPciVendorId() & 0xFFFF,
            id.getSerialNumber(),
            id.getModelNumber(),
            id.getFirmwareRevision(),
            0,
            id.getControllerId().toShort() & 0xFFFF,
            (id.getNvmeVersion().getMajor() << 16)
                | (id.getNvmeVersion().getMinor() << 8)
                | id.getNvmeVersion().getTertiary(),
            1,
            0,
            0,
            0,
            0,
            0,
            1,
            uri.subsystemNqn(),
            (int) id.getIoQueueCommandCapsuleSupportedSize(),
            (int) id.getIoQueueResponseCapsuleSupportedSize(),
            id.getInCapsuleDataOffset());
    for (com.ibm.jnvmf.Namespace ns : ctrl.getActiveNamespaces()) {
      int nsid = ns.getIdentifier().toInt();
      if (uri.nsid() != 0 && nsid != uri.nsid()) {
        continue;
      }
      IdentifyNamespaceData d = ns.getIdentifyNamespaceData();
      int bs = d.getFormattedLbaSize().getLbaDataSize().toInt();
      namespaces.put(
          nsid,
          new IdentifyNamespace(
              nsid,
              d.getNamespaceSize(),
              d.getNamespaceCapacity(),
              0,
              bs,
              d.getFormattedLbaSize().getMetadataSize(),
              0,
              new byte[16]));
    }
    for (int i = 0; i < opts.ioQueues(); i++) {
      IoQueuePair qp = ctrl.createIoQueuePair(opts.ioQueueSize());
      queues.add(new RdmaQueue(i + 1, qp, opts.ioQueueSize() - 1));
    }
    keepAlive =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "nvmf-rdma-keepalive");
              t.setDaemon(true);
              return t;
            });
    // A periodic task that throws is never run again: every failure is caught, so that one bad
    // Keep Alive does not end them all (and the target then drop the controller).
    if (kato > 0) {
      // Stopped by keepAlive.shutdownNow() at close.
      var unused =
          keepAlive.scheduleAtFixedRate(
              () -> {
                try {
                  ctrl.keepAlive();
                } catch (IOException | RuntimeException e) {
                  LOG.warn("Keep Alive to {} failed: {}", uri, e.toString());
                }
              },
              kato / 2,
              kato / 2,
              TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Connects over RDMA.
   *
   * @throws NvmfException when there is no RDMA device, libdisni is missing, or the target refuses
   */
  public static RdmaController connect(NvmfUri uri, NvmfHostOptions opts) throws NvmfException {
    var reason = RdmaSupport.unavailableReason();
    if (reason.isPresent()) {
      throw new NvmfException("cannot connect to " + uri + ": " + reason.get());
    }
    try {
      return new RdmaController(uri, opts);
    } catch (NvmfException e) {
      throw e;
    } catch (IOException e) {
      throw new NvmfException("RDMA connect to " + uri + " failed: " + e.getMessage(), e);
    } catch (LinkageError e) {
      throw new NvmfException("RDMA transport cannot load (DiSNI/libdisni): " + e, e);
    }
  }

  /** Maps a completion's status code type and code to this library's exception. */
  static NvmfException statusError(String command, int sct, int sc, boolean dnr) {
    return new NvmeStatusException(
        command, (sc & 0xFF) | ((sct & 7) << 8) | (dnr ? 1 << 14 : 0), false);
  }

  @Override
  public NvmfUri uri() {
    return uri;
  }

  @Override
  public boolean isConnected() {
    return !closed; // jNVMf reports a broken connection only through failed commands
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
    IdentifyNamespace ns = namespaces.get(nsid);
    if (ns == null) {
      throw new IllegalArgumentException("namespace " + nsid + " is not active on " + uri);
    }
    return ns;
  }

  @Override
  public int ioQueueCount() {
    return queues.size();
  }

  @Override
  public NvmfQueue ioQueue(int index) {
    return queues.get(index);
  }

  @Override
  public long cap() {
    return ctrl.getControllerCapabilities().getMaximumQueueEntriesSupported() - 1 | (1L << 37);
  }

  @Override
  public int version() {
    return identify.version();
  }

  @Override
  public int maxTransferSize() {
    return maxTransfer;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    keepAlive.shutdownNow();
    for (RdmaQueue q : queues) {
      q.stop();
    }
    try {
      ctrl.free();
    } catch (IOException e) {
      LOG.debug("freeing the jNVMf controller of {} failed: {}", uri, e.toString());
    }
  }

  /** One RDMA I/O queue pair driven by its own thread. */
  private final class RdmaQueue implements NvmfQueue, Runnable {
    private final int qid;
    private final IoQueuePair qp;
    private final int depth;
    private final ConcurrentLinkedQueue<Runnable> submissions = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private int inFlight;
    private volatile boolean running = true;

    RdmaQueue(int qid, IoQueuePair qp, int depth) {
      this.qid = qid;
      this.qp = qp;
      this.depth = depth;
      this.thread = new Thread(this, "nvmf-rdma-q" + qid);
      thread.setDaemon(true);
      thread.start();
    }

    @Override
    public void run() {
      while (running) {
        try {
          Runnable r;
          while (inFlight < depth && (r = submissions.poll()) != null) {
            r.run();
          }
          if (qp.poll() == 0 && submissions.isEmpty()) {
            Thread.onSpinWait();
          }
        } catch (IOException e) {
          LOG.warn("polling RDMA queue {} of {} failed: {}", qid, uri, e.toString());
        }
      }
    }

    void stop() {
      running = false;
      try {
        thread.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Runnable r;
      while ((r = submissions.poll()) != null) {
        r.run(); // runs with running == false: fails the command
      }
    }

    @Override
    public int qid() {
      return qid;
    }

    @Override
    public int depth() {
      return depth;
    }

    private void io(boolean write, int nsid, long slba, ByteBuffer buf, NvmfCallback cb) {
      IdentifyNamespace ns = namespace(nsid);
      int len = buf.remaining();
      if (len == 0
          || len % ns.blockSize() != 0
          || len > maxTransfer
          || len / ns.blockSize() > 65535) {
        throw new IllegalArgumentException(
            "RDMA transfer of "
                + len
                + " bytes: must be a positive multiple"
                + " of the "
                + ns.blockSize()
                + "-byte block size and at most "
                + maxTransfer
                + " bytes");
      }
      if (!buf.isDirect()) {
        throw new IllegalArgumentException(
            "RDMA needs direct buffers (registered with the device)");
      }
      ByteBuffer slice = buf.slice(buf.position(), len);
      String what = (write ? "Write" : "Read") + " nsid " + nsid + " slba " + slba + " over RDMA";
      submissions.add(
          () -> {
            if (!running) {
              cb.complete(new NvmfException(what + " not sent: the controller was closed"));
              return;
            }
            try {
              NvmIoCommand<?> cmd = write ? new NvmWriteCommand(qp) : new NvmReadCommand(qp);
              NvmIoCommandSqe sqe = cmd.getCommandCapsule().getSubmissionQueueEntry();
              sqe.setNamespaceIdentifier(new NamespaceIdentifier(nsid));
              sqe.setStartingLba(slba);
              sqe.setNumberOfLogicalBlocks(len / ns.blockSize());
              KeyedNativeBuffer reg = qp.registerMemory(slice);
              cmd.getCommandCapsule().setSglDescriptor(reg);
              Response<NvmResponseCapsule> resp = cmd.newResponse();
              inFlight++;
              resp.setCallback(
                  new OperationCallback() {
                    @Override
                    public void onStart() {}

                    @Override
                    public void onComplete() {
                      inFlight--;
                      var cqe = resp.getResponseCapsule().getCompletionQueueEntry();
                      int sct = cqe.getStatusCodeType().toInt();
                      int sc = cqe.getStatusCode().toInt();
                      free(reg);
                      cb.complete(
                          sct == 0 && sc == 0
                              ? null
                              : statusError(what, sct, sc, cqe.getDoNotRetry()));
                    }

                    @Override
                    public void onFailure(RdmaException e) {
                      inFlight--;
                      free(reg);
                      cb.complete(
                          new NvmfException(
                              what + " failed in the RDMA transport: " + e.getStatus(), e));
                    }
                  });
              cmd.execute(resp);
            } catch (IOException | RuntimeException e) {
              cb.complete(new NvmfException(what + " could not be posted: " + e.getMessage(), e));
            }
          });
    }

    private void free(KeyedNativeBuffer reg) {
      try {
        reg.free();
      } catch (IOException e) {
        LOG.debug("deregistering a buffer failed: {}", e.toString());
      }
    }

    @Override
    public void read(int nsid, long slba, ByteBuffer dst, NvmfCallback callback) {
      io(false, nsid, slba, dst, callback);
    }

    @Override
    public void write(int nsid, long slba, ByteBuffer src, NvmfCallback callback) {
      io(true, nsid, slba, src, callback);
    }

    private void unsupported(String what, NvmfCallback cb) {
      cb.complete(
          new NvmfException(
              what
                  + " is not implemented by jNVMf 1.6 (only Read and Write are);"
                  + " use the TCP transport for it"));
    }

    @Override
    public void flush(int nsid, NvmfCallback callback) {
      unsupported("Flush", callback);
    }

    @Override
    public void deallocate(int nsid, long slba, long nlb, NvmfCallback callback) {
      unsupported("Dataset Management", callback);
    }

    @Override
    public void writeZeroes(int nsid, long slba, long nlb, NvmfCallback callback) {
      unsupported("Write Zeroes", callback);
    }
  }
}
