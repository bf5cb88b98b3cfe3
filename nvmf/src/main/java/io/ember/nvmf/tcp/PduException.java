package io.ember.nvmf.tcp;

/**
 * A received PDU breaks the NVMe/TCP rules so badly that the connection cannot continue. Carries
 * the fatal error status and information that the receiver puts into its H2CTermReq/C2HTermReq, and
 * the offending header bytes (at most 128) to echo back.
 */
public final class PduException extends RuntimeException {
  private final int fes;
  private final int fei;
  private final byte[] header;

  /**
   * @param fes fatal error status ({@code Pdu.FES_*})
   * @param fei fatal error information (byte offset of the bad field, for header field errors)
   * @param message one line for people
   * @param header the offending PDU header (copied, up to 128 bytes), may be empty
   */
  public PduException(int fes, int fei, String message, byte[] header) {
    super(message + " (" + Pdu.fesName(fes) + ")", null, false, false);
    this.fes = fes;
    this.fei = fei;
    this.header = header;
  }

  public int fes() {
    return fes;
  }

  public int fei() {
    return fei;
  }

  public byte[] header() {
    return header;
  }
}
