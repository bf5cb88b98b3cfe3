package io.ember.nvmf.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The messages of DH-HMAC-CHAP (NVMe Base Specification, "DH-HMAC-CHAP Protocol") and the responses
 * both sides compute. Layouts and hash inputs are the ones Linux's host and target use; multi-byte
 * fields are little-endian, DH values big-endian.
 */
final class Dhchap {
  static final int TYPE_COMMON = 0x00;
  static final int TYPE_DHCHAP = 0x01;
  static final int ID_NEGOTIATE = 0x00;
  static final int ID_CHALLENGE = 0x01;
  static final int ID_REPLY = 0x02;
  static final int ID_SUCCESS1 = 0x03;
  static final int ID_SUCCESS2 = 0x04;
  static final int ID_FAILURE2 = 0xF0;
  static final int ID_FAILURE1 = 0xF1;
  static final int PROTOCOL_DHCHAP = 0x01;

  /** Reason code explanations of Failure1 and Failure2. */
  static final int FAILED = DhchapException.FAILED;

  static final int NOT_USABLE = 0x02;
  static final int CONCAT_MISMATCH = DhchapException.CONCAT_MISMATCH;
  static final int HASH_UNUSABLE = 0x04;
  static final int DHGROUP_UNUSABLE = 0x05;
  static final int INCORRECT_PAYLOAD = 0x06;
  static final int INCORRECT_MESSAGE = 0x07;

  /** What hosts post for every AUTH_Receive: enough for an ffdhe8192 challenge. */
  static final int RECEIVE_LENGTH = 4096;

