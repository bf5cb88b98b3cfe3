package io.ember.nvmf.rdma;

import com.ibm.disni.util.MemoryUtils;
import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfTimeoutException;
import io.ember.nvmf.host.CommandQueue;
import io.ember.nvmf.host.ControllerSetup;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.rdma.CmEvents;
import io.ember.rdma.CompletionPoller;
import io.ember.rdma.RetryingConnParam;
import io.ember.rdma.Verbs;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe-oF queue over an RDMA reliable connection (NVMe-oF's RDMA transport binding), written
 * over DiSNI's verbs. Command capsules go out as SENDs from registered slots, one per command
 * identifier; response capsules arrive in receive buffers posted one per slot. Data moves by the
 * target's RDMA READ and WRITE against the caller's buffer, registered for that command (keyed
 * SGL), or, for writes up to the in-capsule size of an I/O queue, inside the capsule.
 *
 * <p>One thread per queue reaps completions; it sleeps on the completion channel when the queue is
 * idle, so an idle queue costs no CPU. Any thread may submit. A transport error (a failed work
 * request, a disconnect) fails every command in flight and the controller's association; a command
 * with no answer in time fails alone, and its buffer is deregistered first, so that the target can
 * no longer touch memory the caller got back.
 */
final class RdmaQueue extends CommandQueue {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaQueue.class);

  /** NVMe-oF RDMA: an SGL of type Keyed Data Block, sub type Address. */
  private static final int SGL_KEYED_ADDRESS = 0x40;

  /** NVMe-oF RDMA: an SGL of type Data Block, sub type Offset (data in the capsule). */
  private static final int SGL_INCAPSULE_OFFSET = 0x01;

  private static final long RECV_TAG = 1L << 32;

  private final RdmaController ctrl;
  private final int qid;
  private final int size;
  private final int inCapsule;
  private final long timeoutNanos;
  private final String where;

  private RdmaCmId id;
  private IbvPd pd;
  private IbvCompChannel compChannel;
  private IbvCQ cq;
  private IbvQP qp;
  private ByteBuffer capsules;
  private ByteBuffer responses;
  private IbvMr capsulesMr;
  private IbvMr responsesMr;
  private SVCPostSend[] sends;
  private SVCPostRecv[] recvs;
  private Thread reaper;

  private final Object lock = new Object();
  private final Cmd[] slots;
  private final int[] freeCids;
  private int freeCount;
  private final ArrayDeque<Cmd> waiting = new ArrayDeque<>();
  private volatile boolean running;
  private NvmfException closeCause;

  /** One command from submission to completion. */
  static final class Cmd {
    final Sqe sqe;
    final ByteBuffer data;
    final boolean dataOut;
    final NvmfCallback cb;
    long timeoutNanos;
    long deadline;
    int cid = -1;
    IbvMr mr;

    /** A direct copy of a heap buffer, which the device cannot reach. */
    ByteBuffer bounce;

    boolean sent;
    Cqe cqe;
    boolean done;
    NvmfException error;

    /** Where a synchronous command's completion goes (Connect, admin), for its dwords 0 and 1. */
    Cqe[] reply;

    Cmd(Sqe sqe, ByteBuffer data, boolean dataOut, NvmfCallback cb) {
      this.sqe = sqe;
      this.data = data;
      this.dataOut = dataOut;
      this.cb = cb;
    }
  }

  RdmaQueue(RdmaController ctrl, int qid, int size, int inCapsule, long timeoutNanos) {
    super(ctrl);
    this.ctrl = ctrl;
    this.qid = qid;
    this.size = size;
    this.inCapsule = inCapsule;
    this.timeoutNanos = timeoutNanos;
    this.where = "queue " + qid + " of " + ctrl.uri();
    this.slots = new Cmd[size];
    this.freeCids = new int[size];
    for (int i = 0; i < size; i++) {
      freeCids[i] = size - 1 - i;
    }
    this.freeCount = size;
  }

  String where() {
    return where;
  }

  /**
   * Resolves the target's address, connects the queue pair with NVMe-oF's private data and starts
   * the reaper. Events on {@code events} are read here until the connection is established.
   */
  @SuppressWarnings("JdkObsolete") // DiSNI's work requests take LinkedLists
  void open(RdmaEventChannel events, InetSocketAddress target, int cntlid, int timeoutMs)
      throws IOException {
    id = events.createId(RdmaCm.RDMA_PS_TCP);
    id.resolveAddr(null, target, timeoutMs);
    expect(events, CmEvents.ADDR_RESOLVED, timeoutMs, "address");
    id.resolveRoute(timeoutMs);
    expect(events, CmEvents.ROUTE_RESOLVED, timeoutMs, "route");
    IbvContext context = id.getVerbs();
    pd = context.allocPd();
    compChannel = context.createCompChannel();
    cq = context.createCQ(compChannel, 2 * size + 1, 0);
    IbvQPInitAttr attr = new IbvQPInitAttr();
    attr.setQp_type(IbvQP.IBV_QPT_RC);
    attr.setSend_cq(cq);
    attr.setRecv_cq(cq);
    attr.cap().setMax_send_wr(size);
    attr.cap().setMax_recv_wr(size);
    attr.cap().setMax_send_sge(1);
    attr.cap().setMax_recv_sge(1);
    qp = id.createQP(pd, attr);

    int slot = Sqe.SIZE + inCapsule;
    capsules = ByteBuffer.allocateDirect(slot * size).order(ByteOrder.LITTLE_ENDIAN);
    responses = ByteBuffer.allocateDirect(Cqe.SIZE * size).order(ByteOrder.LITTLE_ENDIAN);
    capsulesMr = Verbs.register(pd, capsules, IbvMr.IBV_ACCESS_LOCAL_WRITE);
    responsesMr = Verbs.register(pd, responses, IbvMr.IBV_ACCESS_LOCAL_WRITE);
    sends = new SVCPostSend[size];
    recvs = new SVCPostRecv[size];
    for (int i = 0; i < size; i++) {
      IbvSge sge = new IbvSge();
      sge.setAddr(capsulesMr.getAddr() + (long) i * slot);
      sge.setLength(Sqe.SIZE);
      sge.setLkey(capsulesMr.getLkey());
      LinkedList<IbvSge> sgl = new LinkedList<>();
      sgl.add(sge);
      IbvSendWR wr = new IbvSendWR();
      wr.setWr_id(i);
      wr.setSg_list(sgl);
      wr.setOpcode(IbvSendWR.IBV_WR_SEND);
      wr.setSend_flags(IbvSendWR.IBV_SEND_SIGNALED);
      sends[i] = qp.postSend(List.of(wr), null);

      IbvSge rsge = new IbvSge();
      rsge.setAddr(responsesMr.getAddr() + (long) i * Cqe.SIZE);
      rsge.setLength(Cqe.SIZE);
      rsge.setLkey(responsesMr.getLkey());
      LinkedList<IbvSge> rsgl = new LinkedList<>();
      rsgl.add(rsge);
      IbvRecvWR rwr = new IbvRecvWR();
      rwr.setWr_id(RECV_TAG | i);
      rwr.setSg_list(rsgl);
      recvs[i] = qp.postRecv(List.of(rwr), null);
      recvs[i].execute();
    }

    // NVMe-oF RDMA CM request private data: RECFMT, QID, HRQSIZE, HSQSIZE (0's based), CNTLID.
    ByteBuffer priv = ByteBuffer.allocateDirect(32).order(ByteOrder.LITTLE_ENDIAN);
    priv.putShort(0, (short) 0)
        .putShort(2, (short) qid)
        .putShort(4, (short) size)
        .putShort(6, (short) (size - 1))
        .putShort(8, (short) cntlid);
    RdmaConnParam param = new RetryingConnParam();
    param.setPrivate_data(MemoryUtils.getAddress(priv));
    param.setPrivate_data_len((byte) 32);
    id.connect(param);
    expect(events, CmEvents.ESTABLISHED, timeoutMs, "connection");
    running = true;
    reaper = new Thread(this::reap, "nvmf-rdma-q" + qid);
    reaper.setDaemon(true);
    reaper.start();
  }

  private void expect(RdmaEventChannel events, int want, int ms, String what) throws IOException {
    RdmaCmEvent ev = events.getCmEvent(ms);
    if (ev == null) {
      throw new NvmfTimeoutException(
          "RDMA " + what + " of " + where + " not resolved within " + ms + " ms");
    }
    int type = ev.getEvent();
    int status = ev.getStatus();
    ev.ackEvent();
    if (type != want) {
      String got = CmEvents.name(type);
      String hint =
          type == CmEvents.REJECTED
              ? " (the target refused the queue: wrong address, port or NQN, or no RDMA port there)"
              : "";
      throw new NvmfException(
          "RDMA " + what + " of " + where + " failed: " + got + ", status " + status + hint);
    }
  }

  @Override
  public int qid() {
    return qid;
  }

  @Override
  public int depth() {
    return size - 1;
  }

  @Override
  protected void submitCommand(Sqe sqe, ByteBuffer data, boolean dataOut, NvmfCallback cb) {
    submit(new Cmd(sqe, data, dataOut, cb));
  }

  /** Submits one command; its callback runs once, on the reaper or (for refusals) here. */
  void submit(Cmd c) {
    c.deadline = System.nanoTime() + (c.timeoutNanos > 0 ? c.timeoutNanos : timeoutNanos);
    NvmfException refused = null;
    synchronized (lock) {
      if (!running) {
        refused =
            new NvmfException(
                describe(c)
                    + " not sent: "
                    + (closeCause != null ? closeCause.getMessage() : where + " is closed"));
      } else if (freeCount == 0) {
        waiting.add(c);
      } else {
        refused = post(c);
      }
    }
    if (refused != null) {
      c.cb.complete(refused);
    }
  }

  private String describe(Cmd c) {
    return ControllerSetup.describe(c.sqe, qid == 0) + " on " + where;
  }

  /**
   * Posts {@code c}'s capsule; returns the error instead of completing, to run outside the lock.
   */
  private NvmfException post(Cmd c) {
    int cid = freeCids[--freeCount];
    c.cid = cid;
    slots[cid] = c;
    c.sqe.cid(cid).flags(Nvme.PSDT_SGL);
    int len = c.data == null ? 0 : c.data.remaining();
    int slot = Sqe.SIZE + inCapsule;
    int sendLength = Sqe.SIZE;
    try {
      if (len == 0) {
        keyedSgl(c.sqe, 0, 0, 0);
      } else if (c.dataOut && qid > 0 && len <= inCapsule) {
        c.sqe.sgl(0, len, SGL_INCAPSULE_OFFSET);
        capsules.put(cid * slot + Sqe.SIZE, c.data, c.data.position(), len);
        sendLength += len;
      } else {
        ByteBuffer target = c.data;
        if (!target.isDirect()) {
          c.bounce = ByteBuffer.allocateDirect(len);
          if (c.dataOut) {
            c.bounce.put(0, target, target.position(), len);
          }
          target = c.bounce;
        }
        c.mr = Verbs.register(pd, target, Verbs.ACCESS_ALL);
        keyedSgl(c.sqe, c.mr.getAddr(), len, c.mr.getRkey());
      }
      capsules.put(cid * slot, c.sqe.array());
      SVCPostSend send = sends[cid];
      send.getWrMod(0).getSgeMod(0).setLength(sendLength);
      send.execute();
      return null;
    } catch (IOException | RuntimeException e) {
      release(c);
      return new NvmfException(describe(c) + " could not be posted: " + e.getMessage(), e);
    }
  }

  private static void keyedSgl(Sqe sqe, long address, int length, int key) {
    byte[] b = sqe.array();
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(24, address).putInt(35, key);
    b[32] = (byte) length;
    b[33] = (byte) (length >>> 8);
    b[34] = (byte) (length >>> 16);
    b[39] = (byte) SGL_KEYED_ADDRESS;
  }

  /** Frees {@code c}'s identifier and registration; under the lock. */
  private void release(Cmd c) {
    if (c.mr != null) {
      Verbs.deregister(c.mr);
      c.mr = null;
    }
    if (slots[c.cid] == c) {
      slots[c.cid] = null;
      freeCids[freeCount++] = c.cid;
    }
  }

  private void reap() {
    long nextSweep = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
    try (CompletionPoller poller = new CompletionPoller(cq, compChannel, 32)) {
      while (running) {
        int n = poller.next(100);
        for (int i = 0; i < n; i++) {
          handle(poller.completion(i));
        }
        long now = System.nanoTime();
        if (now - nextSweep > 0) {
          sweep(now);
          nextSweep = now + TimeUnit.MILLISECONDS.toNanos(100);
        }
      }
    } catch (IOException | RuntimeException e) {
      if (running) {
        ctrl.lose(new NvmfException("completions of " + where + " failed: " + e, e));
      }
    }
  }

  private void handle(IbvWC wc) throws IOException {
    long wrId = wc.getWr_id();
    boolean recv = (wrId & RECV_TAG) != 0;
    if (wc.getStatus() != 0) {
      if (running) {
        int s = wc.getStatus();
        ctrl.lose(
            new NvmfException(
                "the RDMA connection of "
                    + where
                    + " failed: a "
                    + (recv ? "receive" : "send")
                    + " completed with "
                    + CmEvents.wcStatus(s)));
      }
      return;
    }
    Cmd finished = null;
    List<Cmd> refused = null;
    synchronized (lock) {
      Cmd c;
      if (recv) {
        int r = (int) (wrId & 0xFFFF);
        int off = r * Cqe.SIZE;
        Cqe cqe =
            new Cqe(
                responses.getInt(off),
                responses.getInt(off + 4),
                responses.getShort(off + 8) & 0xFFFF,
                responses.getShort(off + 10) & 0xFFFF,
                responses.getShort(off + 12) & 0xFFFF,
                (responses.getShort(off + 14) & 0xFFFF) >>> 1);
        recvs[r].execute();
        c = cqe.cid() < slots.length ? slots[cqe.cid()] : null;
        if (c == null) {
          LOG.warn("{}: a response for command {}, which is not in flight", where, cqe.cid());
          return;
        }
        c.cqe = cqe;
      } else {
        c = slots[(int) wrId];
        if (c == null) {
          return;
        }
        c.sent = true;
      }
      // The slot is free only when both the target's answer and our SEND's completion are in.
      if (!c.sent || c.cqe == null) {
        return;
      }
      release(c);
      finished = c;
      while (freeCount > 0 && !waiting.isEmpty()) {
        Cmd w = waiting.poll();
        NvmfException err = post(w);
        if (err != null) {
          w.error = err;
          if (refused == null) {
            refused = new ArrayList<>();
          }
          refused.add(w);
        }
      }
    }
    finish(finished);
    if (refused != null) {
      for (Cmd w : refused) {
        done(w, w.error);
      }
    }
  }

  /** Delivers a completed command's result to its caller; on the reaper, outside the lock. */
  private void finish(Cmd c) {
    synchronized (lock) {
      if (c.done) {
        return; // timed out or failed: the caller has its buffer back, so nothing is copied into it
      }
    }
    NvmfException err = null;
    if (c.cqe.status() != 0) {
      // The same words as the TCP host's: the command, then its status.
      err =
          new NvmeStatusException(ControllerSetup.describe(c.sqe, qid == 0), c.cqe.status(), false);
    } else if (c.bounce != null && !c.dataOut) {
      c.data.put(c.data.position(), c.bounce, 0, c.data.remaining());
    }
    if (c.reply != null) {
      c.reply[0] = c.cqe;
    }
    done(c, err);
  }

  private void done(Cmd c, NvmfException err) {
    synchronized (lock) {
      if (c.done) {
        return;
      }
      c.done = true;
    }
    try {
      c.cb.complete(err);
    } catch (RuntimeException e) {
      LOG.warn("a completion callback of {} threw", where, e);
    }
  }

  /**
   * Fails commands past their deadline. The target may still answer one, or still move its data:
   * the buffer is deregistered before the caller gets it back, and the identifier stays taken until
   * the answer comes (or the queue goes).
   */
  private void sweep(long now) {
    List<Cmd> late = null;
    synchronized (lock) {
      for (Cmd c : slots) {
        if (c != null && !c.done && now - c.deadline > 0) {
          if (c.mr != null) {
            Verbs.deregister(c.mr);
            c.mr = null;
          }
          if (late == null) {
            late = new ArrayList<>();
          }
          late.add(c);
        }
      }
    }
    if (late != null) {
      for (Cmd c : late) {
        done(
            c,
            new NvmfTimeoutException(
                describe(c)
                    + " got no answer within "
                    + TimeUnit.NANOSECONDS.toMillis(
                        c.timeoutNanos > 0 ? c.timeoutNanos : timeoutNanos)
                    + " ms"));
      }
    }
  }

  /**
   * Stops the queue: every command in flight or waiting fails with {@code cause}, the connection is
   * torn down and its memory deregistered. Returns within about the reaper's 100 ms wake-up.
   */
  void fail(NvmfException cause) {
    List<Cmd> all = new ArrayList<>();
    synchronized (lock) {
      if (closeCause == null) {
        closeCause = cause;
      }
      running = false;
      for (Cmd c : slots) {
        if (c != null) {
          all.add(c);
        }
      }
      all.addAll(waiting);
      waiting.clear();
    }
    if (id != null) {
      try {
        id.disconnect();
      } catch (IOException e) {
        LOG.debug("disconnecting {} failed: {}", where, e.toString());
      }
    }
    for (Cmd c : all) {
      done(c, new NvmfException(describe(c) + " failed: " + cause.getMessage(), cause));
    }
  }

  /** Fails what is left with {@code reason} and frees every RDMA resource of the queue. */
  void close(NvmfException reason) {
    fail(reason);
    if (reaper != null && reaper != Thread.currentThread()) {
      try {
        reaper.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (lock) {
      for (Cmd c : slots) {
        if (c != null && c.mr != null) {
          Verbs.deregister(c.mr);
          c.mr = null;
        }
      }
    }
    if (sends != null) {
      for (SVCPostSend s : sends) {
        if (s != null) {
          s.free();
        }
      }
      for (SVCPostRecv r : recvs) {
        if (r != null) {
          r.free();
        }
      }
    }
    Verbs.freeEach(
        where,
        () -> {
          if (id != null) {
            id.destroyQP();
          }
        },
        () -> {
          if (capsulesMr != null) {
            Verbs.deregister(capsulesMr);
          }
        },
        () -> {
          if (responsesMr != null) {
            Verbs.deregister(responsesMr);
          }
        },
        () -> {
          if (cq != null) {
            cq.destroyCQ();
          }
        },
        () -> {
          if (compChannel != null) {
            compChannel.destroyCompChannel();
          }
        },
        () -> {
          if (pd != null) {
            pd.deallocPd();
          }
        },
        () -> {
          if (id != null) {
            id.destroyId();
          }
        });
  }

  boolean isActive() {
    return running;
  }
}
