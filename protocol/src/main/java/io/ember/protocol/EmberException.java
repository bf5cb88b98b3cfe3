package io.ember.protocol;

import java.io.IOException;

/**
 * The one exception type of Ember: an {@link ErrorCode} that crosses the wire and a message a
 * person can act on ("file /a/b exists", "no DRAM capacity left for 1 MiB").
 */
public class EmberException extends IOException {
  private static final long serialVersionUID = 1L;

  private final ErrorCode code;

  /** An error with the given code and message. */
  public EmberException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  /** An error with the given code, message and cause. */
  public EmberException(ErrorCode code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /** The error's code. */
  public ErrorCode code() {
    return code;
  }

  /** The throwable inside any {@code CompletionException}/{@code ExecutionException} layers. */
  public static Throwable unwrap(Throwable t) {
    Throwable cur = t;
    while ((cur instanceof java.util.concurrent.CompletionException
            || cur instanceof java.util.concurrent.ExecutionException)
        && cur.getCause() != null) {
      cur = cur.getCause();
    }
    return cur;
  }

  /**
   * Unwraps {@code CompletionException}/{@code ExecutionException} layers and returns the Ember
   * error inside, or wraps anything else as {@link ErrorCode#INTERNAL}.
   */
  public static EmberException of(Throwable t) {
    Throwable cur = unwrap(t);
    if (cur instanceof EmberException e) {
      return e;
    }
    if (cur instanceof java.net.ConnectException) {
      return new EmberException(ErrorCode.UNREACHABLE, String.valueOf(cur.getMessage()), cur);
    }
    if (cur instanceof IOException) {
      return new EmberException(ErrorCode.CONNECTION_CLOSED, String.valueOf(cur.getMessage()), cur);
    }
    return new EmberException(ErrorCode.INTERNAL, cur.toString(), cur);
  }
}
