package io.ember.nvmf.tcp;

import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.UncheckedBooleanSupplier;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Cuts the byte stream into PDUs and decodes them into {@link Pdu}s. Every length is checked
 * against the PDU type, against the bytes present and against the negotiated maxima before anything
 * is waited for or allocated, so a peer that lies about PLEN cannot make us buffer more than one
 * legitimate PDU. The first violation throws a {@link PduException} (wrapped by Netty in a
 * DecoderException) and from then on all input is discarded: the connection is dead and the handler
 * is expected to send a TermReq and close.
 *
 * <p>One instance per connection; not sharable. Digests are off until {@link #digests(boolean,
 * boolean)} is called, which the connection handler does while handling ICReq/ICResp, before the
 * next PDU is decoded.
 */
public final class PduFrameDecoder extends ByteToMessageDecoder {
  /** Largest header length of any PDU type (ICReq/ICResp). */
  private static final int MAX_HLEN = 128;

  /** Largest TermReq: 24-byte header plus up to 128 bytes of the offending header. */
  private static final int MAX_TERM_PLEN = 24 + 128;

  /**
   * Padding a peer may put between header and data (PDA is at most 31, i.e. 128-byte alignment).
   */
  private static final int MAX_PAD = 128;

  /**
   * H2CData PDUs with less data than this are decoded whole even where they could land: their bytes
   * come in a socket read or two, and a copy of them costs less than the reads landing takes.
   */
  public static final int MIN_LANDING_BYTES = 32 << 10;

  /**
   * Says where the data of a host-to-controller data PDU may be received straight from the socket:
   * memory of exactly {@code datal} bytes (from its position 0) where the data belongs, or null to
   * decode the PDU as usual. Called on the channel's event loop, once the PDU's header has arrived
   * and checked (fields and header digest) and before its data has all arrived. Once it returns
   * memory, the data's bytes go there and nowhere else, and the PDU is then delivered with an empty
   * {@code data} buffer; if the connection ends first, part of the memory may hold part of them.
   */
  public interface DataLanding {
    ByteBuffer destination(int cccid, int ttag, int datao, int datal, boolean last);
  }

  private final boolean controllerSide;

  private DataLanding landing;

  /** While data lands: the PDU to deliver once it has, its memory, and the bytes there so far. */
  private Pdu.H2CData landingPdu;

  private ByteBuffer landingMemory;
  private int landed;

  /** The last receive buffer handed out for landing data, to know it when it comes back. */
  private ByteBuf handedOut;

  /** The PDU at the start of the buffer was offered to {@link #landing} and declined. */
  private boolean declined;

  /**
   * Data just landed, and the next socket read takes only a PDU header: when another landing PDU
   * follows (a stream of large writes), all of its data then lands, none of it read along with the
   * header and copied.
   */
  private boolean headerNext;

  private boolean hdgst;
  private boolean ddgst;
  private boolean icDone;
  private boolean failed;
  private int maxCapsuleData;
  private int maxDataPdu;

  /**
   * @param controllerSide true on the target (accepts host-to-controller PDUs), false on the host
   * @param maxCapsuleData largest in-capsule data accepted (target side)
   * @param maxDataPdu largest data length of one H2CData (target) or C2HData (host) PDU
   */
  public PduFrameDecoder(boolean controllerSide, int maxCapsuleData, int maxDataPdu) {
    this.controllerSide = controllerSide;
    this.maxCapsuleData = maxCapsuleData;
    this.maxDataPdu = maxDataPdu;
    // A data PDU larger than one socket read (128 KiB against Netty's 64 KiB reads) would be copied
    // whole into a merged buffer before it is decoded; gathering the reads' buffers as components
    // hands the data on as it came from the socket.
    setCumulator(COMPOSITE_CUMULATOR);
  }

  /**
   * Turns on the negotiated header and data digests for all PDUs after the ICReq/ICResp exchange.
   */
  public void digests(boolean header, boolean data) {
    this.hdgst = header;
    this.ddgst = data;
  }

