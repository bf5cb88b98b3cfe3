package io.ember.protocol;

/** The frame types. Requests and their responses share a type; a flag tells them apart. */
public enum MessageType {
  /** Does nothing; the baseline of RPC cost. Served by every server. */
  NOOP(1),
  // Name node.
  CREATE(10),
  LOOKUP(11),
  LIST(12),
  DELETE(13),
  RENAME(14),
  ALLOCATE_BLOCK(15),
  GET_BLOCKS(16),
  CLOSE_FILE(17),
  DF(18),
  REGISTER_DATANODE(19),
  HEARTBEAT(20),
  OPEN(21),
  RENEW_LEASE(22),
  ABANDON_FILE(23),
  BLOCK_REPORT(24),
  /** Every data node the name node knows, with its state and use: {@code ember admin}. */
  DATANODES(25),
  /** Changes an entry's owner, group or mode: {@code ember fs chmod} and {@code chown}. */
  SET_ATTRIBUTES(26),
  /** Issues a delegation token for the caller, under TLS. */
  GET_DELEGATION_TOKEN(27),
  /** Extends a delegation token's life; only its renewer may. */
  RENEW_DELEGATION_TOKEN(28),
  /** Ends a delegation token; its owner or renewer may. */
  CANCEL_DELEGATION_TOKEN(29),
  /**
   * Makes a connection without a client certificate act as a delegation token's owner: the first
   * request of a client that holds a token instead of a certificate.
   */
  AUTHENTICATE(30),
  /**
   * A SCRAM-SHA-256 client's first message (user and nonce); the answer is the server's first
   * (salt, count, its nonce). The first request of a client that authenticates with a password.
   */
  SCRAM_FIRST(31),
  /**
   * A SCRAM-SHA-256 client's proof; the answer proves the server holds the user's verifier, and the
   * connection acts as the user from then on.
   */
  SCRAM_LAST(32),
  /**
   * Several blocks of a file being written in one request, so a fast writer's allocations share one
   * journal force.
   */
  ALLOCATE_BLOCKS(33),
  /**
   * Blocks a writer asks for before any write needs them, body as {@link #ALLOCATE_BLOCKS}: all
   * from the file's own class and only while it has blocks to spare, so the answer may be empty.
   */
  ALLOCATE_AHEAD(34),
  // Data node.
  BLOCK_WRITE(40),
  BLOCK_READ(41),
  BLOCK_LENGTH(42),
  /** Access to a block of a DRAM data node over RDMA: its remote address and key. */
  BLOCK_GRANT(43);

  private static final MessageType[] BY_CODE = new MessageType[128];

  static {
    for (MessageType t : values()) {
      BY_CODE[t.code] = t;
    }
  }

  private final int code;

  MessageType(int code) {
    this.code = code;
  }

  /** The byte sent on the wire. */
  public int code() {
    return code;
  }

  /** The type for a wire byte, or {@code null} when unknown. */
  public static MessageType fromCode(int code) {
    return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
  }
}
