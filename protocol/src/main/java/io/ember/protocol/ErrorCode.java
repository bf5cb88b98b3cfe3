package io.ember.protocol;

/**
 * Stable error codes that cross the wire. The integer of a code never changes once released; new
 * codes take new numbers.
 *
 * <p>{@link #surelyNotApplied()} tells a caller whether the failed operation certainly did not
 * change anything, so that a retry is safe.
 */
public enum ErrorCode {
  /** A bug or an unexpected condition on the server; the operation may or may not have applied. */
  INTERNAL(1, false),
  /** The frame could not be decoded: a length lies, a field is out of range. Nothing applied. */
  MALFORMED_FRAME(2, true),
  /** The message type is not known to this server. Nothing applied. */
  UNKNOWN_MESSAGE(3, true),
  /** The frame is larger than the configured maximum; the connection is closed. Nothing applied. */
  FRAME_TOO_LARGE(4, true),
  /** The protocol version of the frame is not spoken here. Nothing applied. */
  UNSUPPORTED_VERSION(5, true),
  /** An argument is out of range or inconsistent. Nothing applied. */
  INVALID_ARGUMENT(6, true),
  /** A path is not absolute, has an empty, "." or ".." component, or is too long. */
  INVALID_PATH(10, true),
  /** The path does not exist. */
  NOT_FOUND(11, true),
  /** The path already exists. */
  ALREADY_EXISTS(12, true),
  /** The parent of the path does not exist. */
  PARENT_NOT_FOUND(13, true),
  /** A path component that must be a directory is not one. */
  NOT_A_DIRECTORY(14, true),
  /** A file operation named something that is not a file. */
  NOT_A_FILE(15, true),
  /** A directory holds entries and the delete was not recursive. */
  DIRECTORY_NOT_EMPTY(16, true),
  /** A rename would move a directory into itself or one of its descendants. */
  RENAME_INTO_ITSELF(17, true),
  /** The file was closed (its length published); it takes no more writes. */
  FILE_CLOSED(18, true),
  /**
   * The writer's lease on the file expired and the name node closed it at the length the data nodes
   * hold; the writer's later writes and its close are refused.
   */
  LEASE_RECOVERED(19, true),
  /** No storage class in the allowed order has a free block. Nothing allocated. */
  NO_CAPACITY(20, true),
  /** The data node holding a block has stopped heartbeating; the block's bytes are unavailable. */
  DATANODE_LOST(21, true),
  /** A heartbeat came from a data node the name node does not know (e.g. after a restart). */
  UNKNOWN_DATANODE(22, true),
  /** A block address or length falls outside the data node's region. Nothing applied. */
  OUT_OF_RANGE(23, true),
  /**
   * A block location names contents its endpoint no longer holds (a data node restarted at that
   * address, a target that came back empty): ask the name node again. Nothing applied.
   */
  STALE_LOCATION(24, true),
  /**
   * The storage behind a block is not ready (an NVMe namespace being formatted or sanitized, or in
   * transition); a later try may succeed. A write that went out as several commands may have
   * applied in part.
   */
  NOT_READY(25, false),
  /**
   * The storage behind a block has no room for the write (a thin-provisioned NVMe namespace whose
   * capacity is used up). A write that went out as several commands may have applied in part.
   */
  NO_SPACE(26, false),
  /**
   * The name node could not write its journal (a full or failing disk): changes are refused until
   * it can, and the change that met the failure may or may not be kept. Reads still work.
   */
  JOURNAL_FAILED(27, false),
  /** The operation did not answer within the configured time; it may still apply. */
  TIMEOUT(30, false),
  /** The connection closed before the answer came; the operation may or may not have applied. */
  CONNECTION_CLOSED(31, false),
  /** The peer could not be reached; nothing was sent. */
  UNREACHABLE(32, true),
  /** The client or server has been closed. */
  CLOSED(33, true),
  /**
   * The storage refused access (an NVMe namespace or LBA range that is write-protected, reserved by
   * another host, or denied to this one). A write that went out as several commands may have
   * applied in part.
   */
  PERMISSION_DENIED(40, false),
  /**
   * The peer could not be authenticated, or it refused this one's credentials (a TLS handshake that
   * failed, a plain client at a TLS server). Trying again with the same settings fails the same
   * way. Calls already sent on a connection that TLS then broke may have applied.
   */
  UNAUTHENTICATED(41, false);

  private static final ErrorCode[] BY_CODE = new ErrorCode[64];

  static {
    for (ErrorCode c : values()) {
      BY_CODE[c.code] = c;
    }
  }

  private final int code;
  private final boolean surelyNotApplied;

  ErrorCode(int code, boolean surelyNotApplied) {
    this.code = code;
    this.surelyNotApplied = surelyNotApplied;
  }

  /** The number sent on the wire. */
  public int code() {
    return code;
  }

  /** True when an operation that failed with this code certainly changed nothing. */
  public boolean surelyNotApplied() {
    return surelyNotApplied;
  }

  /**
   * The code for a wire number; unknown numbers (from a newer peer) map to {@link #INTERNAL}, so
   * keep the number with {@link #messageFor}.
   */
  public static ErrorCode fromCode(int code) {
    return isKnown(code) ? BY_CODE[code] : INTERNAL;
  }

  /** Whether {@code code} is the wire number of a code this version knows. */
  public static boolean isKnown(int code) {
    return code >= 0 && code < BY_CODE.length && BY_CODE[code] != null;
  }

  /**
   * The message to go with the code {@link #fromCode} makes of wire number {@code code}: {@code
   * message} itself for a known number; for an unknown one, which becomes {@link #INTERNAL}, the
   * message prefixed with the number, which would otherwise be lost.
   */
  public static String messageFor(int code, String message) {
    return isKnown(code)
        ? message
        : "error code " + code + " (unknown here; from a newer peer?): " + message;
  }
}
