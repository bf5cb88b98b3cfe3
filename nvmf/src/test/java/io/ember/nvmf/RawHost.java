package io.ember.nvmf;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * A deliberately dumb NVMe/TCP host on a plain socket, for sending the target things a real host
 * never would. Public so that the fuzzers in {@code io.ember.nvmf.tcp} can drive a target with it.
 */
public final class RawHost implements AutoCloseable {
  /** How long a read waits for the target, unless a caller says otherwise. */
  private static final int READ_TIMEOUT_MS = 5000;

  final Socket s;
  final DataInputStream in;
  final OutputStream out;

  /** MAXH2CDATA from the ICResp of {@link #handshake()}. */
  private int maxH2CData = 4096;

  public RawHost(String host, int port) throws IOException {
    s = new Socket(host, port);
    s.setSoTimeout(READ_TIMEOUT_MS);
    s.setTcpNoDelay(true);
    in = new DataInputStream(s.getInputStream());
    out = s.getOutputStream();
  }

  /** A received PDU: the whole frame, little endian. */
  public record Frame(int type, int flags, int hlen, int pdo, ByteBuffer b) {
    public int u16(int off) {
      return b.getShort(off) & 0xFFFF;
    }

    public int i32(int off) {
      return b.getInt(off);
    }
  }

