package io.ember.nvmf.tcp;

import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;

/**
 * Encodes PDUs onto a channel without flushing. Data is written as the caller's buffer itself
 * (header, data and digest go out as separate buffers in one gather write), so payloads are never
 * copied here. Every method that takes a {@code data} buffer takes ownership of one reference to
 * it.
 *
 * <p>One instance per connection; use it only from the channel's event loop.
 */
public final class PduWriter {
  private final Channel ch;
  private final ByteBufAllocator alloc;
  private boolean hdgst;
  private boolean ddgst;
  private int dataAlign = 4;

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
    ch.flush();
  }

  /** ICReq: PFV 0, the given HPDA, digests wanted and MAXR2T (0's based). */
  public void icReq(int hpda, boolean hd, boolean dd, int maxr2t) {
    ByteBuf b = alloc.buffer(128);
    b.writeByte(Pdu.T_ICREQ).writeByte(0).writeByte(128).writeByte(0).writeIntLE(128);
    b.writeShortLE(0).writeByte(hpda).writeByte((hd ? 1 : 0) | (dd ? 2 : 0)).writeIntLE(maxr2t);
    b.writeZero(128 - b.writerIndex());
    write(b);
  }

  /** ICResp: PFV 0, CPDA, digests granted and MAXH2CDATA. */
  public void icResp(int cpda, boolean hd, boolean dd, int maxh2cdata) {
    ByteBuf b = alloc.buffer(128);
    b.writeByte(Pdu.T_ICRESP).writeByte(0).writeByte(128).writeByte(0).writeIntLE(128);
    b.writeShortLE(0).writeByte(cpda).writeByte((hd ? 1 : 0) | (dd ? 2 : 0)).writeIntLE(maxh2cdata);
    b.writeZero(128 - b.writerIndex());
    write(b);
  }

  /** H2CTermReq or C2HTermReq echoing up to 128 bytes of the offending header. Never digested. */
  public void termReq(int type, int fes, int fei, byte[] header) {
    int n = header == null ? 0 : Math.min(128, header.length);
    ByteBuf b = alloc.buffer(24 + n);
    b.writeByte(type).writeByte(0).writeByte(24).writeByte(0).writeIntLE(24 + n);
    b.writeShortLE(fes).writeIntLE(fei).writeZero(10);
    if (n > 0) {
      b.writeBytes(header, 0, n);
    }
    write(b);
  }

  /** Command capsule; {@code data} (may be null) is the in-capsule data. */
  public void capsuleCmd(Sqe sqe, ByteBuf data) {
    ByteBuf h = header(Pdu.T_CAPSULE_CMD, 0, 72, data);
    h.writeBytes(sqe.array());
    finish(h, 72, data);
  }

  /** Response capsule. */
  public void capsuleResp(Cqe cqe) {
    ByteBuf h = header(Pdu.T_CAPSULE_RESP, 0, 24, null);
    h.writeIntLE(cqe.dw0())
        .writeIntLE(cqe.dw1())
        .writeShortLE(cqe.sqhd())
        .writeShortLE(cqe.sqid())
        .writeShortLE(cqe.cid())
        .writeShortLE(cqe.status() << 1);
    finish(h, 24, null);
  }

  /** H2CData carrying {@code data} for bytes {@code datao..} of command {@code cccid}. */
  public void h2cData(int cccid, int ttag, int datao, ByteBuf data, boolean last) {
    ByteBuf h = header(Pdu.T_H2C_DATA, last ? Pdu.F_LAST_PDU : 0, 24, data);
    h.writeShortLE(cccid)
        .writeShortLE(ttag)
        .writeIntLE(datao)
        .writeIntLE(data.readableBytes())
        .writeIntLE(0);
    finish(h, 24, data);
  }

  /**
   * C2HData; {@code success} may only be set with {@code last} and when SQ flow control is
   * disabled.
   */
  public void c2hData(int cccid, int datao, ByteBuf data, boolean last, boolean success) {
    int flags = (last ? Pdu.F_LAST_PDU : 0) | (success ? Pdu.F_SUCCESS : 0);
    ByteBuf h = header(Pdu.T_C2H_DATA, flags, 24, data);
    h.writeShortLE(cccid)
        .writeShortLE(0)
        .writeIntLE(datao)
        .writeIntLE(data.readableBytes())
        .writeIntLE(0);
    finish(h, 24, data);
  }

  /** R2T asking for {@code r2tl} bytes at {@code r2to}. */
  public void r2t(int cccid, int ttag, int r2to, int r2tl) {
    ByteBuf h = header(Pdu.T_R2T, 0, 24, null);
    h.writeShortLE(cccid).writeShortLE(ttag).writeIntLE(r2to).writeIntLE(r2tl).writeIntLE(0);
    finish(h, 24, null);
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

  private int pdo(int hlen, ByteBuf data) {
    if (data == null || !data.isReadable()) {
      return 0;
    }
    int start = hlen + (hdgst ? 4 : 0);
    return (start + dataAlign - 1) / dataAlign * dataAlign;
  }

  private ByteBuf header(int type, int flags, int hlen, ByteBuf data) {
    boolean hasData = data != null && data.isReadable();
    int pdo = pdo(hlen, data);
    int headerBytes = hasData ? pdo : hlen + (hdgst ? 4 : 0);
    long plen = (long) headerBytes + (hasData ? data.readableBytes() + (ddgst ? 4 : 0) : 0);
    if (pdo > 255 || plen > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("PDU too large: PDO " + pdo + ", PLEN " + plen);
    }
    ByteBuf h = alloc.buffer(headerBytes);
    int f = flags | (hdgst ? Pdu.F_HDGST : 0) | (hasData && ddgst ? Pdu.F_DDGST : 0);
    h.writeByte(type).writeByte(f).writeByte(hlen).writeByte(pdo).writeIntLE((int) plen);
    return h;
  }

  private void finish(ByteBuf h, int hlen, ByteBuf data) {
    if (hdgst) {
      h.writeIntLE(Crc32c.of(h, 0, hlen));
    }
    boolean hasData = data != null && data.isReadable();
    if (hasData) {
      h.writeZero(pdo(hlen, data) - h.writerIndex());
    }
    write(h);
    if (data == null) {
      return;
    }
    if (!hasData) {
      data.release();
      return;
    }
    int crc = ddgst ? Crc32c.of(data, data.readerIndex(), data.readableBytes()) : 0;
    write(data);
    if (ddgst) {
      write(alloc.buffer(4).writeIntLE(crc));
    }
  }
}
