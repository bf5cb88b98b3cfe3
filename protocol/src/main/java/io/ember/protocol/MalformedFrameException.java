package io.ember.protocol;

/** A frame whose contents do not decode: a length that lies, a field out of range. */
public final class MalformedFrameException extends EmberException {
  private static final long serialVersionUID = 1L;

  /** A decode failure described for a person. */
  public MalformedFrameException(String message) {
    super(ErrorCode.MALFORMED_FRAME, "malformed frame: " + message);
  }
}