  private static final byte[] HOST_LABEL = "HostHost".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] CTRL_LABEL = "Controller".getBytes(StandardCharsets.US_ASCII);

  private Dhchap() {}

  static String reason(int code) {
    switch (code) {
      case FAILED:
        return "authentication failed";
      case NOT_USABLE:
        return "authentication protocol not usable";
      case CONCAT_MISMATCH:
        return "secure channel concatenation mismatch";
      case HASH_UNUSABLE:
        return "no hash function both sides accept";
      case DHGROUP_UNUSABLE:
        return "no DH group both sides accept";
      case INCORRECT_PAYLOAD:
        return "incorrect payload";
      case INCORRECT_MESSAGE:
        return "incorrect protocol message";
      default:
        return "reason " + code;
    }
  }

  static ByteBuffer le(byte[] b) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static ByteBuffer header(byte[] m, int type, int id, int tid) {
    ByteBuffer b = le(m);
    b.put(0, (byte) type).put(1, (byte) id).putShort(4, (short) tid);
    return b;
  }

  // --------------------------------------------------------------------------------------------
  // messages

  /** AUTH_Negotiate: one DH-HMAC-CHAP descriptor listing the hashes and groups the host accepts. */
  record Negotiate(int tid, int scc, List<Integer> hashIds, List<Integer> groupIds) {
    byte[] encode() {
      byte[] out = new byte[72];
      ByteBuffer b = header(out, TYPE_COMMON, ID_NEGOTIATE, tid);
      b.put(6, (byte) scc).put(7, (byte) 1);
      b.put(8, (byte) PROTOCOL_DHCHAP)
          .put(10, (byte) hashIds.size())
          .put(11, (byte) groupIds.size());
      for (int i = 0; i < hashIds.size(); i++) {
        b.put(12 + i, hashIds.get(i).byteValue());
      }
      for (int i = 0; i < groupIds.size(); i++) {
        b.put(42 + i, groupIds.get(i).byteValue());
      }
      return out;
    }

    static Negotiate parse(byte[] m) throws DhchapException {
      if (m.length < 8 + 64) {
        throw new DhchapException("AUTH_Negotiate of " + m.length + " bytes", INCORRECT_PAYLOAD);
      }
      ByteBuffer b = le(m);
      int napd = b.get(7) & 0xFF;
      if (napd < 1 || m.length < 8 + 64 * napd) {
        throw new DhchapException(
            "AUTH_Negotiate lists " + napd + " protocols in " + m.length + " bytes",
            INCORRECT_PAYLOAD);
      }
      for (int d = 0; d < napd; d++) {
        int at = 8 + 64 * d;
        if ((b.get(at) & 0xFF) != PROTOCOL_DHCHAP) {
          continue;
        }
        int halen = b.get(at + 2) & 0xFF;
        int dhlen = b.get(at + 3) & 0xFF;
        if (halen > 30 || dhlen > 30) {
          throw new DhchapException("AUTH_Negotiate lists too many ids", INCORRECT_PAYLOAD);
        }
        List<Integer> hashes = new ArrayList<>();
        for (int i = 0; i < halen; i++) {
          hashes.add(b.get(at + 4 + i) & 0xFF);
        }
        List<Integer> groups = new ArrayList<>();
        for (int i = 0; i < dhlen; i++) {
          groups.add(b.get(at + 34 + i) & 0xFF);
        }
        return new Negotiate(b.getShort(4) & 0xFFFF, b.get(6) & 0xFF, hashes, groups);
      }
      throw new DhchapException("AUTH_Negotiate does not offer DH-HMAC-CHAP", NOT_USABLE);
    }
  }

  /** DH-HMAC-CHAP_Challenge: the controller's choice, its challenge C1 and DH value. */
  @SuppressWarnings("ArrayRecordComponent") // built once, read once
  record Challenge(int tid, int hashId, int hl, int groupId, int seq, byte[] c1, byte[] dhValue) {
    byte[] encode() {
      byte[] out = new byte[16 + hl + dhValue.length];
      ByteBuffer b = header(out, TYPE_DHCHAP, ID_CHALLENGE, tid);
      b.put(6, (byte) hl).put(8, (byte) hashId).put(9, (byte) groupId);
      b.putShort(10, (short) dhValue.length).putInt(12, seq);
      b.put(16, c1).put(16 + hl, dhValue);
      return out;
    }

    static Challenge parse(byte[] m) throws DhchapException {
      if (m.length < 16) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Challenge of " + m.length + " bytes", INCORRECT_PAYLOAD);
      }
      ByteBuffer b = le(m);
      int hl = b.get(6) & 0xFF;
      int dhvlen = b.getShort(10) & 0xFFFF;
      if (m.length < 16 + hl + dhvlen) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Challenge claims " + (16 + hl + dhvlen) + " bytes in " + m.length,
            INCORRECT_PAYLOAD);
      }
      byte[] c1 = new byte[hl];
      byte[] dhv = new byte[dhvlen];
      b.get(16, c1).get(16 + hl, dhv);
      return new Challenge(
          b.getShort(4) & 0xFFFF, b.get(8) & 0xFF, hl, b.get(9) & 0xFF, b.getInt(12), c1, dhv);
    }
  }

  /** DH-HMAC-CHAP_Reply: the host's response R1, its own challenge C2 (if any) and DH value. */
  @SuppressWarnings("ArrayRecordComponent") // built once, read once
  record Reply(int tid, int hl, boolean cvalid, int seq, byte[] r1, byte[] c2, byte[] dhValue) {
    byte[] encode() {
      byte[] out = new byte[16 + 2 * hl + dhValue.length];
      ByteBuffer b = header(out, TYPE_DHCHAP, ID_REPLY, tid);
      b.put(6, (byte) hl).put(8, (byte) (cvalid ? 1 : 0));
      b.putShort(10, (short) dhValue.length).putInt(12, seq);
      b.put(16, r1).put(16 + hl, c2).put(16 + 2 * hl, dhValue);
      return out;
    }

    static Reply parse(byte[] m) throws DhchapException {
      if (m.length < 16) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Reply of " + m.length + " bytes", INCORRECT_PAYLOAD);
      }
      ByteBuffer b = le(m);
      int hl = b.get(6) & 0xFF;
      int dhvlen = b.getShort(10) & 0xFFFF;
      if (m.length < 16 + 2 * hl + dhvlen) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Reply claims " + (16 + 2 * hl + dhvlen) + " bytes in " + m.length,
            INCORRECT_PAYLOAD);
      }
      byte[] r1 = new byte[hl];
      byte[] c2 = new byte[hl];
      byte[] dhv = new byte[dhvlen];
      b.get(16, r1).get(16 + hl, c2).get(16 + 2 * hl, dhv);
      return new Reply(b.getShort(4) & 0xFFFF, hl, (b.get(8) & 1) != 0, b.getInt(12), r1, c2, dhv);
    }
  }

  /** DH-HMAC-CHAP_Success1, with the controller's response R2 when the host asked for it. */
  @SuppressWarnings("ArrayRecordComponent") // built once, read once
  record Success1(int tid, int hl, byte[] r2) {
    byte[] encode() {
      byte[] out = new byte[16 + (r2 == null ? 0 : hl)];
      ByteBuffer b = header(out, TYPE_DHCHAP, ID_SUCCESS1, tid);
      // Linux's host checks hl even without R2.
      b.put(6, (byte) hl).put(8, (byte) (r2 == null ? 0 : 1));
      if (r2 != null) {
        b.put(16, r2);
      }
      return out;
    }

    static Success1 parse(byte[] m) throws DhchapException {
      if (m.length < 16) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Success1 of " + m.length + " bytes", INCORRECT_PAYLOAD);
      }
      ByteBuffer b = le(m);
      int hl = b.get(6) & 0xFF;
      boolean rvalid = (b.get(8) & 1) != 0;
      if (rvalid && m.length < 16 + hl) {
        throw new DhchapException(
            "a DH-HMAC-CHAP_Success1 claims R2 of " + hl + " bytes in " + m.length,
            INCORRECT_PAYLOAD);
      }
      byte[] r2 = null;
      if (rvalid) {
        r2 = new byte[hl];
        b.get(16, r2);
      }
      return new Success1(b.getShort(4) & 0xFFFF, hl, r2);
    }
  }

  static byte[] success2(int tid) {
    byte[] out = new byte[16];
    header(out, TYPE_DHCHAP, ID_SUCCESS2, tid);
    return out;
  }

  /** AUTH_Failure1 (controller to host) or AUTH_Failure2 (host to controller). */
  static byte[] failure(boolean fromController, int tid, int reason) {
    byte[] out = new byte[8];
    ByteBuffer b = header(out, TYPE_COMMON, fromController ? ID_FAILURE1 : ID_FAILURE2, tid);
    b.put(6, (byte) 1).put(7, (byte) reason);
    return out;
  }

  static int type(byte[] m) {
    return m.length < 2 ? -1 : m[0] & 0xFF;
  }

  static int id(byte[] m) {
    return m.length < 2 ? -1 : m[1] & 0xFF;
  }

  static int tid(byte[] m) {
    return m.length < 6 ? -1 : le(m).getShort(4) & 0xFFFF;
  }

  /** Whether {@code m} is a Failure1 or Failure2, and then its reason (else -1). */
  static int failureReason(byte[] m) {
    if (m.length >= 8 && type(m) == TYPE_COMMON && (id(m) == ID_FAILURE1 || id(m) == ID_FAILURE2)) {
      return m[7] & 0xFF;
    }
    return -1;
  }

  // --------------------------------------------------------------------------------------------
  // responses

  /**
   * The host's response R1: HMAC under the host's transformed key of the (augmented) challenge, S1,
   * T_ID, SC_C, "HostHost", the host NQN, a zero byte and the subsystem NQN.
   */
  static byte[] hostResponse(
      DhchapHash h,
      byte[] hostKey,
      byte[] c1,
      int s1,
      int tid,
      String hostNqn,
      String subNqn,
      byte[] sharedSecret) {
    return response(h, hostKey, c1, s1, tid, HOST_LABEL, hostNqn, subNqn, sharedSecret);
  }

  /** The controller's response R2: as R1, labelled "Controller", NQNs the other way round. */
  static byte[] controllerResponse(
      DhchapHash h,
      byte[] ctrlKey,
      byte[] c2,
      int s2,
      int tid,
      String subNqn,
      String hostNqn,
      byte[] sharedSecret) {
    return response(h, ctrlKey, c2, s2, tid, CTRL_LABEL, subNqn, hostNqn, sharedSecret);
  }

  private static byte[] response(
      DhchapHash h,
      byte[] key,
      byte[] challenge,
      int seq,
      int tid,
      byte[] label,
      String nqn1,
      String nqn2,
      byte[] sharedSecret) {
    byte[] c = sharedSecret == null ? challenge : h.hmac(h.digest(sharedSecret), challenge);
    byte[] fields = new byte[7];
    le(fields).putInt(0, seq).putShort(4, (short) tid);
    return h.hmac(
        key,
        c,
        fields,
        label,
        nqn1.getBytes(StandardCharsets.UTF_8),
        new byte[1],
        nqn2.getBytes(StandardCharsets.UTF_8));
  }
}
