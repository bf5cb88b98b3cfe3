package io.ember.nvmf.tcp;

import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfTimeoutException;
import io.ember.nvmf.host.CommandQueue;
import io.ember.nvmf.host.ControllerSetup;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP queue pair of the host: one TCP connection. All protocol state lives on the
 * connection's event loop; public methods hop onto it, so they are safe from any thread.
 *
 * <p>Netty rather than plain NIO: it gives gather writes of header/data/digest buffers without
 * copying the caller's data, pooled header buffers, and the same pipeline model the embedded target
 * uses.
 */
final class TcpQueue extends CommandQueue {
  private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

  private final TcpController ctrl;
  private final int qid;
  private final String where;
  private final long timeoutNanos;

  /** The shortest timeout any command of this queue gets: how finely the sweeper must look. */
  private final long shortestTimeoutNanos;

  private Channel ch;
  private PduWriter out;
  private PduFrameDecoder decoder;
  private final CompletableFuture<Pdu.IcResp> icResp = new CompletableFuture<>();

  // Event-loop confined state.
  private final Cmd[] slots;
  private final int[] freeCids;
  private int freeCount;
  private final ArrayDeque<Cmd> waiting = new ArrayDeque<>();
  private int maxh2cdata;
  private int inCapsule;
  private volatile boolean closed;
  private NvmfException closeCause;
  private ScheduledFuture<?> sweeper;

  TcpQueue(TcpController ctrl, int qid, int size, long timeoutNanos) {
    this(ctrl, qid, size, timeoutNanos, timeoutNanos);
  }

  /**
   * @param shortestTimeoutNanos the shortest {@link Cmd#timeoutNanos} any command of this queue
   *     will have
   */
  TcpQueue(TcpController ctrl, int qid, int size, long timeoutNanos, long shortestTimeoutNanos) {
    super(ctrl);
    this.ctrl = ctrl;
    this.qid = qid;
    this.timeoutNanos = timeoutNanos;
    this.shortestTimeoutNanos = Math.min(timeoutNanos, shortestTimeoutNanos);
    this.where = ctrl.uri().host() + ":" + ctrl.uri().port() + " qid " + qid;
    // One entry is never used: with SQ flow control a full ring is indistinguishable from an empty
    // one.
    this.slots = new Cmd[size - 1];
    this.freeCids = new int[size - 1];
    for (int i = 0; i < freeCids.length; i++) {
      freeCids[i] = freeCids.length - 1 - i;
    }
    this.freeCount = freeCids.length;
  }

