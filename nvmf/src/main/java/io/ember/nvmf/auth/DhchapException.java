package io.ember.nvmf.auth;

import io.ember.nvmf.NvmfException;

/**
 * DH-HMAC-CHAP failed: a wrong or missing secret, no hash or group both sides accept, a controller
 * that did not prove it holds the controller secret, or a malformed exchange. Connecting again with
 * the same secrets fails the same way.
 */
public class DhchapException extends NvmfException {
  /** Reason: authentication failed (a wrong secret, or a controller that did not prove itself). */
  public static final int FAILED = 0x01;

  /** Reason: a secure channel was asked for, which is not supported. */
  public static final int CONCAT_MISMATCH = 0x03;

  private final int reason;

  /**
   * @param message one line saying what failed and what to check
   * @param reason the protocol's reason code explanation ({@code Dhchap.FAILED} and the others)
   */
  public DhchapException(String message, int reason) {
    super(message);
    this.reason = reason;
  }

  /** The reason code explanation of the protocol's failure messages (1 = authentication failed). */
  public int reason() {
    return reason;
  }
}
