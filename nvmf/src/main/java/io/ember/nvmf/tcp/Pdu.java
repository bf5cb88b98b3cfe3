package io.ember.nvmf.tcp;

import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A decoded NVMe/TCP PDU (NVMe/TCP Transport Specification 1.0, section 3.6). PDUs that carry data
 * hold a retained slice of the receive buffer; whoever receives such a PDU must call {@link
 * #release()} once, after the data has been consumed (or {@link ByteBuf#retain()} the data first to
 * keep it longer).
 */
public sealed interface Pdu {
  int T_ICREQ = 0x00;
  int T_ICRESP = 0x01;
  int T_H2C_TERM = 0x02;
  int T_C2H_TERM = 0x03;
  int T_CAPSULE_CMD = 0x04;
  int T_CAPSULE_RESP = 0x05;
  int T_H2C_DATA = 0x06;
  int T_C2H_DATA = 0x07;
  int T_R2T = 0x09;

  int F_HDGST = 0x01;
  int F_DDGST = 0x02;
  int F_LAST_PDU = 0x04;
  int F_SUCCESS = 0x08;

  // Fatal Error Status values of H2CTermReq/C2HTermReq.
  int FES_INVALID_HEADER_FIELD = 0x01;
  int FES_PDU_SEQUENCE = 0x02;
  int FES_HEADER_DIGEST = 0x03;
  int FES_DATA_OUT_OF_RANGE = 0x04;
  int FES_DATA_LIMIT_EXCEEDED = 0x05;
  int FES_UNSUPPORTED_PARAMETER = 0x06;

  /** PDU type byte. */
  int type();

  /** Releases the data this PDU holds, if any. Idempotence is not guaranteed: call once. */
  default void release() {}

  /** Describes a fatal error status in words. */
  static String fesName(int fes) {
    switch (fes) {
      case FES_INVALID_HEADER_FIELD:
        return "Invalid PDU Header Field";
      case FES_PDU_SEQUENCE:
        return "PDU Sequence Error";
      case FES_HEADER_DIGEST:
        return "Header Digest Error";
      case FES_DATA_OUT_OF_RANGE:
        return "Data Transfer Out of Range";
      case FES_DATA_LIMIT_EXCEEDED:
        return "Data Transfer Limit Exceeded";
      case FES_UNSUPPORTED_PARAMETER:
        return "Unsupported Parameter";
      default:
        return String.format("reserved FES 0x%x", fes);
    }
  }

  /** Initialize Connection Request (host to controller). MAXR2T is 0's based. */
  record IcReq(int pfv, int hpda, boolean hdgst, boolean ddgst, int maxr2t) implements Pdu {
    @Override
    public int type() {
      return T_ICREQ;
    }
  }

  /** Initialize Connection Response (controller to host). */
  record IcResp(int pfv, int cpda, boolean hdgst, boolean ddgst, int maxh2cdata) implements Pdu {
    @Override
    public int type() {
      return T_ICRESP;
    }
  }

  /**
   * H2CTermReq or C2HTermReq: the sender is about to close the connection. A value: equal when its
   * fields and its header bytes are.
   */
  final class TermReq implements Pdu {
    private final int type;
    private final int fes;
    private final int fei;
    private final byte[] header;

    /**
     * A TermReq as received.
     *
     * @param type {@link #T_H2C_TERM} or {@link #T_C2H_TERM}
     * @param fes fatal error status
     * @param fei fatal error information (for header field errors: byte offset of the field)
     * @param header up to 128 bytes of the PDU header in error; the PDU keeps this array (no copy)
     */
    public TermReq(int type, int fes, int fei, byte[] header) {
      this.type = type;
      this.fes = fes;
      this.fei = fei;
      this.header = header;
    }

    @Override
    public int type() {
      return type;
    }

    /** Fatal error status. */
    public int fes() {
      return fes;
    }

    /** Fatal error information (for header field errors: byte offset of the field). */
    public int fei() {
      return fei;
    }

    /**
     * Up to 128 bytes of the PDU header in error: the PDU's own array, not a copy, so not to be
     * changed.
     */
    public byte[] header() {
      return header;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof TermReq t
          && type == t.type
          && fes == t.fes
          && fei == t.fei
          && Arrays.equals(header, t.header);
    }

    @Override
    public int hashCode() {
      return ((type * 31 + fes) * 31 + fei) * 31 + Arrays.hashCode(header);
    }

    @Override
    public String toString() {
      return String.format(
          "TermReq[type=0x%02x, fes=0x%x, fei=0x%x, header=%s]",
          type, fes, fei, HexFormat.of().formatHex(header));
    }
  }

  /**
   * Command capsule: an SQE and optional in-capsule data.
   *
   * @param data in-capsule data (a retained slice) or null
   * @param dataDigestOk false when a negotiated data digest did not match
   */
  record CapsuleCmd(Sqe sqe, ByteBuf data, boolean dataDigestOk) implements Pdu {
    @Override
    public int type() {
      return T_CAPSULE_CMD;
    }

    @Override
    public void release() {
      if (data != null) {
        data.release();
      }
    }
  }

  /** Response capsule. */
  record CapsuleResp(Cqe cqe) implements Pdu {
    @Override
    public int type() {
      return T_CAPSULE_RESP;
    }
  }

  /** Host to controller data, answering an R2T. */
  record H2CData(
      int cccid, int ttag, int datao, int datal, boolean last, ByteBuf data, boolean dataDigestOk)
      implements Pdu {
    @Override
    public int type() {
      return T_H2C_DATA;
    }

    @Override
    public void release() {
      data.release();
    }
  }

  /** Controller to host data of a read-like command. */
  record C2HData(
      int cccid,
      int datao,
      int datal,
      boolean last,
      boolean success,
      ByteBuf data,
      boolean dataDigestOk)
      implements Pdu {
    @Override
    public int type() {
      return T_C2H_DATA;
    }

    @Override
    public void release() {
      data.release();
    }
  }

  /** Ready to Transfer: the controller asks for {@code r2tl} bytes at offset {@code r2to}. */
  record R2T(int cccid, int ttag, int r2to, int r2tl) implements Pdu {
    @Override
    public int type() {
      return T_R2T;
    }
  }
}
