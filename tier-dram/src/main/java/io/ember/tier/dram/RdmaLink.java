package io.ember.tier.dram;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.SVCPostSend;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.rdma.CmEvents;
import io.ember.rdma.CompletionPoller;
import io.ember.rdma.RetryingConnParam;
import io.ember.rdma.Verbs;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A reliable RDMA connection from a client to one DRAM data node, over which the client reads and
 * writes granted blocks one-sidedly: RDMA READ into the caller's buffer, RDMA WRITE from it
 * followed by a small SEND telling the data node what was written. Each operation's local buffer is
 * registered for the operation (heap and composite buffers through a direct copy).
 *
 * <p>One thread reaps completions and connection events; it sleeps on the completion channel when
 * idle. A refused key (the block moved on) fails its operation as a stale location. Any other
 * failure of a work request, or a disconnect, ends the connection: operations flushed with it fail
 * with {@link Flushed}, which the tier retries once on a new connection. An operation with no
 * completion within the RPC timeout fails alone, its buffer deregistered first.
 */
final class RdmaLink {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaLink.class);

  /**
   * Operations in flight per connection: the data node posts as many receives for write notices on
   * each connection (RdmaBlockServer.RECEIVES_PER_CONNECTION).
   */
  static final int DEPTH = 64;

  /** The write notice's size: incarnation, block id, generation, address, length. */
  static final int NOTICE_BYTES = 36;

  private static final int NOTICE_SLOT = 64;
  private static final long NOTICE_TAG = 1L << 32;

  /** An operation that never ran because its connection failed first; safe to post again. */
  static final class Flushed extends EmberException {
    private static final long serialVersionUID = 1L;

    Flushed(String message) {
      super(ErrorCode.CONNECTION_CLOSED, message);
    }
  }

  /** One read or write from submission to completion. */
  private static final class Op {
    final boolean write;
    final ByteBuf source;
    final ByteBuffer target;
    final int length;
    final long remoteAddress;
    final int rkey;
    final long[] notice;

    /** How errors name the operation; made only when one does. */
    final Supplier<String> what;

    final CompletableFuture<Void> done = new CompletableFuture<>();
    ByteBuf staging;
    IbvMr mr;
    int slot = -1;
    long deadline;
    boolean finished;

    Op(
        boolean write,
        ByteBuf source,
        ByteBuffer target,
        int length,
        long remoteAddress,
        int rkey,
        long[] notice,
        Supplier<String> what) {
      this.write = write;
      this.source = source;
      this.target = target;
      this.length = length;
      this.remoteAddress = remoteAddress;
      this.rkey = rkey;
      this.notice = notice;
      this.what = what;
    }
  }

  private final InetSocketAddress address;
  private final String node;
  private final long timeoutNanos;

  private RdmaEventChannel events;
  private RdmaCmId id;
  private IbvPd pd;
  private IbvCompChannel compChannel;
  private IbvCQ cq;
  private ByteBuffer notices;
  private IbvMr noticesMr;
  private Thread reaper;

  private final Object lock = new Object();
  private final Op[] slots = new Op[DEPTH];
  private final ArrayDeque<Integer> free = new ArrayDeque<>();
  private final ArrayDeque<Op> waiting = new ArrayDeque<>();
  private volatile boolean running;
  private String lostBecause;
  private boolean lossHandled;
  private boolean closed;

  private RdmaLink(InetSocketAddress address, String node, long timeoutNanos) {
    this.address = address;
    this.node = node;
    this.timeoutNanos = timeoutNanos;
    for (int i = 0; i < DEPTH; i++) {
      free.add(i);
    }
  }

  /**
   * Connects to the data node's RDMA port at {@code address}; blocks up to the timeout.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the connection cannot be made
   */
  static RdmaLink connect(InetSocketAddress address, String node, long timeoutNanos)
      throws EmberException {
    RdmaLink link = new RdmaLink(address, node, timeoutNanos);
    try {
      link.open((int) Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(timeoutNanos)));
      return link;
    } catch (IOException | RuntimeException e) {
      link.close("its connection could not be made");
      throw new EmberException(
          ErrorCode.UNREACHABLE,
          "cannot connect over RDMA to " + node + " at " + address + ": " + e.getMessage(),
          e);
    }
  }

  private void open(int timeoutMs) throws IOException {
    events = RdmaEventChannel.createEventChannel();
    id = events.createId(RdmaCm.RDMA_PS_TCP);
    id.resolveAddr(null, address, timeoutMs);
    expect(CmEvents.ADDR_RESOLVED, timeoutMs, "address resolution");
    id.resolveRoute(timeoutMs);
    expect(CmEvents.ROUTE_RESOLVED, timeoutMs, "route resolution");
    IbvContext context = id.getVerbs();
    pd = context.allocPd();
    compChannel = context.createCompChannel();
    cq = context.createCQ(compChannel, 2 * DEPTH + 1, 0);
    IbvQPInitAttr attr = new IbvQPInitAttr();
    attr.setQp_type(IbvQP.IBV_QPT_RC);
    attr.setSend_cq(cq);
    attr.setRecv_cq(cq);
    attr.cap().setMax_send_wr(2 * DEPTH);
    attr.cap().setMax_recv_wr(1);
    attr.cap().setMax_send_sge(1);
    attr.cap().setMax_recv_sge(1);
    id.createQP(pd, attr);
    notices = ByteBuffer.allocateDirect(NOTICE_SLOT * DEPTH).order(ByteOrder.LITTLE_ENDIAN);
    noticesMr = Verbs.register(pd, notices, IbvMr.IBV_ACCESS_LOCAL_WRITE);
    id.connect(new RetryingConnParam());
    expect(CmEvents.ESTABLISHED, timeoutMs, "connection");
    running = true;
    reaper = new Thread(this::reap, "dram-rdma-" + address);
    reaper.setDaemon(true);
    reaper.start();
  }

  private void expect(int want, int ms, String what) throws IOException {
    RdmaCmEvent ev = events.getCmEvent(ms);
    if (ev == null) {
      throw new IOException("no " + what + " within " + ms + " ms");
    }
    int type = ev.getEvent();
    int status = ev.getStatus();
    ev.ackEvent();
    if (type != want) {
      String hint =
          type == CmEvents.REJECTED
              ? " (nothing serves RDMA there: is the data node's transport rdma?)"
              : "";
      throw new IOException(what + " failed: " + CmEvents.name(type) + ", status " + status + hint);
    }
  }

  /** False once the connection failed or closed; the tier then makes a new one. */
  boolean isAlive() {
    return running;
  }

  /**
   * Writes {@code data}'s readable bytes at {@code remoteAddress} with {@code rkey}, then tells the
   * data node {@code notice} (incarnation, block id, generation, address). {@code data} stays the
   * caller's: it must stay unchanged until the future completes.
   */
  CompletableFuture<Void> write(
      long remoteAddress, int rkey, ByteBuf data, long[] notice, Supplier<String> what) {
    Op op = new Op(true, data, null, data.readableBytes(), remoteAddress, rkey, notice, what);
    submit(op);
    return op.done;
  }

  /** Reads {@code dst.remaining()} bytes at {@code remoteAddress} with {@code rkey} into dst. */
  CompletableFuture<Void> read(
      long remoteAddress, int rkey, ByteBuffer dst, Supplier<String> what) {
    Op op = new Op(false, null, dst, dst.remaining(), remoteAddress, rkey, null, what);
    submit(op);
    return op.done;
  }

  private void submit(Op op) {
    op.deadline = System.nanoTime() + timeoutNanos;
    EmberException refused = null;
    synchronized (lock) {
      if (!running) {
        refused = new Flushed(op.what.get() + " not sent: " + lostReason());
      } else if (free.isEmpty()) {
        waiting.add(op);
      } else {
        refused = post(op);
      }
    }
    if (refused != null) {
      complete(op, refused);
    }
    if (!running) {
      lose(lostReason());
    }
  }

  private String lostReason() {
    return "the RDMA connection to "
        + node
        + " at "
        + address
        + " is closed"
        + (lostBecause == null ? "" : ": " + lostBecause);
  }

  /** Posts {@code op}; returns the error instead of completing it, to run outside the lock. */
  @SuppressWarnings("JdkObsolete") // DiSNI's work requests take LinkedLists
  private EmberException post(Op op) {
    op.slot = free.poll();
    slots[op.slot] = op;
    try {
      ByteBuffer local;
      if (op.write) {
        ByteBuf src = op.source;
        if (src.isDirect() && src.nioBufferCount() == 1) {
          local = src.nioBuffer(src.readerIndex(), op.length);
        } else {
          op.staging = PooledByteBufAllocator.DEFAULT.directBuffer(op.length);
          op.staging.writeBytes(src, src.readerIndex(), op.length);
          local = op.staging.nioBuffer(0, op.length);
        }
      } else if (op.target.isDirect()) {
        local = op.target.duplicate();
      } else {
        op.staging = PooledByteBufAllocator.DEFAULT.directBuffer(op.length);
        local = op.staging.nioBuffer(0, op.length);
      }
      op.mr = Verbs.register(pd, local, IbvMr.IBV_ACCESS_LOCAL_WRITE);
      List<IbvSendWR> wrs = new ArrayList<>(2);
      IbvSendWR data = new IbvSendWR();
      data.setWr_id(op.slot);
      data.setSg_list(sgl(op.mr.getAddr(), op.length, op.mr.getLkey()));
      data.setOpcode(op.write ? IbvSendWR.IBV_WR_RDMA_WRITE : IbvSendWR.IBV_WR_RDMA_READ);
      // A write completes with its notice, which the connection delivers after it.
      data.setSend_flags(op.write ? 0 : IbvSendWR.IBV_SEND_SIGNALED);
      data.getRdma().setRemote_addr(op.remoteAddress);
      data.getRdma().setRkey(op.rkey);
      wrs.add(data);
      if (op.write) {
        int off = op.slot * NOTICE_SLOT;
        notices
            .putLong(off, op.notice[0])
            .putLong(off + 8, op.notice[1])
            .putLong(off + 16, op.notice[2])
            .putLong(off + 24, op.notice[3])
            .putInt(off + 32, op.length);
        IbvSendWR send = new IbvSendWR();
        send.setWr_id(NOTICE_TAG | op.slot);
        send.setSg_list(sgl(noticesMr.getAddr() + off, NOTICE_BYTES, noticesMr.getLkey()));
        send.setOpcode(IbvSendWR.IBV_WR_SEND);
        send.setSend_flags(IbvSendWR.IBV_SEND_SIGNALED);
        wrs.add(send);
      }
      SVCPostSend call = id.getQp().postSend(wrs, null);
      try {
        call.execute();
      } catch (IOException | RuntimeException e) {
        // Part of it may be on the queue: the slot stays taken, and the connection ends.
        op.finished = true;
        running = false;
        if (lostBecause == null) {
          lostBecause = "posting work failed: " + e.getMessage();
        }
        return new Flushed(
            op.what.get() + " could not be posted to " + node + ": " + e.getMessage());
      } finally {
        call.free();
      }
      return null;
    } catch (IOException | RuntimeException e) {
      release(op);
      return new EmberException(
          ErrorCode.CONNECTION_CLOSED,
          op.what.get() + " could not be posted to " + node + ": " + e.getMessage(),
          e);
    }
  }

  @SuppressWarnings({"JdkObsolete", "NonApiType"}) // what DiSNI's work requests take
  private static LinkedList<IbvSge> sgl(long addr, int length, int lkey) {
    IbvSge sge = new IbvSge();
    sge.setAddr(addr);
    sge.setLength(length);
    sge.setLkey(lkey);
    LinkedList<IbvSge> list = new LinkedList<>();
    list.add(sge);
    return list;
  }

  /** Frees {@code op}'s slot and registration; under the lock. */
  private void release(Op op) {
    if (op.mr != null) {
      Verbs.deregister(op.mr);
      op.mr = null;
    }
    if (op.slot >= 0 && slots[op.slot] == op) {
      slots[op.slot] = null;
      free.add(op.slot);
    }
  }

  private void reap() {
    long nextTick = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
    try (CompletionPoller poller = new CompletionPoller(cq, compChannel, 32)) {
      while (running) {
        int n = poller.next(100);
        for (int i = 0; i < n; i++) {
          handle(poller.completion(i));
        }
        long now = System.nanoTime();
        if (now - nextTick > 0) {
          sweep(now);
          watchEvents();
          nextTick = now + TimeUnit.MILLISECONDS.toNanos(100);
        }
      }
    } catch (IOException | RuntimeException e) {
      lose("reading its completions failed: " + e);
    }
  }

  private void watchEvents() throws IOException {
    RdmaCmEvent ev = events.getCmEvent(0);
    if (ev == null) {
      return;
    }
    int type = ev.getEvent();
    ev.ackEvent();
    if (type == CmEvents.DISCONNECTED || type == CmEvents.DEVICE_REMOVAL) {
      lose("the data node " + (type == CmEvents.DISCONNECTED ? "disconnected" : "lost its device"));
    }
  }

  private void handle(IbvWC wc) {
    long wrId = wc.getWr_id();
    int status = wc.getStatus();
    Op op;
    boolean answered = false;
    // Made only when a waiting operation cannot be posted: not on every completion.
    List<Op> refused = null;
    List<EmberException> errors = null;
    synchronized (lock) {
      op = slots[(int) (wrId & 0xFFFF)];
      if (op == null) {
        return;
      }
      if (status == 0) {
        // A late completion of an operation that timed out frees its slot too.
        answered = !op.finished;
        op.finished = true;
        release(op);
        while (!free.isEmpty() && !waiting.isEmpty()) {
          Op w = waiting.poll();
          EmberException e = post(w);
          if (e != null) {
            if (refused == null) {
              refused = new ArrayList<>();
              errors = new ArrayList<>();
            }
            refused.add(w);
            errors.add(e);
          }
        }
      }
    }
    if (status == 0) {
      if (answered) {
        if (!op.write && op.staging != null) {
          op.staging.getBytes(0, op.target.duplicate());
        }
        complete(op, null);
      }
      for (int i = 0; refused != null && i < refused.size(); i++) {
        complete(refused.get(i), errors.get(i));
      }
      if (!running) {
        lose(lostReason());
      }
      return;
    }
    boolean mine;
    synchronized (lock) {
      mine = !op.finished;
      op.finished = true;
    }
    if (!mine) {
      lose("an operation completed with " + CmEvents.wcStatus(status));
      return;
    }
    if (status == CmEvents.WC_REMOTE_ACCESS_ERROR) {
      complete(
          op,
          new EmberException(
              ErrorCode.STALE_LOCATION,
              node
                  + " refused "
                  + op.what.get()
                  + " over RDMA: the block's key was dropped (the block went to another file, or"
                  + " the node's contents changed); ask the name node again"));
      lose("a refused key ends the connection (RDMA's rule)");
    } else {
      String why =
          status == CmEvents.WC_FLUSHED
              ? "an operation was flushed"
              : "an operation completed with " + CmEvents.wcStatus(status);
      complete(op, new Flushed(op.what.get() + " failed: " + why));
      lose(why);
    }
  }

  /**
   * Ends the connection because of {@code why}: operations not yet answered fail with {@link
   * Flushed}, which the tier posts again once on a new connection.
   */
  private void lose(String why) {
    List<Op> all = new ArrayList<>();
    boolean first;
    synchronized (lock) {
      first = !lossHandled;
      lossHandled = true;
      if (lostBecause == null) {
        lostBecause = why;
      }
      running = false;
      for (Op op : slots) {
        if (op != null && !op.finished) {
          op.finished = true;
          all.add(op);
        }
      }
      all.addAll(waiting);
      waiting.clear();
    }
    if (first) {
      // The queue pair goes to its error state: the device touches no buffer after this.
      disconnect();
    }
    synchronized (lock) {
      for (Op op : all) {
        if (op.mr != null) {
          Verbs.deregister(op.mr);
          op.mr = null;
        }
      }
    }
    if (!all.isEmpty()) {
      LOG.info(
          "RDMA connection to {} at {} lost ({}): {} operations fail",
          node,
          address,
          why,
          all.size());
    }
    for (Op op : all) {
      complete(op, new Flushed(op.what.get() + " failed: " + lostReason()));
    }
    if (first) {
      // Freed off the reaper, which close() waits for.
      Thread closer = new Thread(() -> close(why), "dram-rdma-close");
      closer.setDaemon(true);
      closer.start();
    }
  }

  private void disconnect() {
    if (id != null) {
      try {
        id.disconnect();
      } catch (IOException e) {
        LOG.debug("disconnecting from {} failed: {}", address, e.toString());
      }
    }
  }

  /**
   * Fails operations past their deadline, their buffers deregistered first so that the data node
   * can no longer reach memory the caller gets back; their slots stay taken until the connection
   * goes, since a late completion may still come.
   */
  private void sweep(long now) {
    List<Op> late = new ArrayList<>();
    boolean posted = false;
    synchronized (lock) {
      for (Op op : slots) {
        if (op != null && !op.finished && now - op.deadline > 0) {
          op.finished = true;
          if (op.mr != null) {
            Verbs.deregister(op.mr);
            op.mr = null;
          }
          late.add(op);
          posted = true;
        }
      }
      for (var it = waiting.iterator(); it.hasNext(); ) {
        Op op = it.next();
        if (now - op.deadline > 0) {
          it.remove();
          op.finished = true;
          late.add(op);
        }
      }
    }
    for (Op op : late) {
      complete(
          op,
          new EmberException(
              ErrorCode.TIMEOUT,
              op.what.get()
                  + " over RDMA got no completion from "
                  + node
                  + " at "
                  + address
                  + " within "
                  + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                  + " ms"));
    }
    if (posted) {
      // Its work request may wait forever (a receiver that is not ready is retried without end),
      // and everything behind it on the queue pair with it: the connection ends, and the other
      // operations go again once on a new one.
      lose("an operation got no completion in time");
    }
  }

  private static void complete(Op op, EmberException error) {
    if (op.staging != null) {
      op.staging.release();
      op.staging = null;
    }
    if (error == null) {
      op.done.complete(null);
    } else {
      op.done.completeExceptionally(error);
    }
  }

  /** Fails what is left, disconnects and frees every RDMA resource of the connection. */
  void close(String why) {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    lose(why);
    if (reaper != null && reaper != Thread.currentThread()) {
      try {
        reaper.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (lock) {
      for (Op op : slots) {
        if (op != null && op.mr != null) {
          Verbs.deregister(op.mr);
          op.mr = null;
        }
      }
    }
    Verbs.freeEach(
        "the RDMA connection to " + address,
        () -> {
          if (id != null && id.getQp() != null) {
            id.destroyQP();
          }
        },
        () -> {
          if (noticesMr != null) {
            Verbs.deregister(noticesMr);
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
        },
        () -> {
          if (events != null) {
            events.destroyEventChannel();
          }
        });
  }
}
