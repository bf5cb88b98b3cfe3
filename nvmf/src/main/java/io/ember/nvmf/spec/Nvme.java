package io.ember.nvmf.spec;

/**
 * Numbers from the NVMe Base, NVMe over Fabrics and NVMe/TCP specifications that both the host and
 * the embedded target use. Kept in one place so that the two sides cannot drift apart.
 */
public final class Nvme {
  private Nvme() {}

  // Admin opcodes (NVMe Base, Figure "Opcodes for Admin Commands").
  public static final int ADMIN_GET_LOG_PAGE = 0x02;
  public static final int ADMIN_IDENTIFY = 0x06;
  public static final int ADMIN_ABORT = 0x08;
  public static final int ADMIN_SET_FEATURES = 0x09;
  public static final int ADMIN_GET_FEATURES = 0x0A;
  public static final int ADMIN_ASYNC_EVENT = 0x0C;
  public static final int ADMIN_KEEP_ALIVE = 0x18;
  public static final int FABRICS = 0x7F;

  // Fabrics command types (FCTYPE, SQE byte 4).
  public static final int FCTYPE_PROPERTY_SET = 0x00;
  public static final int FCTYPE_CONNECT = 0x01;
  public static final int FCTYPE_PROPERTY_GET = 0x04;
  public static final int FCTYPE_DISCONNECT = 0x08;
  public static final int FCTYPE_AUTH_SEND = 0x05;
  public static final int FCTYPE_AUTH_RECEIVE = 0x06;

  /** Security protocol of in-band authentication (SECP of AUTH_Send/AUTH_Receive). */
  public static final int AUTH_SECP = 0xE9;

  /** Connect response DW0: Authentication Transaction Required (AUTHREQ.ATR). */
  public static final int CONNECT_ATR = 1 << 17;

  /** Connect response DW0: Authentication and Secure Channel Required (AUTHREQ.ASCR). */
  public static final int CONNECT_ASCR = 1 << 18;

  // NVM command set opcodes.
  public static final int IO_FLUSH = 0x00;
  public static final int IO_WRITE = 0x01;
  public static final int IO_READ = 0x02;
  public static final int IO_WRITE_ZEROES = 0x08;
  public static final int IO_DSM = 0x09;

  // Controller properties (offsets).
  public static final int PROP_CAP = 0x00;
  public static final int PROP_VS = 0x08;
  public static final int PROP_CC = 0x14;
  public static final int PROP_CSTS = 0x1C;

  // Identify CNS values.
  public static final int CNS_NAMESPACE = 0x00;
  public static final int CNS_CONTROLLER = 0x01;
  public static final int CNS_ACTIVE_NS_LIST = 0x02;
  public static final int CNS_NS_DESCRIPTORS = 0x03;

  // Log pages.
  public static final int LOG_ERROR = 0x01;
  public static final int LOG_SMART = 0x02;
  public static final int LOG_FIRMWARE = 0x03;
  public static final int LOG_CHANGED_NS = 0x04;
  public static final int LOG_CMD_EFFECTS = 0x05;
  public static final int LOG_DISCOVERY = 0x70;

  // Features.
  public static final int FEAT_ARBITRATION = 0x01;
  public static final int FEAT_POWER_MGMT = 0x02;
  public static final int FEAT_VOLATILE_WC = 0x06;
  public static final int FEAT_NUM_QUEUES = 0x07;
  public static final int FEAT_IRQ_COALESCE = 0x08;
  public static final int FEAT_ASYNC_EVENT = 0x0B;
  public static final int FEAT_KATO = 0x0F;

  /** The well-known NQN of discovery subsystems. */
  public static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";

  // SGL descriptor identifiers (SQE byte 39): type in bits 7:4, sub type in bits 3:0.
  /** Data Block descriptor, Offset sub type: data is in the capsule. */
  public static final int SGL_INCAPSULE = 0x01;

  /**
   * Transport SGL Data Block descriptor, transport-specific sub type: data moves by
   * R2T/H2CData/C2HData.
   */
  public static final int SGL_TRANSPORT = 0x5A;

  /** Keyed SGL Data Block, used by RDMA. */
  public static final int SGL_KEYED = 0x40;

  /** CDW0 byte 1 value with PSDT = 01b (SGLs, the only choice on fabrics). */
  public static final int PSDT_SGL = 0x40;

  // Status code types.
  public static final int SCT_GENERIC = 0;
  public static final int SCT_COMMAND_SPECIFIC = 1;
  public static final int SCT_MEDIA = 2;
  public static final int SCT_PATH = 3;

  // Generic status codes (SCT 0).
  public static final int SC_SUCCESS = 0x00;
  public static final int SC_INVALID_OPCODE = 0x01;
  public static final int SC_INVALID_FIELD = 0x02;
  public static final int SC_DATA_XFER_ERROR = 0x04;
  public static final int SC_INTERNAL = 0x06;
  public static final int SC_ABORT_REQ = 0x07;
  public static final int SC_INVALID_NS = 0x0B;
  public static final int SC_CMD_SEQ_ERROR = 0x0C;
  public static final int SC_SGL_INVALID_DATA = 0x0F;
  public static final int SC_SGL_INVALID_TYPE = 0x11;
  public static final int SC_SGL_INVALID_OFFSET = 0x16;
  public static final int SC_KA_TIMEOUT_EXPIRED = 0x19;
  public static final int SC_TRANSIENT_TRANSPORT = 0x22;
  public static final int SC_LBA_RANGE = 0x80;
  public static final int SC_CAPACITY_EXCEEDED = 0x81;
  public static final int SC_NS_NOT_READY = 0x82;

  // Command specific status codes (SCT 1).
  public static final int SC_INVALID_QID = 0x01;
  public static final int SC_INVALID_QSIZE = 0x02;
  public static final int SC_ASYNC_LIMIT = 0x05;
  public static final int SC_INVALID_LOG_PAGE = 0x09;
  public static final int SC_FEATURE_NOT_SAVEABLE = 0x0D;
  public static final int SC_CONNECT_FORMAT = 0x80;
  public static final int SC_CONNECT_CTRL_BUSY = 0x81;
  public static final int SC_CONNECT_INVALID_PARAM = 0x82;
  public static final int SC_CONNECT_RESTART_DISC = 0x83;
  public static final int SC_CONNECT_INVALID_HOST = 0x84;
  public static final int SC_AUTH_REQUIRED = 0x91;

  /** Do Not Retry bit within the 15-bit status field (CQE DW3 bits 31:17). */
  public static final int STATUS_DNR = 1 << 14;

  /** Builds the 15-bit status field from its parts. */
  public static int status(int sct, int sc, boolean dnr) {
    return (sc & 0xFF) | ((sct & 7) << 8) | (dnr ? STATUS_DNR : 0);
  }

  /** Pads or truncates an ASCII string into a fixed-size field, padding with {@code pad}. */
  public static byte[] ascii(String s, int len, byte pad) {
    byte[] out = new byte[len];
    java.util.Arrays.fill(out, pad);
    byte[] src = s.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    System.arraycopy(src, 0, out, 0, Math.min(len, src.length));
    return out;
  }

  /** Reads a fixed-size ASCII field, dropping trailing spaces and NULs. */
  public static String ascii(byte[] b, int off, int len) {
    int end = off + len;
    int nul = off;
    while (nul < end && b[nul] != 0) {
      nul++;
    }
    end = nul;
    while (end > off && b[end - 1] == ' ') {
      end--;
    }
    return new String(b, off, end - off, java.nio.charset.StandardCharsets.US_ASCII);
  }
}