  /**
   * Changes the data limits (e.g. after the admin queue connected and the in-capsule size is
   * known).
   */
  public void limits(int maxCapsuleData, int maxDataPdu) {
    this.maxCapsuleData = maxCapsuleData;
    this.maxDataPdu = maxDataPdu;
  }

  /**
   * Lets {@code landing} take the data of large H2CData PDUs straight from the socket (target side,
   * without data digests, which would have to be checked before the data may land): the channel's
   * next socket reads are then handed the destination's memory as their buffer, each no larger than
   * the bytes still to come, so the kernel copies the data there and the next PDU's bytes never
   * land. Call before the channel reads.
   */
  public void landData(Channel ch, DataLanding landing) {
    this.landing = landing;
    RecvByteBufAllocator usual = ch.config().getRecvByteBufAllocator();
    ch.config().setRecvByteBufAllocator(new IntoLanding(usual, this));
  }

  /**
   * Discards all input from now on, a PDU's data landing included: for a connection that is being
   * terminated, so that nothing it still sends reaches a namespace.
   */
  public void discardInput() {
    failed = true;
    landingPdu = null;
    landingMemory = null;
    headerNext = false;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    if (failed) {
      in.skipBytes(in.readableBytes());
      return;
    }
    try {
      if (landing != null && !declined && startLanding(in)) {
        return;
      }
      Pdu pdu = decodeOne(in);
      if (pdu != null) {
        declined = false;
        out.add(pdu);
      }
    } catch (PduException e) {
      failed = true;
      in.skipBytes(in.readableBytes());
      throw e;
    }
  }

  /**
   * Decodes one PDU from {@code in} if it is complete, else returns null and consumes nothing.
   * Public so that the fuzz tests can drive it without a channel.
   *
   * @throws PduException on any violation
   */
  public Pdu decodeOne(ByteBuf in) {
    if (in.readableBytes() < 8) {
      return null;
    }
    int r = in.readerIndex();
    int type = in.getUnsignedByte(r);
    int hlen = in.getUnsignedByte(r + 2);
    int pdo = in.getUnsignedByte(r + 3);
    long plen = in.getUnsignedIntLE(r + 4);
    checkCommonHeader(in, r, type, hlen, pdo, plen);
    if (in.readableBytes() < plen) {
      return null;
    }
    // Parsing is done before this returns, and what it keeps (a PDU's data) it retains itself, so
    // the frame needs no reference count of its own: one atomic update less per PDU.
    ByteBuf frame = in.readSlice((int) plen);
    return parse(frame, type, frame.getUnsignedByte(1), hlen, pdo, (int) plen);
  }

  /**
   * Offers an H2CData PDU whose header has arrived and whose data has not all arrived to {@link
   * #landing}; if it takes the data, moves the bytes already here into its memory and returns true.
   */
  private boolean startLanding(ByteBuf in) {
    int r = in.readerIndex();
    if (ddgst || in.readableBytes() < 24 || in.getUnsignedByte(r) != Pdu.T_H2C_DATA) {
      return false;
    }
    int hlen = in.getUnsignedByte(r + 2);
    int pdo = in.getUnsignedByte(r + 3);
    long plen = in.getUnsignedIntLE(r + 4);
    checkCommonHeader(in, r, Pdu.T_H2C_DATA, hlen, pdo, plen);
    if (in.readableBytes() >= plen || in.readableBytes() < pdo) {
      return false; // whole already (decoded as usual), or the header not yet
    }
    declined = true; // whatever follows, this PDU is not offered again
    int hd = hd(Pdu.T_H2C_DATA);
    if (hd != 0 && Crc32c.of(in, r, hlen) != in.getIntLE(r + hlen)) {
      return false; // decodeOne reports it once the PDU is whole
    }
    int datao = in.getIntLE(r + 12);
    int datal = in.getIntLE(r + 16);
    if (datao < 0 || datal != plen - pdo || datal < MIN_LANDING_BYTES) {
      return false;
    }
    int cccid = in.getUnsignedShortLE(r + 8);
    int ttag = in.getUnsignedShortLE(r + 10);
    boolean last = (in.getUnsignedByte(r + 1) & Pdu.F_LAST_PDU) != 0;
    ByteBuffer memory = landing.destination(cccid, ttag, datao, datal, last);
    if (memory == null) {
      return false;
    }
    landingPdu = new Pdu.H2CData(cccid, ttag, datao, datal, last, Unpooled.EMPTY_BUFFER, true);
    in.skipBytes(pdo);
    landed = in.readableBytes();
    ByteBuffer start = memory.duplicate();
    start.position(0).limit(landed);
    in.readBytes(start);
    landingMemory = memory;
    return true;
  }

