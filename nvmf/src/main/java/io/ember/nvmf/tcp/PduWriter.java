package io.ember.nvmf.tcp;

import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;

/**
 * Encodes PDUs onto a channel without flushing. Data is written as the caller's buffer itself, so
 * payloads are never copied here; headers and header-only PDUs are gathered into one buffer that
 * goes out before the next data buffer or at {@link #flush()}, so nothing reaches the channel until
 * one of those. Every method that takes a {@code data} buffer takes ownership of one reference to
 * it.
 *
 * <p>One instance per connection; use it only from the channel's event loop.
 */
public final class PduWriter {
  /** Size of each buffer that gathers small PDUs between flushes. */
  private static final int GATHER_BYTES = 4096;

  private final Channel ch;
  private final ByteBufAllocator alloc;
  private boolean hdgst;
  private boolean ddgst;
  private int dataAlign = 4;

  /**
   * PDU bytes not yet handed to the channel. Headers, and PDUs that are all header (responses,
   * R2Ts, commands without data), are gathered here and go to the channel as one buffer at the next
   * flush or before the next data buffer: one allocation and one outbound entry per flush (a read
   * batch flushes every few commands, see FlushBatcher) instead of one per PDU. Null between
   * flushes.
   */
  private ByteBuf gathered;

  /** The first byte of {@link #gathered} not yet handed to the channel. */
  private int gatheredFrom;

  /**
   * @param ch the connection to write to
   */
  public PduWriter(Channel ch) {
    this.ch = ch;
    this.alloc = ch.alloc();
  }

  /**
   * Applies what ICReq/ICResp negotiated.
   *
   * @param header header digest on
   * @param data data digest on
   * @param pda the peer's PDU data alignment (CPDA for a host, HPDA for a controller), 0's based
   *     dwords
   */
  public void negotiated(boolean header, boolean data, int pda) {
    this.hdgst = header;
    this.ddgst = data;
    this.dataAlign = (pda + 1) * 4;
  }

  /** Flushes everything written so far. */
  public void flush() {
    handOver();
    release();
    ch.flush();
  }

  /**
   * Flushes what was written, then closes the channel once it is on the wire (a TermReq before the
   * connection ends).
   */
  public void flushThenClose() {
    handOver();
    release();
    ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
  }

  /**
   * Drops what was written and not flushed; for a connection that closed, whose pending bytes can
   * no longer go anywhere.
   */
  public void discard() {
    release();
  }

  /** ICReq: PFV 0, the given HPDA, digests wanted and MAXR2T (0's based). */
  public void icReq(int hpda, boolean hd, boolean dd, int maxr2t) {
    ByteBuf b = room(128);
    b.writeByte(Pdu.T_ICREQ).writeByte(0).writeByte(128).writeByte(0).writeIntLE(128);
    b.writeShortLE(0).writeByte(hpda).writeByte((hd ? 1 : 0) | (dd ? 2 : 0)).writeIntLE(maxr2t);
    b.writeZero(112);
  }

  /** ICResp: PFV 0, CPDA, digests granted and MAXH2CDATA. */
  public void icResp(int cpda, boolean hd, boolean dd, int maxh2cdata) {
    ByteBuf b = room(128);
    b.writeByte(Pdu.T_ICRESP).writeByte(0).writeByte(128).writeByte(0).writeIntLE(128);
    b.writeShortLE(0).writeByte(cpda).writeByte((hd ? 1 : 0) | (dd ? 2 : 0)).writeIntLE(maxh2cdata);
    b.writeZero(112);
  }

  /** H2CTermReq or C2HTermReq echoing up to 128 bytes of the offending header. Never digested. */
  public void termReq(int type, int fes, int fei, byte[] header) {
    int n = header == null ? 0 : Math.min(128, header.length);
    ByteBuf b = room(24 + n);
    b.writeByte(type).writeByte(0).writeByte(24).writeByte(0).writeIntLE(24 + n);
    b.writeShortLE(fes).writeIntLE(fei).writeZero(10);
    if (n > 0) {
      b.writeBytes(header, 0, n);
    }
  }

  /** Command capsule; {@code data} (may be null) is the in-capsule data. */
  public void capsuleCmd(Sqe sqe, ByteBuf data) {
    int at = header(Pdu.T_CAPSULE_CMD, 0, 72, data);
    gathered.writeBytes(sqe.array());
    finish(at, 72, data);
  }

  /** Response capsule. */
  public void capsuleResp(Cqe cqe) {
    int at = header(Pdu.T_CAPSULE_RESP, 0, 24, null);
    gathered
        .writeIntLE(cqe.dw0())
        .writeIntLE(cqe.dw1())
        .writeShortLE(cqe.sqhd())
        .writeShortLE(cqe.sqid())
        .writeShortLE(cqe.cid())
        .writeShortLE(cqe.status() << 1);
    finish(at, 24, null);
  }

