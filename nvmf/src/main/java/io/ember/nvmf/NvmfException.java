package io.ember.nvmf;

import java.io.IOException;

/**
 * Base class of every failure this library reports: transport failures (connection refused or
 * closed, malformed PDUs, C2HTermReq from the target), timeouts ({@link NvmfTimeoutException}) and
 * commands that the controller completed with an error status ({@link NvmeStatusException}).
 */
public class NvmfException extends IOException {
  /**
   * @param message one line saying what failed and what to check
   */
  public NvmfException(String message) {
    super(message);
  }

  /**
   * A failure that another one caused.
   *
   * @param message one line saying what failed and what to check
   * @param cause the underlying error
   */
  public NvmfException(String message, Throwable cause) {
    super(message, cause);
  }
}