  /** The destination's memory from its first byte not yet received, for the next socket read. */
  private ByteBuf landingBuffer() {
    ByteBuffer rest = landingMemory.duplicate();
    rest.limit(landingPdu.datal()).position(landed);
    handedOut = Unpooled.wrappedBuffer(rest.slice()).clear();
    return handedOut;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
    if (msg == handedOut && landingPdu == null) {
      ((ByteBuf) msg).release(); // landed after discardInput: the bytes are dropped
      handedOut = null;
      return;
    }
    if (landingPdu == null || msg != handedOut) {
      super.channelRead(ctx, msg);
      return;
    }
    ByteBuf got = (ByteBuf) msg;
    landed += got.readableBytes();
    got.release();
    handedOut = null;
    if (landed == landingPdu.datal()) {
      Pdu.H2CData done = landingPdu;
      landingPdu = null;
      landingMemory = null;
      declined = false;
      headerNext = true;
      ctx.fireChannelRead(done);
    }
  }

  /**
   * The connection's receive buffers: the usual ones, except while data lands, when each read gets
   * the destination's memory for the rest of that data and no more.
   */
  private static final class IntoLanding implements RecvByteBufAllocator {
    private final RecvByteBufAllocator usual;
    private final PduFrameDecoder decoder;

    IntoLanding(RecvByteBufAllocator usual, PduFrameDecoder decoder) {
      this.usual = usual;
      this.decoder = decoder;
    }

    @Override
    @SuppressWarnings("deprecation") // Netty's interface still returns the deprecated type
    public Handle newHandle() {
      return new IntoLandingHandle((ExtendedHandle) usual.newHandle(), decoder);
    }
  }