  /** H2CData carrying {@code data} for bytes {@code datao..} of command {@code cccid}. */
  public void h2cData(int cccid, int ttag, int datao, ByteBuf data, boolean last) {
    int at = header(Pdu.T_H2C_DATA, last ? Pdu.F_LAST_PDU : 0, 24, data);
    gathered
        .writeShortLE(cccid)
        .writeShortLE(ttag)
        .writeIntLE(datao)
        .writeIntLE(data.readableBytes())
        .writeIntLE(0);
    finish(at, 24, data);
  }

  /**
   * C2HData; {@code success} may only be set with {@code last} and when SQ flow control is
   * disabled.
   */
  public void c2hData(int cccid, int datao, ByteBuf data, boolean last, boolean success) {
    int flags = (last ? Pdu.F_LAST_PDU : 0) | (success ? Pdu.F_SUCCESS : 0);
    int at = header(Pdu.T_C2H_DATA, flags, 24, data);
    gathered
        .writeShortLE(cccid)
        .writeShortLE(0)
        .writeIntLE(datao)
        .writeIntLE(data.readableBytes())
        .writeIntLE(0);
    finish(at, 24, data);
  }

  /** R2T asking for {@code r2tl} bytes at {@code r2to}. */
  public void r2t(int cccid, int ttag, int r2to, int r2tl) {
    int at = header(Pdu.T_R2T, 0, 24, null);
    gathered.writeShortLE(cccid).writeShortLE(ttag).writeIntLE(r2to).writeIntLE(r2tl).writeIntLE(0);
    finish(at, 24, null);
  }

  /**
   * Writes {@code b} with the channel's void promise: no future per buffer on this path. A write
   * that fails is reported to the pipeline's {@code exceptionCaught}, whose handler (the host's
   * queue or the target's connection) fails the connection; the future returned is the void promise
   * itself, which carries nothing and takes no listener.
   */
  private void write(ByteBuf b) {
    ChannelFuture unused = ch.write(b, ch.voidPromise());
  }

  /** Room for {@code n} more gathered bytes, in a new buffer when the current one is full. */
  private ByteBuf room(int n) {
    if (gathered != null && gathered.writableBytes() >= n) {
      return gathered;
    }
    handOver();
    release();
    gathered = alloc.directBuffer(Math.max(GATHER_BYTES, n));
    return gathered;
  }

  /** Hands the gathered bytes not yet written to the channel, as a view of the buffer. */
  private void handOver() {
    if (gathered != null && gathered.writerIndex() > gatheredFrom) {
      write(gathered.retainedSlice(gatheredFrom, gathered.writerIndex() - gatheredFrom));
      gatheredFrom = gathered.writerIndex();
    }
  }

  private void release() {
    if (gathered != null) {
      gathered.release();
      gathered = null;
      gatheredFrom = 0;
    }
  }

  private int pdo(int hlen, ByteBuf data) {
    if (data == null || !data.isReadable()) {
      return 0;
    }
    int start = hlen + (hdgst ? 4 : 0);
    return (start + dataAlign - 1) / dataAlign * dataAlign;
  }

  /** Writes a PDU's common header into the gathered bytes and returns where the PDU starts. */
  private int header(int type, int flags, int hlen, ByteBuf data) {
    boolean hasData = data != null && data.isReadable();
    int pdo = pdo(hlen, data);
    int headerBytes = hasData ? pdo : hlen + (hdgst ? 4 : 0);
    long plen = (long) headerBytes + (hasData ? data.readableBytes() + (ddgst ? 4 : 0) : 0);
    if (pdo > 255 || plen > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("PDU too large: PDO " + pdo + ", PLEN " + plen);
    }
    // The data digest that may follow the data is gathered after it, so leave it room too.
    ByteBuf h = room(headerBytes + 4);
    int at = h.writerIndex();
    int f = flags | (hdgst ? Pdu.F_HDGST : 0) | (hasData && ddgst ? Pdu.F_DDGST : 0);
    h.writeByte(type).writeByte(f).writeByte(hlen).writeByte(pdo).writeIntLE((int) plen);
    return at;
  }

  private void finish(int at, int hlen, ByteBuf data) {
    ByteBuf h = gathered;
    if (hdgst) {
      h.writeIntLE(Crc32c.of(h, at, hlen));
    }
    if (data == null) {
      return;
    }
    if (!data.isReadable()) {
      data.release();
      return;
    }
    h.writeZero(at + pdo(hlen, data) - h.writerIndex());
    int crc = ddgst ? Crc32c.of(data, data.readerIndex(), data.readableBytes()) : 0;
    handOver();
    write(data);
    if (ddgst) {
      h.writeIntLE(crc);
    }
  }
}