  /** Connects TCP and exchanges ICReq/ICResp. Blocks up to {@code timeoutMs}. */
  void open(EventLoopGroup group, boolean hdgst, boolean ddgst, int maxC2HData, long timeoutMs)
      throws NvmfException {
    Bootstrap b =
        new Bootstrap()
            .group(group)
            .channel(Transports.socketChannel())
            .option(ChannelOption.TCP_NODELAY, true)
            .option(
                ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeoutMs))
            .handler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel c) {
                    decoder = new PduFrameDecoder(false, 0, maxC2HData);
                    c.pipeline().addLast("pdu", decoder).addLast("host", new Handler());
                  }
                });
    ChannelFuture cf = b.connect(new InetSocketAddress(ctrl.uri().host(), ctrl.uri().port()));
    if (!cf.awaitUninterruptibly(timeoutMs, TimeUnit.MILLISECONDS) || !cf.isSuccess()) {
      cf.channel().close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
      throw new NvmfException(
          "cannot connect to "
              + where
              + ": "
              + (cf.cause() == null
                  ? "timed out after " + timeoutMs + " ms"
                  : cf.cause().getMessage())
              + "; is the target listening?",
          cf.cause());
    }
    ch = cf.channel();
    out = new PduWriter(ch);
    batcher = new FlushBatcher(ch, out::flush);
    ch.eventLoop()
        .execute(
            () -> {
              out.icReq(0, hdgst, ddgst, 0);
              out.flush();
            });
    Pdu.IcResp r = ControllerSetup.await(icResp, timeoutMs, "ICResp from " + where);
    if (r.pfv() != 0) {
      throw fatalSetup(
          "target answered ICReq with PDU format version " + r.pfv() + ", only 0 is known");
    }
    if (r.maxh2cdata() < 4096 || r.maxh2cdata() % 4 != 0) {
      throw fatalSetup(
          "target's MAXH2CDATA " + r.maxh2cdata() + " is below 4096 or not a dword multiple");
    }
    if ((r.hdgst() && !hdgst) || (r.ddgst() && !ddgst)) {
      throw fatalSetup("target enabled a digest the host did not ask for");
    }
    if ((hdgst && !r.hdgst()) || (ddgst && !r.ddgst())) {
      throw fatalSetup(
          "target refused the requested " + (hdgst && !r.hdgst() ? "header" : "data") + " digest");
    }
    if (r.cpda() > 31) {
      throw fatalSetup("target's CPDA " + r.cpda() + " is out of range");
    }
    long sweepMs =
        Math.max(10, Math.min(1000, TimeUnit.NANOSECONDS.toMillis(shortestTimeoutNanos) / 4));
    ch.eventLoop()
        .submit(
            () -> {
              maxh2cdata = r.maxh2cdata();
              out.negotiated(r.hdgst(), r.ddgst(), r.cpda());
              sweeper =
                  ch.eventLoop()
                      .scheduleAtFixedRate(this::sweep, sweepMs, sweepMs, TimeUnit.MILLISECONDS);
            })
        .syncUninterruptibly();
  }

  private NvmfException fatalSetup(String msg) {
    ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    return new NvmfException(msg + " (" + where + ")");
  }

  /** Sets how much write data may travel in the command capsule (from IOCCSZ). */
  void inCapsuleLimit(int bytes) {
    ch.eventLoop().execute(() -> inCapsule = bytes);
  }

  @Override
  public int qid() {
    return qid;
  }

  @Override
  public int depth() {
    return slots.length;
  }

  /** The loop that owns this queue's socket; valid once {@link #open} returned. */
  EventLoop eventLoop() {
    return ch.eventLoop();
  }

  String where() {
    return where;
  }

  // ----------------------------------------------------------------------------------------------
  // commands

  /** A command in flight or waiting for a free command id. */
  static class Cmd {
    final Sqe sqe;
    final ByteBuffer buf;
    final boolean dataOut;
    final boolean forceInCapsule;
    final NvmfCallback cb;

    /** How long this command may take; 0: the queue's command timeout. */
    long timeoutNanos;

    long deadline;
    int cid = -1;
    int received;
    boolean inCapsuleSent;

    /** Some of the caller's data was handed to the channel (in the capsule or as H2CData). */
    boolean dataSent;

    boolean timedOut;

    /**
     * What a timed-out write carried, for an R2T that comes after the caller got its buffer back.
     */
    ByteBuffer lateData;

    boolean digestError;
    Cqe cqe;

    Cmd(Sqe sqe, ByteBuffer buf, boolean dataOut, boolean forceInCapsule, NvmfCallback cb) {
      this.sqe = sqe;
      this.buf = buf;
      this.dataOut = dataOut;
      this.forceInCapsule = forceInCapsule;
      this.cb = cb;
    }

    int length() {
      return buf == null ? 0 : buf.remaining();
    }

    boolean admin;

    String describe() {
      return ControllerSetup.describe(sqe, admin);
    }
  }

  /** Submits a command; {@code buf} (may be null) is already sliced to the transfer. */
  void submit(Cmd c) {
    c.admin = qid == 0;
    c.deadline = System.nanoTime() + timeout(c);
    if (ch.eventLoop().inEventLoop()) {
      submit0(c);
    } else {
      try {
        ch.eventLoop().execute(() -> submit0(c));
      } catch (java.util.concurrent.RejectedExecutionException e) {
        c.cb.complete(
            new NvmfException(
                c.describe() + " not sent: the controller at " + where + " was closed"));
      }
    }
  }

  private void submit0(Cmd c) {
    if (closed) {
      c.cb.complete(new NvmfException(c.describe() + " not sent: " + closeCause.getMessage()));
      return;
    }
    if (freeCount == 0) {
      waiting.add(c);
      return;
    }
    send(c);
    batcher.flushSoon();
  }

  /**
   * Flushes every few commands of a read batch, or once per burst of submissions (see
   * FlushBatcher).
   */
  private FlushBatcher batcher;

  private void send(Cmd c) {
    int cid = freeCids[--freeCount];
    c.cid = cid;
    slots[cid] = c;
    c.sqe.cid(cid).flags(Nvme.PSDT_SGL);
    int len = c.length();
    if (c.dataOut && len > 0 && (len <= inCapsule || c.forceInCapsule)) {
      c.sqe.sgl(0, len, Nvme.SGL_INCAPSULE);
      c.inCapsuleSent = true;
      c.dataSent = true;
      out.capsuleCmd(c.sqe, Unpooled.wrappedBuffer(c.buf.duplicate()));
    } else {
      c.sqe.sgl(0, len, Nvme.SGL_TRANSPORT);
      out.capsuleCmd(c.sqe, null);
    }
  }

  private void finish(Cmd c, NvmfException err) {
    slots[c.cid] = null;
    freeCids[freeCount++] = c.cid;
    if (!c.timedOut) {
      c.cb.complete(err);
    }
    boolean sent = false;
    while (freeCount > 0 && !waiting.isEmpty() && !closed) {
      send(waiting.poll());
      sent = true;
    }
    if (sent) {
      batcher.flushSoon();
    }
  }

  /**
   * Fails the commands whose time is up, and only them: a timeout says nothing about the
   * connection, so the queue and the other commands on it go on. A timed-out command keeps its
   * command id until its late completion arrives (or the connection goes), so that completion can
   * never be taken for a newer command's; {@link #onData} and {@link #onResp} then drop it without
   * touching the caller's buffer.
   */
  private void sweep() {
    long now = System.nanoTime();
    // Data goes out as views of the caller's memory, which the caller may reuse once told of the
    // timeout: while any of it may still sit in the channel's outbound buffer, the only safe end
    // is to close the connection (which drops it unsent) before the caller hears of anything.
    ChannelOutboundBuffer outbound = ch.unsafe().outboundBuffer();
    if (outbound != null && outbound.totalPendingWriteBytes() > 0) {
      for (Cmd c : slots) {
        if (c != null && !c.timedOut && now - c.deadline > 0 && c.dataSent) {
          fail(
              new NvmfException(
                  c.describe()
                      + " on "
                      + where
                      + " got no completion within "
                      + TimeUnit.NANOSECONDS.toMillis(timeout(c))
                      + " ms with its data still queued to the target: the connection closes so"
                      + " that data can never be sent late"));
          return;
        }
      }
    }
    for (Cmd c : slots) {
      if (c != null && !c.timedOut && now - c.deadline > 0) {
        c.timedOut = true;
        if (c.dataOut && !c.inCapsuleSent && c.length() > 0) {
          // The target may still fetch the data and write it. Zeroes, or what the caller puts in
          // its
          // buffer after hearing of the timeout, would land on blocks it never meant to write.
          c.lateData = ByteBuffer.allocate(c.length()).put(c.buf.duplicate()).flip();
        }
        c.cb.complete(
            new NvmfTimeoutException(
                c.describe()
                    + " on "
                    + where
                    + " got no completion within "
                    + TimeUnit.NANOSECONDS.toMillis(timeout(c))
                    + " ms"));
      }
    }
    if (freeCount == 0 && everySlotLongUnanswered(now)) {
      // Timed-out commands keep their ids until answered; a target that answers none of them
      // for two more timeouts (while it still answers Keep Alive) would leave this queue unable
      // to send anything, ever.
      fail(
          new NvmfException(
              "every command id of "
                  + where
                  + " is held by a command the target never answered: closing the connection"));
      return;
    }
    // Not in deadline order when some commands have their own timeout: look at every one.
    for (Iterator<Cmd> it = waiting.iterator(); it.hasNext(); ) {
      Cmd c = it.next();
      if (now - c.deadline > 0) {
        it.remove();
        c.cb.complete(
            new NvmfTimeoutException(
                c.describe()
                    + " on "
                    + where
                    + " waited "
                    + TimeUnit.NANOSECONDS.toMillis(timeout(c))
                    + " ms for a free queue slot"));
      }
    }
  }

  private boolean everySlotLongUnanswered(long now) {
    for (Cmd c : slots) {
      if (c == null || !c.timedOut || now - c.deadline - 2 * timeout(c) < 0) {
        return false;
      }
    }
    return true;
  }

  private long timeout(Cmd c) {
    return c.timeoutNanos > 0 ? c.timeoutNanos : timeoutNanos;
  }

  /** Fails everything and closes the connection. Idempotent. */
  void fail(NvmfException cause) {
    if (ch == null) {
      // Not connected yet (the controller was lost while its I/O queues connected): nothing is
      // in flight, and the queue must not start.
      closed = true;
      closeCause = cause;
      return;
    }
    if (!ch.eventLoop().inEventLoop()) {
      ch.eventLoop().execute(() -> fail(cause));
      return;
    }
    if (closed) {
      return;
    }
    closed = true;
    closeCause = cause;
    if (sweeper != null) {
      sweeper.cancel(false);
    }
    for (int i = 0; i < slots.length; i++) {
      Cmd c = slots[i];
      if (c != null) {
        slots[i] = null;
        if (!c.timedOut) {
          c.cb.complete(new NvmfException(c.describe() + " failed: " + cause.getMessage(), cause));
        }
      }
    }
    Cmd c;
    while ((c = waiting.poll()) != null) {
      c.cb.complete(new NvmfException(c.describe() + " not sent: " + cause.getMessage(), cause));
    }
    ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
  }

  /** True while this queue's connection is up. */
  boolean isActive() {
    Channel c = ch;
    return c != null && c.isActive();
  }

  /** Closes the connection; outstanding commands fail with {@code reason}. */
  void close(String reason) {
    if (ch != null) {
      fail(new NvmfException(reason + " (" + where + ")"));
      ch.closeFuture().awaitUninterruptibly(1000);
    }
  }

  // ------------------------------------------------------------------------------------------
  // public I/O

  @Override
  protected void submitCommand(Sqe sqe, ByteBuffer data, boolean dataOut, NvmfCallback cb) {
    submit(new Cmd(sqe, data, dataOut, false, cb));
  }

  // ------------------------------------------------------------------------------------------
  // receiving

  private final class Handler extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      Pdu pdu = (Pdu) msg;
      batcher.readBatchStarts();
      try {
        if (pdu instanceof Pdu.CapsuleResp r) {
          onResp(r.cqe());
        } else if (pdu instanceof Pdu.C2HData d) {
          onData(d);
        } else if (pdu instanceof Pdu.R2T r) {
          onR2T(r);
        } else if (pdu instanceof Pdu.IcResp r) {
          // Before any further PDU is decoded: the next one may already carry digests.
          decoder.digests(r.hdgst(), r.ddgst());
          icResp.complete(r);
        } else if (pdu instanceof Pdu.TermReq t) {
          NvmfException e =
              new NvmfException(
                  String.format(
                      "target %s terminated the connection: C2HTermReq %s (FES 0x%x, FEI 0x%x)",
                      where, Pdu.fesName(t.fes()), t.fes(), t.fei()));
          icResp.completeExceptionally(e);
          fail(e);
        }
      } finally {
        pdu.release();
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      batcher.readBatchEnds();
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (out != null) {
        out.discard();
      }
      NvmfException e = new NvmfException("connection to " + where + " closed by the target");
      icResp.completeExceptionally(e);
      fail(e);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      Throwable c =
          cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
      if (c instanceof PduException p) {
        protocolError(p);
        return;
      }
      if (!(c instanceof IOException)) {
        LOG.warn("unexpected error on {}", where, c);
      }
      NvmfException e =
          new NvmfException("connection to " + where + " failed: " + c.getMessage(), c);
      icResp.completeExceptionally(e);
      fail(e);
    }
  }

  /** The target broke the protocol: tell it with H2CTermReq, then fail everything. */
  private void protocolError(PduException p) {
    NvmfException e =
        new NvmfException("protocol error from target " + where + ": " + p.getMessage());
    if (!closed) {
      out.termReq(Pdu.T_H2C_TERM, p.fes(), p.fei(), p.header());
      out.flush();
    }
    icResp.completeExceptionally(e);
    fail(e);
  }

  private Cmd lookup(int cid, String what) {
    Cmd c = cid < slots.length ? slots[cid] : null;
    if (c == null) {
      byte[] none = new byte[0];
      protocolError(
          new PduException(
              Pdu.FES_INVALID_HEADER_FIELD,
              8,
              what + " for command id " + cid + ", which is not outstanding",
              none));
    }
    return c;
  }

  private void onResp(Cqe cqe) {
    Cmd c = lookup(cqe.cid(), "response capsule");
    if (c == null) {
      return;
    }
    c.cqe = cqe;
    NvmfException err = null;
    if (cqe.status() != 0) {
      err =
          new NvmeStatusException(
              c.describe(),
              cqe.status(),
              c.sqe.opcode() == Nvme.FABRICS && c.sqe.fctype() == Nvme.FCTYPE_CONNECT);
    } else if (c.digestError) {
      err = new NvmfException(c.describe() + ": data digest mismatch in C2HData from " + where);
    } else if (!c.dataOut && c.length() > 0 && c.received != c.length()) {
      err =
          new NvmfException(
              c.describe()
                  + ": target completed it after sending "
                  + c.received
                  + " of "
                  + c.length()
                  + " bytes");
    }
    finish(c, err);
  }

  private void onData(Pdu.C2HData d) {
    Cmd c = lookup(d.cccid(), "C2HData");
    if (c == null) {
      return;
    }
    long end = (long) d.datao() + d.datal();
    if (c.dataOut || end > c.length()) {
      protocolError(
          new PduException(
              Pdu.FES_DATA_OUT_OF_RANGE,
              12,
              String.format(
                  "C2HData bytes %d..%d for command id %d, which transfers %d bytes %s",
                  d.datao(),
                  end,
                  c.cid,
                  c.length(),
                  c.dataOut ? "to the target" : "from the target"),
              new byte[0]));
      return;
    }
    if (!d.dataDigestOk()) {
      c.digestError = true;
    } else if (!c.timedOut) {
      ByteBuffer dst = c.buf.duplicate();
      dst.position(dst.position() + d.datao()).limit(dst.position() + d.datal());
      d.data().getBytes(d.data().readerIndex(), dst);
    }
    c.received += d.datal();
    if (d.success()) {
      if (!d.last()) {
        protocolError(
            new PduException(
                Pdu.FES_INVALID_HEADER_FIELD,
                1,
                "C2HData with SUCCESS but without LAST_PDU",
                new byte[0]));
        return;
      }
      NvmfException err = null;
      if (c.digestError) {
        err = new NvmfException(c.describe() + ": data digest mismatch in C2HData from " + where);
      } else if (c.received != c.length()) {
        err =
            new NvmfException(
                c.describe()
                    + ": target reported success after "
                    + c.received
                    + " of "
                    + c.length()
                    + " bytes");
      }
      finish(c, err);
    }
  }

  private void onR2T(Pdu.R2T r) {
    Cmd c = lookup(r.cccid(), "R2T");
    if (c == null) {
      return;
    }
    long end = (long) r.r2to() + r.r2tl();
    if (!c.dataOut || c.inCapsuleSent || end > c.length()) {
      protocolError(
          new PduException(
              Pdu.FES_DATA_OUT_OF_RANGE,
              12,
              String.format(
                  "R2T for bytes %d..%d of command id %d, which has %d bytes to send%s",
                  r.r2to(),
                  end,
                  c.cid,
                  c.dataOut ? c.length() : 0,
                  c.inCapsuleSent ? " and sent them in the capsule" : ""),
              new byte[0]));
      return;
    }
    for (int off = r.r2to(); off < end; ) {
      int n = (int) Math.min(maxh2cdata, end - off);
      // A timed-out command's caller may already reuse its buffer: send the copy taken at the
      // timeout.
      ByteBuffer src = c.timedOut ? c.lateData : c.buf;
      c.dataSent |= !c.timedOut;
      ByteBuf data = Unpooled.wrappedBuffer(src.slice(src.position() + off, n));
      out.h2cData(c.cid, r.ttag(), off, data, off + n == end);
      off += n;
    }
    batcher.flushSoon();
  }
}