  public void send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
  }

  /** A little-endian buffer over {@code pdu}, to write a PDU into it. */
  static ByteBuffer le(byte[] pdu) {
    return ByteBuffer.wrap(pdu).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** An ICReq PDU asking for the header and data digests given. */
  public static byte[] icReq(boolean hd, boolean dd) {
    byte[] pdu = new byte[128];
    le(pdu)
        .put((byte) 0)
        .put((byte) 0)
        .put((byte) 128)
        .put((byte) 0)
        .putInt(128)
        .putShort((short) 0)
        .put((byte) 0)
        .put((byte) ((hd ? 1 : 0) | (dd ? 2 : 0)))
        .putInt(0);
    return pdu;
  }

  /** A CapsuleCmd PDU without digests. */
  public static byte[] capsule(Sqe sqe, byte[] data) {
    int plen = 72 + (data == null ? 0 : data.length);
    byte[] pdu = new byte[plen];
    ByteBuffer b = le(pdu);
    b.put((byte) 4).put((byte) 0).put((byte) 72).put((byte) (data == null ? 0 : 72)).putInt(plen);
    b.put(sqe.array());
    if (data != null) {
      b.put(data);
    }
    return pdu;
  }

  static int crc(byte[] b, int off, int len) {
    CRC32C c = new CRC32C();
    c.update(b, off, len);
    return (int) c.getValue();
  }

  public Frame read() throws IOException {
    byte[] ch = new byte[8];
    in.readFully(ch);
    ByteBuffer h = ByteBuffer.wrap(ch).order(ByteOrder.LITTLE_ENDIAN);
    int plen = h.getInt(4);
    if (plen < 8 || plen > (1 << 24)) {
      throw new IOException("target sent PLEN " + plen);
    }
    byte[] all = new byte[plen];
    System.arraycopy(ch, 0, all, 0, 8);
    in.readFully(all, 8, plen - 8);
    return new Frame(
        ch[0] & 0xFF,
        ch[1] & 0xFF,
        ch[2] & 0xFF,
        ch[3] & 0xFF,
        ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN));
  }

  public void handshake() throws IOException {
    send(icReq(false, false));
    Frame f = read();
    if (f.type() != 1) {
      throw new IOException("expected ICResp, got type " + f.type());
    }
    maxH2CData = f.i32(12);
  }

  /** Connects the admin queue to {@code nqn} and returns the CQE status field. */
  public int connectAdmin(String nqn, String hostNqn, int kato) throws IOException {
    return responseStatus(connect(nqn, hostNqn, 0, 0xFFFF, kato));
  }

  /**
   * Sends Fabrics Connect for queue {@code qid} of controller {@code cntlid} (0xFFFF on the admin
   * queue) with 32 entries and a zero host identifier, and returns the response (DW0 holds the
   * CNTLID).
   */
  public Frame connect(String nqn, String hostNqn, int qid, int cntlid, int kato)
      throws IOException {
    send(capsule(connectSqe(qid, kato), connectData(nqn, hostNqn, cntlid)));
    return read();
  }

  /**
   * Opens this connection as I/O queue 1 of controller {@code cntlid}: ICReq, asking for data
   * digests if {@code dataDigest}, and Connect; returns Connect's status.
   *
   * @throws IOException when the target answers with something else, or does not grant the digest
   */
  public int connectIo(String nqn, String hostNqn, int cntlid, boolean dataDigest)
      throws IOException {
    send(icReq(false, dataDigest));
    Frame ic = read();
    if (ic.type() != 1) {
      throw new IOException("expected ICResp, got type " + ic.type());
    }
    if (dataDigest && (ic.b().get(11) & 2) == 0) {
      throw new IOException("the target did not grant data digests");
    }
    maxH2CData = ic.i32(12);
    Sqe sqe = connectSqe(1, 0);
    byte[] data = connectData(nqn, hostNqn, cntlid);
    send(dataDigest ? capsuleWithDataDigest(sqe, data) : capsule(sqe, data));
    return responseStatus(read());
  }

  /** A CapsuleCmd PDU with in-capsule data and its data digest. */
  public static byte[] capsuleWithDataDigest(Sqe sqe, byte[] data) {
    byte[] pdu = new byte[72 + data.length + 4];
    le(pdu)
        .put((byte) 4)
        .put((byte) 2) // DDGSTF
        .put((byte) 72)
        .put((byte) 72)
        .putInt(pdu.length)
        .put(sqe.array())
        .put(data)
        .putInt(crc(data, 0, data.length));
    return pdu;
  }

  /**
   * A Fabrics Connect command for queue {@code qid} with 32 entries; its data is in the capsule.
   */
  public static Sqe connectSqe(int qid, int kato) {
    return new Sqe()
        .opcode(Nvme.FABRICS)
        .flags(Nvme.PSDT_SGL)
        .cid(1)
        .fctype(Nvme.FCTYPE_CONNECT)
        .shortAt(42, qid)
        .shortAt(44, 31)
        .intAt(48, kato)
        .sgl(0, 1024, Nvme.SGL_INCAPSULE);
  }

  /** Fabrics Connect's 1024 bytes of data, with a zero host identifier. */
  public static byte[] connectData(String nqn, String hostNqn, int cntlid) {
    byte[] data = new byte[1024];
    ByteBuffer d = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    d.putShort(16, (short) cntlid);
    d.put(256, nqn.getBytes(StandardCharsets.US_ASCII));
    d.put(512, hostNqn.getBytes(StandardCharsets.US_ASCII));
    return data;
  }

  /**
   * On an admin queue: sets CC.EN with 64-byte SQEs and 16-byte CQEs; returns the CQE status field.
   */
  public int enable() throws IOException {
    send(capsule(enableSqe(), null));
    return responseStatus(read());
  }

  /** A Property Set of CC that enables the controller with 64-byte SQEs and 16-byte CQEs. */
  public static Sqe enableSqe() {
    return new Sqe()
        .opcode(Nvme.FABRICS)
        .flags(Nvme.PSDT_SGL)
        .cid(2)
        .fctype(Nvme.FCTYPE_PROPERTY_SET)
        .intAt(44, Nvme.PROP_CC)
        .longAt(48, (4 << 20) | (6 << 16) | 1)
        .sgl(0, 0, Nvme.SGL_TRANSPORT);
  }

  /**
   * Sends {@code sqe} (with {@code data} in the capsule, or none) and waits for its completion:
   * answers R2Ts with zeroes, skips C2HData, and returns the CQE status field (0 for C2HData with
   * the SUCCESS flag).
   *
   * @throws IOException when the target sends something else (C2HTermReq, a completion for another
   *     command), closes the connection, or says nothing within the socket timeout
   */
  public int command(Sqe sqe, byte[] data) throws IOException {
    int cid = sqe.cid();
    send(capsule(sqe, data));
    while (true) {
      Frame f = read();
      if (f.type() == 5 && f.u16(20) == cid) {
        return responseStatus(f);
      } else if (f.type() == 7 && f.u16(8) == cid) {
        if ((f.flags() & 8) != 0) {
          return 0;
        }
      } else if (f.type() == 9 && f.u16(8) == cid) {
        h2cZeroes(cid, f.u16(10), f.i32(12), f.i32(16));
      } else if (f.type() == 3) {
        throw new IOException(String.format("C2HTermReq FES 0x%x FEI 0x%x", f.u16(8), f.i32(10)));
      } else {
        throw new IOException(
            "PDU type " + f.type() + " for CID " + f.u16(8) + " while waiting for " + cid);
      }
    }
  }

  /**
   * This connection as a queue that commands are sent on one at a time, data out in the capsule and
   * data in gathered from C2HData: enough to run an exchange such as DH-HMAC-CHAP by hand. A
   * command that completes with an error status throws {@link io.ember.nvmf.NvmeStatusException}.
   */
  public io.ember.nvmf.host.ControllerSetup.AdminPort port() {
    int[] nextCid = {100};
    return (sqe, data, dataOut) -> {
      try {
        int cid = nextCid[0]++;
        int len = data == null ? 0 : data.remaining();
        sqe.cid(cid).flags(Nvme.PSDT_SGL);
        byte[] outData = null;
        if (dataOut && len > 0) {
          outData = new byte[len];
          data.duplicate().get(outData);
          sqe.sgl(0, len, Nvme.SGL_INCAPSULE);
        } else {
          sqe.sgl(0, len, Nvme.SGL_TRANSPORT);
        }
        send(capsule(sqe, outData));
        while (true) {
          Frame f = read();
          if (f.type() == 5 && f.u16(20) == cid) {
            int status = responseStatus(f);
            if (status != 0) {
              throw new io.ember.nvmf.NvmeStatusException("raw command", status, false);
            }
            return new io.ember.nvmf.spec.Cqe(f.i32(8), f.i32(12), 0, 0, cid, 0);
          } else if (f.type() == 7 && f.u16(8) == cid) {
            int at = f.i32(12);
            int n = f.i32(16);
            for (int i = 0; i < n; i++) {
              data.put(data.position() + at + i, f.b().get(f.pdo() + i));
            }
            if ((f.flags() & 8) != 0) {
              return new io.ember.nvmf.spec.Cqe(0, 0, 0, 0, cid, 0);
            }
          } else {
            throw new IOException("PDU type " + f.type() + " while waiting for command " + cid);
          }
        }
      } catch (io.ember.nvmf.NvmfException e) {
        throw e;
      } catch (IOException e) {
        throw new io.ember.nvmf.NvmfException(e.getMessage(), e);
      }
    };
  }

  /** Answers an R2T with H2CData PDUs of zeroes, at most MAXH2CDATA each. */
  private void h2cZeroes(int cid, int ttag, int offset, int length) throws IOException {
    for (int off = 0; off < length; ) {
      int n = Math.min(maxH2CData, length - off);
      byte[] pdu = new byte[24 + n];
      le(pdu)
          .put((byte) 6)
          .put((byte) (off + n == length ? 4 : 0))
          .put((byte) 24)
          .put((byte) 24)
          .putInt(24 + n)
          .putShort((short) cid)
          .putShort((short) ttag)
          .putInt(offset + off)
          .putInt(n)
          .putInt(0);
      out.write(pdu);
      off += n;
    }
    out.flush();
  }

  public static int responseStatus(Frame f) throws IOException {
    if (f.type() != 5) {
      throw new IOException("expected CapsuleResp, got type " + f.type());
    }
    return f.u16(22) >>> 1;
  }

  /** True when the target closed the connection (EOF or reset) within the socket timeout. */
  public boolean closedByPeer() throws IOException {
    try {
      while (true) {
        if (in.read() < 0) {
          return true;
        }
      }
    } catch (EOFException e) {
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException e) {
      return true; // connection reset
    }
  }

  /** As {@link #closedByPeer()}, waiting up to {@code within} instead of the socket timeout. */
  public boolean closedByPeer(java.time.Duration within) throws IOException {
    s.setSoTimeout((int) within.toMillis());
    try {
      return closedByPeer();
    } finally {
      if (!s.isClosed()) {
        s.setSoTimeout(READ_TIMEOUT_MS);
      }
    }
  }

  @Override
  public void close() throws IOException {
    s.close();
  }
}
