package io.ember.nvmf.target;

import io.ember.nvmf.auth.DhchapController;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.tcp.ChannelListeners;
import io.ember.nvmf.tcp.FlushBatcher;
import io.ember.nvmf.tcp.Pdu;
import io.ember.nvmf.tcp.PduException;
import io.ember.nvmf.tcp.PduFrameDecoder;
import io.ember.nvmf.tcp.PduWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP connection (one queue pair) of the embedded target. All state is confined to the
 * channel's event loop; blocking namespace I/O runs on the target's worker pool and hops back to
 * send the answer.
 */
final class TargetConnection extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(TargetConnection.class);

  /**
   * In-capsule data accepted on the admin queue (Linux hosts assume 8 KiB: NVME_TCP_ADMIN_CCSZ).
   */
  private static final int ADMIN_IN_CAPSULE = 8192;

  /**
   * An R2T for at least this many bytes is flushed at once; smaller ones go with the batch's other
   * PDUs. The host sends a write's data only once its R2T arrives, and a read batch busy landing
   * the data of earlier large writes held the next R2T back while the host sat idle (128 KiB writes
   * at QD8 ran 5-10% faster when it went at once). For small writes the syscall is the larger cost:
   * 4 KiB writes by R2T at QD32 ran at half the rate with an R2T flushed at once.
   */
  static final int R2T_AT_ONCE_BYTES = 32 << 10;

  private static final int MAX_AERS = 4;

  /**
   * The largest AUTH_Send or AUTH_Receive: a Negotiate listing 255 protocols (8 + 64 * 255 bytes);
   * a DH-HMAC-CHAP reply in ffdhe8192 is 1168.
   */
  private static final int MAX_AUTH_LENGTH = 16384;

  private final NvmfTarget t;
  private final Channel ch;
  private final PduFrameDecoder decoder;
  private final PduWriter out;
  private final IntObjectHashMap<Pending> pending = new IntObjectHashMap<>();

  /**
   * Data digests were negotiated: a write's data is then checked whole before any of it reaches the
   * namespace, so it neither lands from the socket nor is placed PDU by PDU.
   */
  private boolean dataDigests;

  /** I/O commands received and not yet answered, by command id: for the controller's stats. */
  private final IntObjectHashMap<Timing> timings = new IntObjectHashMap<>();

  private TargetController ctrl;
  private int qid = -1;
  private int sqsize = 1;
  private int sqhd;
  private boolean sqFlowOff;
  private int inCapsuleMax = ADMIN_IN_CAPSULE;
  private int aers;
  private boolean dead;
  private ScheduledFuture<?> kaTimer;

  /** In-band authentication of this queue, or null when its host need not authenticate. */
  private DhchapController auth;

  private ScheduledFuture<?> authTimer;

  /** An authentication step is running off the event loop; the next waits for its answer. */
  private boolean authBusy;

  private TargetConnection(NvmfTarget t, Channel ch, PduFrameDecoder decoder) {
    this.t = t;
    this.ch = ch;
    this.decoder = decoder;
    this.out = new PduWriter(ch);
    this.batcher = new FlushBatcher(ch, out::flush);
  }

  /** Serves the connection {@code ch} (a socket's, or a test's channel that stands for one). */
  static void install(NvmfTarget t, Channel ch) {
    PduFrameDecoder d = new PduFrameDecoder(true, ADMIN_IN_CAPSULE, t.maxH2CData);
    TargetConnection c = new TargetConnection(t, ch, d);
    d.landData(ch, c::landingFor);
    ch.pipeline().addLast("pdu", d).addLast("target", c);
  }

  /**
   * Where the data of an H2CData PDU may land straight from the socket: the namespace memory of the
   * write it answers, where the namespace keeps its bytes in memory. Everything {@link #onData}
   * checks is checked here first, so a PDU whose data landed is one it accepts.
   */
  private ByteBuffer landingFor(int cccid, int ttag, int datao, int datal, boolean last) {
    Pending p = pending.get(ttag);
    if (dead
        || p == null
        || p.landing == null
        || p.failure != null
        || p.cid != cccid
        || datao != p.received
        || (long) datao + datal > p.len
        || last != p.endsAt(datao, datal)
        || datal > t.maxH2CData) {
      return null;
    }
    ByteBuffer memory = p.landing.ns().window(p.landing.offset() + datao, datal);
    if (memory == null) {
      return null;
    }
    if (!memory.isDirect() || memory.position() != 0 || memory.remaining() != datal) {
      // A socket reads only into direct memory, and into exactly the data's bytes.
      throw new IllegalStateException(
          "namespace window for "
              + datal
              + " bytes is "
              + memory
              + ", not a direct buffer of them");
    }
    p.landingNow = true;
    t.landed.add(datal);
    return memory;
  }

  /** Receives the data of a host-to-controller transfer; owns (must release) {@code data}. */
  private interface DataAction {
    void run(ByteBuf data);
  }

  /**
   * Where a write's data goes, PDU by PDU as it arrives (straight from the socket where the
   * namespace allows), and what completes the write once all of it is there.
   */
  private record Landing(Namespace ns, long offset, Runnable whenLanded) {}

  /** A command waiting for H2CData after our R2T. */
  private static final class Pending {
    final int cid;
    final int len;
    final DataAction action;

    /** Null where the data cannot land straight from the socket. */
    final Landing landing;

    /** The H2CData PDU now arriving lands in {@link #landing}'s memory straight from the socket. */
    boolean landingNow;

    /** Why placing an earlier PDU's data failed; the write then ends with a media error. */
    Exception failure;

    /**
     * Gathers the data when it comes in more than one PDU; null until then, because a transfer that
     * fits one PDU (the host's usual way, up to MAXH2CDATA) is handed on as the PDU's own slice.
     */
    ByteBuf buf;

    int received;
    boolean digestError;

    Pending(int cid, int len, DataAction action, Landing landing) {
      this.cid = cid;
      this.len = len;
      this.action = action;
      this.landing = landing;
    }

    /** Whether data at {@code datao} of {@code datal} bytes ends the transfer (LAST_PDU's due). */
    boolean endsAt(int datao, int datal) {
      return (long) datao + datal == len;
    }
  }

  /** When an I/O command arrived, what it was and how many bytes it moves. */
  private record Timing(int opcode, long bytes, long startNanos) {}

  /** A namespace operation that may block. */
  private interface IoTask {
    void run() throws IOException;
  }

  // -----------------------------------------------------------------------------------------
  // pipeline

  /**
   * Flushes every few answers of a read batch, or once per burst of answers completed elsewhere;
   * the R2T of a large write at once (see {@link #R2T_AT_ONCE_BYTES} and FlushBatcher).
   */
  private final FlushBatcher batcher;

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Pdu pdu = (Pdu) msg;
    batcher.readBatchStarts();
    try {
      if (dead) {
        return;
      }
      if (pdu instanceof Pdu.CapsuleCmd c) {
        onCommand(c);
      } else if (pdu instanceof Pdu.H2CData d) {
        onData(d);
      } else if (pdu instanceof Pdu.IcReq r) {
        onIcReq(r);
      } else if (pdu instanceof Pdu.TermReq tr) {
        LOG.info(
            "host {} terminated the connection: H2CTermReq {} (FES 0x{}, FEI 0x{})",
            ch.remoteAddress(),
            Pdu.fesName(tr.fes()),
            Integer.toHexString(tr.fes()),
            Integer.toHexString(tr.fei()));
        dead = true;
        ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
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
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    Throwable c =
        cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
    if (c instanceof PduException p) {
      fatal(p.fes(), p.fei(), p.getMessage(), p.header());
    } else if (c instanceof IOException) {
      LOG.debug("connection from {} failed: {}", ch.remoteAddress(), c.toString());
      ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    } else {
      LOG.warn("closing connection from {} after an unexpected error", ch.remoteAddress(), c);
      ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    dead = true;
    out.discard();
    for (Pending p : pending.values()) {
      if (p.buf != null) {
        p.buf.release();
      }
    }
    pending.clear();
    if (ctrl != null) {
      ctrl.counters.outstanding.add(-timings.size());
    }
    timings.clear();
    if (kaTimer != null) {
      kaTimer.cancel(false);
    }
    if (authTimer != null) {
      authTimer.cancel(false);
    }
    TargetController c = ctrl;
    if (c != null) {
      c.queues.remove(qid, ch);
      if (qid == 0) {
        t.controllers.remove(c.cntlid, c);
        c.teardown();
      }
    }
  }

  /** Fatal transport error: C2HTermReq, then close once it is on the wire. */
  private void fatal(int fes, int fei, String msg, byte[] header) {
    if (dead) {
      return;
    }
    dead = true;
    LOG.info("terminating connection from {}: {}", ch.remoteAddress(), msg);
    out.termReq(Pdu.T_C2H_TERM, fes, fei, header);
    decoder.discardInput();
    out.flushThenClose();
  }

  private void onIcReq(Pdu.IcReq r) {
    if (r.pfv() != 0) {
      fatal(
          Pdu.FES_UNSUPPORTED_PARAMETER,
          8,
          "ICReq with PDU format version " + r.pfv(),
          new byte[0]);
      return;
    }
    if (r.hpda() > 31) {
      fatal(Pdu.FES_UNSUPPORTED_PARAMETER, 10, "ICReq with HPDA " + r.hpda(), new byte[0]);
      return;
    }
    out.icResp(0, r.hdgst(), r.ddgst(), t.maxH2CData);
    out.flush();
    decoder.digests(r.hdgst(), r.ddgst());
    dataDigests = r.ddgst();
    out.negotiated(r.hdgst(), r.ddgst(), r.hpda());
  }

  // ------------------------------------------------------------------------------------------
  // responses

  private void respond(int cid, int status, int dw0, int dw1) {
    if (dead) {
      return;
    }
    completed(cid, status == 0);
    out.capsuleResp(new Cqe(dw0, dw1, sqhd, Math.max(qid, 0), cid, status));
    batcher.flushSoon();
  }

  private void ok(int cid) {
    respond(cid, 0, 0, 0);
  }

  private void fail(int cid, int sct, int sc) {
    respond(cid, Nvme.status(sct, sc, true), 0, 0);
  }

  private void fail(int cid, int sc) {
    fail(cid, Nvme.SCT_GENERIC, sc);
  }

  /**
   * Sends {@code data} (owned) as C2HData, then the response unless the SUCCESS flag stood in for
   * it.
   */
  private void sendData(Sqe s, ByteBuf data) {
    if (dead) {
      data.release();
      return;
    }
    int cid = s.cid();
    int len = (int) Math.min(data.readableBytes(), s.sglLength());
    boolean success = sqFlowOff && t.successFlag;
    try {
      for (int off = 0; off < len; ) {
        int n = Math.min(t.c2hChunk, len - off);
        boolean last = off + n == len;
        out.c2hData(
            cid, off, data.retainedSlice(data.readerIndex() + off, n), last, last && success);
        off += n;
      }
    } finally {
      data.release();
    }
    if (len == 0 || !success) {
      ok(cid);
    } else {
      completed(cid, true);
      batcher.flushSoon();
    }
  }

  /** Counts an I/O command answered now, if it is one. */
  private void completed(int cid, boolean ok) {
    if (qid <= 0 || !t.countCommands) {
      return;
    }
    Timing timing = timings.remove(cid);
    if (timing != null) {
      ctrl.counters.outstanding.decrement();
      ctrl.counters.completed(
          timing.opcode(), timing.bytes(), System.nanoTime() - timing.startNanos(), ok);
    }
  }

  private void sendData(Sqe s, byte[] data) {
    sendData(s, Unpooled.wrappedBuffer(data));
  }

  /**
   * Runs {@code task} where the namespace allows, then answers success or the given media error. An
   * unchecked exception from a namespace is a bug, but the command still gets an answer (Internal
   * Error): a host waits for every command it sent.
   */
  private void runIo(Namespace ns, int cid, int failSc, IoTask task) {
    runIo(ns, cid, failSc, 0, task);
  }

  /**
   * Most bytes a Write Zeroes or a deallocation may cover and still run on the network thread of a
   * namespace that does not block. A memory namespace zeroes what it held, at memory speed: cheap
   * for a block, but a whole-device discard of a written namespace stalled the thread, and every
   * command and keep-alive of its connections, for seconds.
   */
  static final long ZEROING_ON_LOOP_BYTES = 8L << 20;

  /** As above, for a command that zeroes up to {@code zeroedBytes}. */
  private void runIo(Namespace ns, int cid, int failSc, long zeroedBytes, IoTask task) {
    if (!ns.blocking() && zeroedBytes <= ZEROING_ON_LOOP_BYTES) {
      try {
        task.run();
        ok(cid);
      } catch (IOException e) {
        LOG.warn("namespace I/O failed: {}", e.toString());
        fail(cid, Nvme.SCT_MEDIA, failSc);
      } catch (RuntimeException e) {
        LOG.warn("namespace I/O failed unexpectedly", e);
        fail(cid, Nvme.SC_INTERNAL);
      }
      return;
    }
    try {
      t.blockingIo.execute(
          () -> {
            int st = 0;
            try {
              task.run();
            } catch (IOException e) {
              LOG.warn("namespace I/O failed: {}", e.toString());
              st = Nvme.status(Nvme.SCT_MEDIA, failSc, true);
            } catch (RuntimeException e) {
              LOG.warn("namespace I/O failed unexpectedly", e);
              st = Nvme.status(Nvme.SCT_GENERIC, Nvme.SC_INTERNAL, true);
            }
            int status = st;
            try {
              ch.eventLoop().execute(() -> respond(cid, status, 0, 0));
            } catch (RejectedExecutionException e) {
              LOG.debug("target stopped before command {} completed", cid);
            }
          });
    } catch (RejectedExecutionException e) {
      fail(cid, Nvme.SC_INTERNAL);
    }
  }

  /**
   * Gets the host-to-controller data of {@code s}: from the capsule (SGL Data Block, Offset) or by
   * R2T (Transport SGL Data Block), then hands it to {@code action}.
   */
  private void withData(Sqe s, ByteBuf capsuleData, DataAction action) {
    withData(s, capsuleData, action, null);
  }

  /**
   * As above; with a {@code landing}, data sent by R2T is placed in its namespace PDU by PDU (see
   * {@link #placeData}) instead of reaching {@code action}.
   */
  private void withData(Sqe s, ByteBuf capsuleData, DataAction action, Landing landing) {
    int cid = s.cid();
    long len = s.sglLength();
    int id = s.sglId();
    if (id == Nvme.SGL_INCAPSULE) {
      int have = capsuleData == null ? 0 : capsuleData.readableBytes();
      if (s.sglAddress() != 0) {
        fail(cid, Nvme.SC_SGL_INVALID_OFFSET);
      } else if (len > have || len > inCapsuleMax) {
        fail(cid, Nvme.SC_SGL_INVALID_DATA);
      } else {
        action.run(capsuleData.retainedSlice(capsuleData.readerIndex(), (int) len));
      }
    } else if (id == Nvme.SGL_TRANSPORT) {
      if (len == 0) {
        action.run(Unpooled.EMPTY_BUFFER);
        return;
      }
      if (pending.containsKey(cid)) {
        fail(cid, Nvme.SC_INVALID_FIELD);
        return;
      }
      Pending p = new Pending(cid, (int) len, action, landing);
      pending.put(cid, p);
      out.r2t(cid, cid, 0, (int) len);
      if (len >= R2T_AT_ONCE_BYTES) {
        batcher.flushNow();
      } else {
        batcher.flushSoon();
      }
    } else {
      fail(cid, Nvme.SC_SGL_INVALID_TYPE);
    }
  }

  private void onData(Pdu.H2CData d) {
    Pending p = pending.get(d.ttag());
    if (p == null) {
      fatal(
          Pdu.FES_INVALID_HEADER_FIELD,
          10,
          "H2CData with transfer tag " + d.ttag() + ", which names no outstanding R2T",
          new byte[0]);
      return;
    }
    if (d.cccid() != p.cid) {
      fatal(
          Pdu.FES_INVALID_HEADER_FIELD,
          8,
          "H2CData CCCID "
              + d.cccid()
              + " does not match transfer tag "
              + d.ttag()
              + " of command "
              + p.cid,
          new byte[0]);
      return;
    }
    if (d.datal() > t.maxH2CData) {
      fatal(
          Pdu.FES_DATA_LIMIT_EXCEEDED,
          16,
          "H2CData of " + d.datal() + " bytes exceeds MAXH2CDATA " + t.maxH2CData,
          new byte[0]);
      return;
    }
    if (d.datao() != p.received || (long) d.datao() + d.datal() > p.len) {
      fatal(
          Pdu.FES_DATA_OUT_OF_RANGE,
          12,
          "H2CData bytes "
              + d.datao()
              + ".."
              + ((long) d.datao() + d.datal())
              + " but command "
              + p.cid
              + " expects byte "
              + p.received
              + " of "
              + p.len,
          new byte[0]);
      return;
    }
    if (d.last() != p.endsAt(d.datao(), d.datal())) {
      // A host that marks the wrong PDU last has lost track of the transfer; FreeBSD's target
      // refuses it the same way (Linux's and SPDK's hosts mark exactly the R2T's last PDU).
      fatal(
          Pdu.FES_PDU_SEQUENCE,
          0,
          "H2CData for bytes "
              + d.datao()
              + ".."
              + ((long) d.datao() + d.datal())
              + " of command "
              + p.cid
              + "'s "
              + p.len
              + (d.last()
                  ? " is marked LAST_PDU, but more must follow"
                  : " ends it without LAST_PDU"),
          new byte[0]);
      return;
    }
    if (p.landing != null) {
      placeData(p, d);
      return;
    }
    if (!d.dataDigestOk()) {
      p.digestError = true;
    }
    boolean whole = p.received == 0 && d.datal() == p.len;
    if (!whole) {
      if (p.buf == null) {
        p.buf = ch.alloc().directBuffer(p.len);
      }
      p.buf.writeBytes(d.data(), d.data().readerIndex(), d.datal());
    }
    p.received += d.datal();
    if (p.received == p.len) {
      pending.remove(d.ttag());
      if (p.digestError) {
        if (p.buf != null) {
          p.buf.release();
        }
        respond(p.cid, Nvme.status(Nvme.SCT_GENERIC, Nvme.SC_TRANSIENT_TRANSPORT, false), 0, 0);
      } else if (whole) {
        // Handed on without a copy into a buffer of our own: the action owns this reference.
        p.action.run(d.data().retainedSlice(d.data().readerIndex(), d.datal()));
      } else {
        p.action.run(p.buf);
      }
    }
  }

  /**
   * Puts a write's data in its namespace PDU by PDU, as it arrives: this PDU's landed there
   * straight from the socket (see {@link #landingFor}), or is copied there now. Writes get a
   * landing only on connections without data digests and for namespaces that do not block.
   */
  private void placeData(Pending p, Pdu.H2CData d) {
    if (p.landingNow) {
      p.landingNow = false;
    } else if (p.failure == null) {
      try {
        p.landing.ns().write(p.landing.offset() + d.datao(), d.data());
      } catch (IOException e) {
        p.failure = e;
      } catch (RuntimeException e) {
        LOG.warn("namespace I/O failed unexpectedly", e);
        p.failure = e;
      }
    }
    p.received += d.datal();
    if (p.received < p.len) {
      return;
    }
    pending.remove(p.cid);
    if (p.failure == null) {
      p.landing.whenLanded().run();
    } else if (p.failure instanceof IOException) {
      LOG.warn("namespace I/O failed: {}", p.failure.toString());
      fail(p.cid, Nvme.SCT_MEDIA, 0x80);
    } else {
      fail(p.cid, Nvme.SC_INTERNAL); // as runIo answers an unexpected failure
    }
  }

  // -------------------------------------------------------------------------------------------
  // commands

  private void onCommand(Pdu.CapsuleCmd c) {
    Sqe s = c.sqe();
    int cid = s.cid();
    sqhd = (sqhd + 1) % sqsize;
    if (!c.dataDigestOk()) {
      // The command itself arrived intact (header digest passed); only its data is suspect.
      respond(cid, Nvme.status(Nvme.SCT_GENERIC, Nvme.SC_TRANSIENT_TRANSPORT, false), 0, 0);
      return;
    }
    if (s.psdt() != 1 || (s.flags() & 3) != 0) {
      // Fabrics carry data descriptors only as SGLs (PSDT 01b); fused operations are not supported.
      fail(cid, Nvme.SC_INVALID_FIELD);
      return;
    }
    TargetController k = ctrl;
    if (k != null) {
      k.lastKeepAlive = System.nanoTime();
    }
    if (s.opcode() == Nvme.FABRICS) {
      onFabrics(s, c.data());
    } else if (k == null) {
      fail(cid, Nvme.SC_CMD_SEQ_ERROR);
    } else if (auth != null && !auth.authenticated()) {
      fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_AUTH_REQUIRED);
    } else if (!k.ready()) {
      fail(cid, Nvme.SC_CMD_SEQ_ERROR);
    } else if (qid == 0) {
      onAdmin(s);
    } else {
      onIo(s, c.data());
    }
  }

  private void onFabrics(Sqe s, ByteBuf data) {
    int cid = s.cid();
    switch (s.fctype()) {
      case Nvme.FCTYPE_CONNECT:
        if (ctrl != null) {
          fail(cid, Nvme.SC_CMD_SEQ_ERROR);
        } else if (s.shortAt(40) != 0) {
          fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_CONNECT_FORMAT);
        } else if (s.sglLength() != 1024) {
          // Exactly 1024, as Linux checks: a larger claim would have this target hold buffers for
          // a host that has not even connected.
          fail(cid, Nvme.SC_SGL_INVALID_DATA);
        } else {
          withData(
              s,
              data,
              d -> {
                try {
                  connect(s, d);
                } finally {
                  d.release();
                }
              });
        }
        return;
      case Nvme.FCTYPE_PROPERTY_GET:
      case Nvme.FCTYPE_PROPERTY_SET:
        if (ctrl == null) {
          fail(cid, Nvme.SC_CMD_SEQ_ERROR);
        } else if (qid != 0) {
          fail(cid, Nvme.SC_INVALID_OPCODE);
        } else if (auth != null && !auth.authenticated()) {
          // Stricter than Linux's target, which lets properties through: an unauthenticated host
          // has no business enabling or reading the controller.
          fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_AUTH_REQUIRED);
        } else if (s.fctype() == Nvme.FCTYPE_PROPERTY_GET) {
          propertyGet(s);
        } else {
          propertySet(s);
        }
        return;
      case Nvme.FCTYPE_AUTH_SEND:
      case Nvme.FCTYPE_AUTH_RECEIVE:
        onAuth(s, data);
        return;
      default:
        fail(cid, Nvme.SC_INVALID_OPCODE);
    }
  }

  /**
   * AUTH_Send and AUTH_Receive. Malformed commands get an error status; a protocol failure does
   * not: the next AUTH_Receive carries Failure1, and then the queue (for the admin queue, the
   * controller) is dropped, as Linux's target does.
   */
  private void onAuth(Sqe s, ByteBuf data) {
    int cid = s.cid();
    int length = s.intAt(44);
    if (ctrl == null || auth == null) {
      fail(cid, Nvme.SC_CMD_SEQ_ERROR);
      return;
    }
    if ((s.byteAt(43) & 0xFF) != Nvme.AUTH_SECP
        || s.byteAt(42) != 1
        || s.byteAt(41) != 1
        || length <= 0
        || length > MAX_AUTH_LENGTH
        || s.sglLength() != length) {
      fail(cid, Nvme.SC_INVALID_FIELD);
      return;
    }
    if (authBusy || (!auth.authenticated() && !pending.isEmpty())) {
      // One step at a time, and before authentication one transfer at a time: a host that is not
      // yet known must not make this target hold buffers for data it never sends.
      fail(cid, Nvme.SC_CMD_SEQ_ERROR);
      return;
    }
    if (s.fctype() == Nvme.FCTYPE_AUTH_SEND) {
      withData(
          s,
          data,
          d -> {
            byte[] m = new byte[d.readableBytes()];
            d.getBytes(d.readerIndex(), m);
            d.release();
            if (authBusy) {
              // Another step started while this one's data was on its way.
              fail(cid, Nvme.SC_CMD_SEQ_ERROR);
              return;
            }
            authBusy = true;
            offLoop(
                cid,
                () -> {
                  auth.send(m);
                  return null;
                },
                none -> ok(cid));
          });
    } else {
      authBusy = true;
      offLoop(
          cid,
          () -> auth.receive(length),
          m -> {
            byte[] padded = new byte[length];
            System.arraycopy(m, 0, padded, 0, Math.min(m.length, length));
            sendData(s, padded);
          });
    }
  }

  /**
   * Runs a DH-HMAC-CHAP step off the event loop, then answers on it: a step may make a
   * Diffie-Hellman key pair or shared secret, which takes milliseconds to a second of CPU that
   * other hosts' I/O on this loop must not wait for.
   */
  private <T> void offLoop(
      int cid, java.util.function.Supplier<T> step, java.util.function.Consumer<T> answer) {
    TargetController k = ctrl;
    if (k != null) {
      k.authStepsRunning.incrementAndGet();
    }
    try {
      t.authWork.execute(
          () -> {
            T result;
            try {
              result = step.get();
            } catch (Throwable e) {
              stepEnded(k);
              LOG.warn("DH-HMAC-CHAP step failed unexpectedly", e);
              try {
                ch.eventLoop()
                    .execute(
                        () -> {
                          authBusy = false;
                          fail(cid, Nvme.SC_INTERNAL);
                        });
              } catch (RejectedExecutionException stopped) {
                LOG.debug("target stopped during DH-HMAC-CHAP");
              }
              return;
            }
            stepEnded(k);
            try {
              ch.eventLoop()
                  .execute(
                      () -> {
                        authBusy = false;
                        if (dead) {
                          return;
                        }
                        answer.accept(result);
                        if (auth.failed()) {
                          dropUnauthenticated();
                        } else {
                          authenticatedNow();
                        }
                      });
            } catch (RejectedExecutionException e) {
              LOG.debug("target stopped during DH-HMAC-CHAP");
            }
          });
    } catch (RejectedExecutionException e) {
      // Too many exchanges in progress: this one is refused, and the host may connect again.
      stepEnded(k);
      authBusy = false;
      fail(cid, Nvme.SC_INTERNAL);
    }
  }

  /** A step of {@link #offLoop} ended: the host has waited until now, not longer. */
  private static void stepEnded(TargetController k) {
    if (k != null) {
      k.lastKeepAlive = System.nanoTime();
      k.authStepsRunning.decrementAndGet();
    }
  }

  private void authenticatedNow() {
    if (auth.authenticated() && authTimer != null) {
      authTimer.cancel(false);
      authTimer = null;
      // Once per controller at INFO; its I/O queues follow the admin queue's lead.
      String line = "host {} authenticated on qid {} of controller {} ({})";
      if (qid == 0) {
        LOG.info(line, ctrl.hostNqn, qid, ctrl.cntlid, auth.negotiated());
      } else {
        LOG.debug(line, ctrl.hostNqn, qid, ctrl.cntlid, auth.negotiated());
      }
    }
  }

  /**
   * Closes the queue once what was sent is on the wire; the admin queue takes its controller with
   * it. Linux's target tears the controller down for a failure on any queue; this one does not for
   * an I/O queue, because anyone who learns a host's NQN, host id and controller id could join a
   * free I/O queue and fail on purpose to cut the real host off.
   */
  private void dropUnauthenticated() {
    if (dead) {
      return;
    }
    LOG.warn(
        "host {} failed DH-HMAC-CHAP on qid {} from {}: {}; closing the connection",
        ctrl.hostNqn,
        qid,
        ch.remoteAddress(),
        auth.failure());
    dead = true;
    decoder.discardInput();
    out.flushThenClose();
  }

  private void authExpired() {
    if (dead || auth == null || auth.authenticated()) {
      return;
    }
    LOG.warn(
        "host {} did not authenticate qid {} from {} within {} ms; closing the connection",
        ctrl.hostNqn,
        qid,
        ch.remoteAddress(),
        t.authTimeoutMs);
    dead = true;
    ch.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
  }

  private void connectInvalid(int cid, boolean inData, int offset) {
    respond(
        cid,
        Nvme.status(Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_CONNECT_INVALID_PARAM, true),
        (inData ? 1 << 16 : 0) | offset,
        0);
  }

  private void connect(Sqe s, ByteBuf d) {
    int cid = s.cid();
    if (ctrl != null) {
      // A second Connect whose data arrived after the first one's (both by R2T).
      fail(cid, Nvme.SC_CMD_SEQ_ERROR);
      return;
    }
    int q = s.shortAt(42);
    int size = s.shortAt(44) + 1;
    int cattr = s.byteAt(46) & 0xFF;
    long kato = s.intAt(48) & 0xFFFFFFFFL;
    if (d.readableBytes() < 1024) {
      fail(cid, Nvme.SC_SGL_INVALID_DATA);
      return;
    }
    int base = d.readerIndex();
    UUID hostId = new UUID(d.getLong(base), d.getLong(base + 8));
    int wantCntlid = d.getUnsignedShortLE(base + 16);
    String subnqn = field(d, base + 256);
    String hostnqn = field(d, base + 512);
    Subsystem sub = null;
    // One view of the host list decides both whether the host is in and what it must prove: a
    // reload between two looks could otherwise let in, unchallenged, a host whose key it withdrew.
    Subsystem.Admission admission = null;
    if (!subnqn.equals(Nvme.DISCOVERY_NQN)) {
      sub = t.subsystems.get(subnqn);
      if (sub == null) {
        LOG.info("host {} asked for unknown subsystem '{}'", hostnqn, subnqn);
        connectInvalid(cid, true, 256);
        return;
      }
      admission = sub.admission(hostnqn);
      if (!admission.allowed()) {
        LOG.info("host {} is not allowed on subsystem {}", hostnqn, subnqn);
        fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_CONNECT_INVALID_HOST);
        return;
      }
    }
    if (size < 2 || size > t.maxQueueSize) {
      connectInvalid(cid, false, 44);
      return;
    }
    TargetController k;
    if (q == 0) {
      int id = t.newCntlid();
      if (id < 0) {
        fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_CONNECT_CTRL_BUSY);
        return;
      }
      k = new TargetController(id, sub, hostnqn, hostId, kato, t.maxIoQueues);
      t.controllers.put(id, k);
      k.queues.put(0, ch);
      if (kato > 0) {
        long period = Math.max(50, kato / 4);
        kaTimer =
            ch.eventLoop()
                .scheduleAtFixedRate(this::checkKeepAlive, period, period, TimeUnit.MILLISECONDS);
      }
    } else {
      k = t.controllers.get(wantCntlid);
      if (k == null || k.subsystem != sub || !k.hostNqn.equals(hostnqn) || k.discovery()) {
        connectInvalid(cid, true, 16);
        return;
      }
      if (!k.hostId.equals(hostId)) {
        connectInvalid(cid, true, 0);
        return;
      }
      if (!k.ready()) {
        fail(cid, Nvme.SC_CMD_SEQ_ERROR);
        return;
      }
      if (q > k.ioQueuesGranted || k.queues.putIfAbsent(q, ch) != null) {
        connectInvalid(cid, false, 42);
        return;
      }
    }
    ctrl = k;
    qid = q;
    PlacingEventLoopGroup threads = t.networkThreads();
    if (q > 0 && threads != null) {
      threads.ioQueueConnected(ch);
    }
    sqsize = size;
    sqhd = 1 % size;
    sqFlowOff = (cattr & 4) != 0;
    inCapsuleMax = q == 0 ? ADMIN_IN_CAPSULE : t.inCapsuleDataSize;
    decoder.limits(inCapsuleMax, t.maxH2CData);
    LOG.debug(
        "host {} connected qid {} of controller {} ({})",
        hostnqn,
        q,
        k.cntlid,
        sub == null ? "discovery" : sub.nqn());
    HostKeys keys = admission == null ? null : admission.keys();
    if (keys != null) {
      auth =
          new DhchapController(
              hostnqn, sub.nqn(), keys.hostKey(), keys.ctrlKey(), keys.hashes(), keys.groups());
      authTimer =
          ch.eventLoop().schedule(this::authExpired, t.authTimeoutMs, TimeUnit.MILLISECONDS);
    }
    respond(cid, 0, k.cntlid | (keys != null ? Nvme.CONNECT_ATR : 0), 0);
  }

  private static String field(ByteBuf d, int at) {
    int end = at;
    while (end < at + 256 && d.getByte(end) != 0) {
      end++;
    }
    return d.toString(at, end - at, StandardCharsets.UTF_8).trim();
  }

  private void checkKeepAlive() {
    TargetController k = ctrl;
    if (k == null || k.katoMs == 0) {
      return;
    }
    if (k.authStepsRunning.get() > 0) {
      // A DH-HMAC-CHAP step of ours is running on one of its queues (seconds for FFDHE 8192 on a
      // slow or busy machine) and the host waits for its answer: the silence is ours, not the
      // host's. Linux's host sends no Keep Alive during authentication.
      return;
    }
    long idle = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - k.lastKeepAlive);
    if (idle > k.katoMs) {
      LOG.warn(
          "controller {} of host {}: no Keep Alive for {} ms (KATO {} ms); tearing it down",
          k.cntlid,
          k.hostNqn,
          idle,
          k.katoMs);
      k.csts |= 2;
      t.controllers.remove(k.cntlid, k);
      k.teardown();
    }
  }

  private void propertyGet(Sqe s) {
    int cid = s.cid();
    boolean eight = (s.byteAt(40) & 7) == 1;
    int ofst = s.intAt(44);
    long v;
    switch (ofst) {
      case Nvme.PROP_CAP:
        v = TargetData.cap(t.maxQueueSize);
        break;
      case 0x04:
        v = TargetData.cap(t.maxQueueSize) >>> 32;
        break;
      case Nvme.PROP_VS:
        v = TargetData.VERSION;
        break;
      case Nvme.PROP_CC:
        v = ctrl.cc & 0xFFFFFFFFL;
        break;
      case Nvme.PROP_CSTS:
        v = ctrl.csts & 0xFFFFFFFFL;
        break;
      case 0x20:
        v = 0;
        break; // NSSR
      default:
        fail(cid, Nvme.SC_INVALID_FIELD);
        return;
    }
    if (!eight) {
      v &= 0xFFFFFFFFL;
    }
    respond(cid, 0, (int) v, (int) (v >>> 32));
  }

  private void propertySet(Sqe s) {
    int cid = s.cid();
    int ofst = s.intAt(44);
    int v = (int) s.longAt(48);
    if (ofst == 0x20) {
      ok(cid);
      return;
    }
    if (ofst != Nvme.PROP_CC) {
      fail(cid, Nvme.SC_INVALID_FIELD);
      return;
    }
    TargetController k = ctrl;
    int old = k.cc;
    k.cc = v;
    if ((v & 1) != 0 && (old & 1) == 0) {
      boolean sizesOk = k.discovery() || (((v >> 16) & 0xF) == 6 && ((v >> 20) & 0xF) == 4);
      // An enable with unusable queue entry sizes is what CSTS.CFS exists for.
      k.csts = sizesOk ? (k.csts | 1) & ~2 : k.csts | 2;
    } else if ((v & 1) == 0 && (old & 1) != 0) {
      // Controller reset: the I/O queues go away.
      k.csts = 0;
      for (var e : k.queues.entrySet()) {
        if (e.getKey() != 0) {
          e.getValue().close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
        }
      }
    }
    if (((v >> 14) & 3) != 0) {
      k.csts = (k.csts & ~0xC) | (2 << 2);
    }
    ok(cid);
  }

  // ----------------------------------------------------------------------------------------------
  // admin

  private void onAdmin(Sqe s) {
    int cid = s.cid();
    TargetController k = ctrl;
    switch (s.opcode()) {
      case Nvme.ADMIN_IDENTIFY:
        identify(s);
        return;
      case Nvme.ADMIN_GET_LOG_PAGE:
        getLog(s);
        return;
      case Nvme.ADMIN_SET_FEATURES:
        setFeatures(s);
        return;
      case Nvme.ADMIN_GET_FEATURES:
        getFeatures(s);
        return;
      case Nvme.ADMIN_KEEP_ALIVE:
        ok(cid);
        return;
      case Nvme.ADMIN_ASYNC_EVENT:
        // Held until the controller goes away: this target raises no asynchronous events.
        if (++aers > MAX_AERS) {
          aers--;
          fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_ASYNC_LIMIT);
        }
        return;
      case Nvme.ADMIN_ABORT:
        if (k.discovery()) {
          break;
        }
        respond(cid, 0, 1, 0); // bit 0 set: command not aborted
        return;
      default:
        break;
    }
    fail(cid, Nvme.SC_INVALID_OPCODE);
  }

  private boolean checkDataIn(Sqe s) {
    if (s.sglId() != Nvme.SGL_TRANSPORT) {
      fail(s.cid(), Nvme.SC_SGL_INVALID_TYPE);
      return false;
    }
    return true;
  }

  private void identify(Sqe s) {
    int cid = s.cid();
    if (!checkDataIn(s)) {
      return;
    }
    int cns = s.cdw(10) & 0xFF;
    Subsystem sub = ctrl.subsystem;
    int nsid = s.nsid();
    if (cns == Nvme.CNS_CONTROLLER) {
      sendData(s, TargetData.identifyController(t, ctrl));
      return;
    }
    if (sub == null) {
      fail(cid, Nvme.SC_INVALID_FIELD);
      return;
    }
    switch (cns) {
      case Nvme.CNS_NAMESPACE:
        {
          Namespace ns = sub.get(nsid);
          if (ns != null) {
            sendData(s, TargetData.identifyNamespace(sub, nsid, ns));
          } else if (nsid != 0 && Integer.compareUnsigned(nsid, sub.maxNsid()) <= 0) {
            sendData(s, new byte[4096]); // an inactive NSID reads as zeroes
          } else {
            fail(cid, Nvme.SC_INVALID_NS);
          }
          return;
        }
      case Nvme.CNS_ACTIVE_NS_LIST:
        if (nsid == -2 || nsid == -1) {
          fail(cid, Nvme.SC_INVALID_NS);
        } else {
          sendData(s, TargetData.activeNsList(sub, nsid));
        }
        return;
      case Nvme.CNS_NS_DESCRIPTORS:
        if (sub.get(nsid) == null) {
          fail(cid, Nvme.SC_INVALID_NS);
        } else {
          sendData(s, TargetData.nsDescriptors(sub, nsid));
        }
        return;
      default:
        fail(cid, Nvme.SC_INVALID_FIELD);
    }
  }

  private void getLog(Sqe s) {
    int cid = s.cid();
    if (!checkDataIn(s)) {
      return;
    }
    int lid = s.cdw(10) & 0xFF;
    long numd = ((((long) s.cdw(11) & 0xFFFF) << 16) | (s.cdw(10) >>> 16)) + 1;
    long len = numd * 4;
    long offset = (s.cdw(12) & 0xFFFFFFFFL) | ((long) s.cdw(13) << 32);
    if (len > s.sglLength() || len > (1 << 20)) {
      fail(cid, Nvme.SC_SGL_INVALID_DATA);
      return;
    }
    byte[] log;
    boolean disc = ctrl.discovery();
    if (lid == Nvme.LOG_DISCOVERY && disc) {
      log = TargetData.discoveryLog(t, ctrl, (InetSocketAddress) ch.localAddress());
    } else if (!disc && lid == Nvme.LOG_ERROR) {
      log = new byte[64];
    } else if (!disc && (lid == Nvme.LOG_SMART || lid == Nvme.LOG_FIRMWARE)) {
      log = new byte[512];
    } else if (!disc && (lid == Nvme.LOG_CHANGED_NS || lid == Nvme.LOG_CMD_EFFECTS)) {
      log = new byte[4096];
    } else {
      fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_INVALID_LOG_PAGE);
      return;
    }
    if (offset < 0 || offset > log.length || (offset & 3) != 0) {
      fail(cid, Nvme.SC_INVALID_FIELD);
      return;
    }
    byte[] outBytes = new byte[(int) len];
    System.arraycopy(log, (int) offset, outBytes, 0, (int) Math.min(len, log.length - offset));
    sendData(s, outBytes);
  }

  private void setFeatures(Sqe s) {
    int cid = s.cid();
    int fid = s.cdw(10) & 0xFF;
    if ((s.cdw(10) & 0x80000000) != 0) {
      fail(cid, Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_FEATURE_NOT_SAVEABLE);
      return;
    }
    int v = s.cdw(11);
    TargetController k = ctrl;
    switch (fid) {
      case Nvme.FEAT_NUM_QUEUES:
        {
          if (k.discovery() || (v & 0xFFFF) == 0xFFFF || (v >>> 16) == 0xFFFF) {
            fail(cid, Nvme.SC_INVALID_FIELD);
            return;
          }
          int want = Math.max((v & 0xFFFF), v >>> 16) + 1;
          int g = Math.min(want, t.maxIoQueues);
          k.ioQueuesGranted = g;
          respond(cid, 0, (g - 1) | ((g - 1) << 16), 0);
          return;
        }
      case Nvme.FEAT_KATO:
        k.katoMs = v & 0xFFFFFFFFL;
        ok(cid);
        return;
      case Nvme.FEAT_ASYNC_EVENT:
        k.asyncEventConfig = v;
        ok(cid);
        return;
      case Nvme.FEAT_ARBITRATION:
      case Nvme.FEAT_POWER_MGMT:
      case Nvme.FEAT_IRQ_COALESCE:
      case Nvme.FEAT_VOLATILE_WC:
        if (k.discovery()) {
          break;
        }
        ok(cid);
        return;
      default:
        break;
    }
    fail(cid, Nvme.SC_INVALID_FIELD);
  }

  private void getFeatures(Sqe s) {
    int cid = s.cid();
    TargetController k = ctrl;
    switch (s.cdw(10) & 0xFF) {
      case Nvme.FEAT_NUM_QUEUES:
        if (k.discovery()) {
          break;
        }
        respond(cid, 0, (k.ioQueuesGranted - 1) | ((k.ioQueuesGranted - 1) << 16), 0);
        return;
      case Nvme.FEAT_KATO:
        respond(cid, 0, (int) k.katoMs, 0);
        return;
      case Nvme.FEAT_ASYNC_EVENT:
        respond(cid, 0, k.asyncEventConfig, 0);
        return;
      case Nvme.FEAT_VOLATILE_WC:
        respond(cid, 0, k.discovery() ? 0 : 1, 0);
        return;
      case Nvme.FEAT_ARBITRATION:
      case Nvme.FEAT_POWER_MGMT:
      case Nvme.FEAT_IRQ_COALESCE:
        if (k.discovery()) {
          break;
        }
        ok(cid);
        return;
      default:
        break;
    }
    fail(cid, Nvme.SC_INVALID_FIELD);
  }

  // ------------------------------------------------------------------------------------------------- I/O

  private void onIo(Sqe s, ByteBuf capsuleData) {
    int cid = s.cid();
    Subsystem sub = ctrl.subsystem;
    int nsid = s.nsid();
    Namespace ns = sub.get(nsid);
    int nlb = (s.cdw(12) & 0xFFFF) + 1;
    if (t.countCommands) {
      long bytes =
          ns == null || (s.opcode() != Nvme.IO_READ && s.opcode() != Nvme.IO_WRITE)
              ? 0
              : (long) nlb * ns.blockSize();
      // A host that reuses a command id while it is outstanding breaks the protocol; the first
      // command's record is kept, and the answer to either ends it.
      if (timings.putIfAbsent(cid, new Timing(s.opcode(), bytes, System.nanoTime())) == null) {
        ctrl.counters.outstanding.increment();
      }
    }
    if (s.opcode() == Nvme.IO_FLUSH && nsid == -1) {
      Namespace any = null;
      for (Namespace each : sub.namespaces().values()) {
        any = each;
      }
      if (any == null) {
        ok(cid);
        return;
      }
      runIo(
          any,
          cid,
          0x80,
          () -> {
            for (Namespace each : sub.namespaces().values()) {
              each.flush();
            }
          });
      return;
    }
    if (ns == null) {
      fail(cid, Nvme.SC_INVALID_NS);
      return;
    }
    int bs = ns.blockSize();
    long slba = (s.cdw(10) & 0xFFFFFFFFL) | ((long) s.cdw(11) << 32);
    switch (s.opcode()) {
      case Nvme.IO_READ:
      case Nvme.IO_WRITE:
        {
          if (!inRange(ns, slba, nlb)) {
            fail(cid, Nvme.SC_LBA_RANGE);
            return;
          }
          long len = (long) nlb * bs;
          if (len > (4096L << t.mdts)) {
            fail(cid, Nvme.SC_INVALID_FIELD);
            return;
          }
          if (s.sglLength() != len) {
            fail(cid, Nvme.SC_SGL_INVALID_DATA);
            return;
          }
          long off = slba * bs;
          if (s.opcode() == Nvme.IO_READ) {
            if (checkDataIn(s)) {
              read(ns, s, off, (int) len);
            }
          } else {
            boolean fua = (s.cdw(12) & (1 << 30)) != 0;
            withData(
                s,
                capsuleData,
                d ->
                    runIo(
                        ns,
                        cid,
                        0x80,
                        () -> {
                          try {
                            ns.write(off, d);
                          } finally {
                            d.release();
                          }
                          if (fua) {
                            ns.flush(); // Force Unit Access: durable before completion
                          }
                        }),
                dataDigests || ns.blocking()
                    ? null
                    : new Landing(
                        ns,
                        off,
                        () ->
                            runIo(
                                ns,
                                cid,
                                0x80,
                                () -> {
                                  if (fua) {
                                    ns.flush();
                                  }
                                })));
          }
          return;
        }
      case Nvme.IO_FLUSH:
        runIo(ns, cid, 0x80, ns::flush);
        return;
      case Nvme.IO_WRITE_ZEROES:
        if (!inRange(ns, slba, nlb)) {
          fail(cid, Nvme.SC_LBA_RANGE);
          return;
        }
        long zeroed = (long) nlb * bs;
        runIo(ns, cid, 0x80, zeroed, () -> ns.writeZeroes(slba * bs, zeroed));
        return;
      case Nvme.IO_DSM:
        {
          int ranges = (s.cdw(10) & 0xFF) + 1;
          boolean deallocate = (s.cdw(11) & 4) != 0;
          if (s.sglLength() < ranges * 16L) {
            fail(cid, Nvme.SC_SGL_INVALID_DATA);
            return;
          }
          withData(
              s,
              capsuleData,
              d -> {
                try {
                  dsm(ns, cid, d, ranges, deallocate);
                } finally {
                  d.release();
                }
              });
          return;
        }
      default:
        fail(cid, Nvme.SC_INVALID_OPCODE);
    }
  }

  /**
   * Whether {@code nlb} blocks from {@code slba} lie within {@code ns}. SLBA is an unsigned 64-bit
   * field, so one near 2^63 or 2^64 would wrap {@code slba + nlb} past any signed check and reach
   * the namespace with a negative offset; comparing against the room left after SLBA cannot wrap.
   */
  static boolean inRange(Namespace ns, long slba, long nlb) {
    long nsze = ns.blockCount();
    return Long.compareUnsigned(slba, nsze) <= 0 && Long.compareUnsigned(nlb, nsze - slba) <= 0;
  }

  private void dsm(Namespace ns, int cid, ByteBuf d, int ranges, boolean deallocate) {
    if (!deallocate) {
      ok(cid); // attributes only: advisory
      return;
    }
    long[] start = new long[ranges];
    long[] count = new long[ranges];
    int base = d.readerIndex();
    for (int i = 0; i < ranges; i++) {
      count[i] = d.getUnsignedIntLE(base + 16 * i + 4);
      start[i] = d.getLongLE(base + 16 * i + 8);
      if (!inRange(ns, start[i], count[i])) {
        fail(cid, Nvme.SC_LBA_RANGE);
        return;
      }
    }
    int bs = ns.blockSize();
    long bytes = 0;
    for (long n : count) {
      bytes += n * bs; // at most 256 ranges of 2^32 blocks of 64 KiB: no overflow
    }
    runIo(
        ns,
        cid,
        0x80,
        bytes,
        () -> {
          for (int i = 0; i < ranges; i++) {
            if (count[i] > 0) {
              ns.deallocate(start[i] * bs, count[i] * bs);
            }
          }
        });
  }

  private void read(Namespace ns, Sqe s, long off, int len) {
    int cid = s.cid();
    if (!ns.blocking()) {
      ByteBuf data;
      try {
        data = ns.read(ch.alloc(), off, len);
      } catch (IOException e) {
        LOG.warn("namespace read failed: {}", e.toString());
        fail(cid, Nvme.SCT_MEDIA, 0x81);
        return;
      } catch (RuntimeException e) {
        LOG.warn("namespace read failed unexpectedly", e);
        fail(cid, Nvme.SC_INTERNAL);
        return;
      }
      sendData(s, data);
      return;
    }
    try {
      t.blockingIo.execute(
          () -> {
            ByteBuf data = null;
            int st = 0;
            try {
              data = ns.read(ch.alloc(), off, len);
            } catch (IOException e) {
              LOG.warn("namespace read failed: {}", e.toString());
              st = Nvme.status(Nvme.SCT_MEDIA, 0x81, true);
            } catch (RuntimeException e) {
              LOG.warn("namespace read failed unexpectedly", e);
              st = Nvme.status(Nvme.SCT_GENERIC, Nvme.SC_INTERNAL, true);
            }
            ByteBuf result = data;
            int status = st;
            try {
              ch.eventLoop()
                  .execute(
                      () -> {
                        if (result == null) {
                          respond(cid, status, 0, 0);
                        } else {
                          sendData(s, result);
                        }
                      });
            } catch (RejectedExecutionException e) {
              if (result != null) {
                result.release();
              }
            }
          });
    } catch (RejectedExecutionException e) {
      fail(cid, Nvme.SC_INTERNAL);
    }
  }
}