  private static final class IntoLandingHandle extends RecvByteBufAllocator.DelegatingHandle
      implements RecvByteBufAllocator.ExtendedHandle {
    private final RecvByteBufAllocator.ExtendedHandle usual;
    private final PduFrameDecoder decoder;

    IntoLandingHandle(RecvByteBufAllocator.ExtendedHandle usual, PduFrameDecoder decoder) {
      super(usual);
      this.usual = usual;
      this.decoder = decoder;
    }

    @Override
    public ByteBuf allocate(ByteBufAllocator alloc) {
      if (decoder.landingPdu != null) {
        return decoder.landingBuffer();
      }
      if (decoder.headerNext) {
        decoder.headerNext = false;
        return alloc.ioBuffer(24 + decoder.hd(Pdu.T_H2C_DATA));
      }
      return usual.allocate(alloc);
    }

    @Override
    public void reset(ChannelConfig config) {
      usual.reset(config);
    }

    @Override
    public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
      return usual.continueReading(maybeMoreDataSupplier);
    }
  }

  private static PduException bad(int fes, int fei, String msg, ByteBuf in, int r) {
    int n = Math.min(MAX_HLEN, in.writerIndex() - r);
    byte[] hdr = new byte[Math.max(0, n)];
    in.getBytes(r, hdr);
    return new PduException(fes, fei, msg, hdr);
  }

  private int hd(int type) {
    return hdgst
            && type != Pdu.T_ICREQ
            && type != Pdu.T_ICRESP
            && type != Pdu.T_H2C_TERM
            && type != Pdu.T_C2H_TERM
        ? 4
        : 0;
  }

  private void checkCommonHeader(ByteBuf in, int r, int type, int hlen, int pdo, long plen) {
    boolean allowed =
        controllerSide
            ? type == Pdu.T_ICREQ
                || type == Pdu.T_H2C_TERM
                || type == Pdu.T_CAPSULE_CMD
                || type == Pdu.T_H2C_DATA
            : type == Pdu.T_ICRESP
                || type == Pdu.T_C2H_TERM
                || type == Pdu.T_CAPSULE_RESP
                || type == Pdu.T_C2H_DATA
                || type == Pdu.T_R2T;
    if (!allowed) {
      throw bad(
          Pdu.FES_INVALID_HEADER_FIELD,
          0,
          String.format("PDU type 0x%02x is not valid in this direction", type),
          in,
          r);
    }
    boolean term = type == Pdu.T_H2C_TERM || type == Pdu.T_C2H_TERM;
    boolean ic = type == Pdu.T_ICREQ || type == Pdu.T_ICRESP;
    if (!icDone && !ic && !term) {
      throw bad(
          Pdu.FES_PDU_SEQUENCE,
          0,
          String.format("PDU type 0x%02x before the ICReq/ICResp exchange", type),
          in,
          r);
    }
    if (icDone && ic) {
      throw bad(Pdu.FES_PDU_SEQUENCE, 0, "a second ICReq/ICResp on one connection", in, r);
    }
    int expectHlen = ic ? 128 : type == Pdu.T_CAPSULE_CMD ? 72 : 24;
    if (hlen != expectHlen) {
      throw bad(
          Pdu.FES_INVALID_HEADER_FIELD,
          2,
          String.format("HLEN %d for PDU type 0x%02x, expected %d", hlen, type, expectHlen),
          in,
          r);
    }
    int hd = hd(type);
    int dd = ddgst ? 4 : 0;
    long min;
    long max;
    switch (type) {
      case Pdu.T_ICREQ:
      case Pdu.T_ICRESP:
        min = max = 128;
        break;
      case Pdu.T_H2C_TERM:
      case Pdu.T_C2H_TERM:
        min = 24;
        max = MAX_TERM_PLEN;
        break;
      case Pdu.T_CAPSULE_CMD:
        min = (long) hlen + hd;
        max = (long) hlen + hd + MAX_PAD + maxCapsuleData + dd;
        break;
      case Pdu.T_H2C_DATA:
      case Pdu.T_C2H_DATA:
        min = (long) hlen + hd + 1 + dd;
        max = (long) hlen + hd + MAX_PAD + maxDataPdu + dd;
        break;
      default: // CapsuleResp, R2T
        min = max = (long) hlen + hd;
        break;
    }
    if (plen < min) {
      throw bad(
          Pdu.FES_INVALID_HEADER_FIELD,
          4,
          String.format(
              "PLEN %d shorter than the %d bytes a PDU of type 0x%02x needs", plen, min, type),
          in,
          r);
    }
    if (plen > max) {
      int fes = type == Pdu.T_H2C_DATA ? Pdu.FES_DATA_LIMIT_EXCEEDED : Pdu.FES_INVALID_HEADER_FIELD;
      throw bad(
          fes,
          4,
          String.format(
              "PLEN %d exceeds the %d bytes allowed for PDU type 0x%02x", plen, max, type),
          in,
          r);
    }
    boolean hasData = plen > hlen + hd && !ic && !term;
    if (hasData && (pdo < hlen + hd || pdo + dd >= plen)) {
      throw bad(
          Pdu.FES_INVALID_HEADER_FIELD,
          3,
          String.format("PDO %d outside the PDU (HLEN %d, PLEN %d)", pdo, hlen, plen),
          in,
          r);
    }
  }

  private Pdu parse(ByteBuf f, int type, int flags, int hlen, int pdo, int plen) {
    int hd = hd(type);
    if (hd != 0) {
      int want = Crc32c.of(f, 0, hlen);
      int got = f.getIntLE(hlen);
      if (want != got) {
        throw bad(
            Pdu.FES_HEADER_DIGEST,
            0,
            String.format(
                "header digest mismatch on PDU type 0x%02x: received 0x%08x, computed 0x%08x",
                type, got, want),
            f,
            0);
      }
    }
    int dd = ddgst ? 4 : 0;
    switch (type) {
      case Pdu.T_ICREQ:
        {
          icDone = true;
          int dg = f.getUnsignedByte(11);
          return new Pdu.IcReq(
              f.getUnsignedShortLE(8),
              f.getUnsignedByte(10),
              (dg & 1) != 0,
              (dg & 2) != 0,
              f.getIntLE(12));
        }
      case Pdu.T_ICRESP:
        {
          icDone = true;
          int dg = f.getUnsignedByte(11);
          return new Pdu.IcResp(
              f.getUnsignedShortLE(8),
              f.getUnsignedByte(10),
              (dg & 1) != 0,
              (dg & 2) != 0,
              f.getIntLE(12));
        }
      case Pdu.T_H2C_TERM:
      case Pdu.T_C2H_TERM:
        {
          byte[] hdr = new byte[plen - 24];
          f.getBytes(24, hdr);
          return new Pdu.TermReq(type, f.getUnsignedShortLE(8), f.getIntLE(10), hdr);
        }
      case Pdu.T_CAPSULE_CMD:
        {
          byte[] sqe = new byte[Sqe.SIZE];
          f.getBytes(8, sqe);
          ByteBuf data = null;
          boolean ok = true;
          if (plen > hlen + hd) {
            int len = plen - pdo - dd;
            ok = dd == 0 || Crc32c.of(f, pdo, len) == f.getIntLE(plen - 4);
            data = f.retainedSlice(pdo, len);
          }
          return new Pdu.CapsuleCmd(new Sqe(sqe), data, ok);
        }
      case Pdu.T_CAPSULE_RESP:
        return new Pdu.CapsuleResp(
            new Cqe(
                f.getIntLE(8),
                f.getIntLE(12),
                f.getUnsignedShortLE(16),
                f.getUnsignedShortLE(18),
                f.getUnsignedShortLE(20),
                f.getUnsignedShortLE(22) >>> 1));
      case Pdu.T_R2T:
        {
          int r2tl = f.getIntLE(16);
          int r2to = f.getIntLE(12);
          if (r2tl <= 0 || r2to < 0) {
            throw bad(
                Pdu.FES_INVALID_HEADER_FIELD,
                r2tl <= 0 ? 16 : 12,
                String.format(
                    "R2T with offset %d and length %d", r2to & 0xFFFFFFFFL, r2tl & 0xFFFFFFFFL),
                f,
                0);
          }
          return new Pdu.R2T(f.getUnsignedShortLE(8), f.getUnsignedShortLE(10), r2to, r2tl);
        }
      case Pdu.T_H2C_DATA:
      case Pdu.T_C2H_DATA:
        {
          int datao = f.getIntLE(12);
          int datal = f.getIntLE(16);
          int len = plen - pdo - dd;
          if (datal != len) {
            throw bad(
                Pdu.FES_INVALID_HEADER_FIELD,
                16,
                String.format(
                    "DATAL %d does not match the %d data bytes in the PDU",
                    datal & 0xFFFFFFFFL, len),
                f,
                0);
          }
          if (datao < 0) {
            throw bad(
                Pdu.FES_DATA_OUT_OF_RANGE,
                12,
                String.format("DATAO %d out of range", datao & 0xFFFFFFFFL),
                f,
                0);
          }
          boolean ok = dd == 0 || Crc32c.of(f, pdo, len) == f.getIntLE(plen - 4);
          ByteBuf data = f.retainedSlice(pdo, len);
          boolean last = (flags & Pdu.F_LAST_PDU) != 0;
          if (type == Pdu.T_H2C_DATA) {
            return new Pdu.H2CData(
                f.getUnsignedShortLE(8), f.getUnsignedShortLE(10), datao, datal, last, data, ok);
          }
          return new Pdu.C2HData(
              f.getUnsignedShortLE(8), datao, datal, last, (flags & Pdu.F_SUCCESS) != 0, data, ok);
        }
      default:
        throw new IllegalStateException("unreachable: type checked in the common header");
    }
  }
}
