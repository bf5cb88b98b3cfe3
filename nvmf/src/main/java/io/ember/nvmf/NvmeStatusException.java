package io.ember.nvmf;

/**
 * The controller completed a command with a non-zero NVMe status. Carries the status code type
 * (SCT) and status code (SC) as numbers and in words, plus the Do Not Retry bit.
 */
public class NvmeStatusException extends NvmfException {
  private final int status;
  private final String command;

  /**
   * @param command what was asked, e.g. {@code "Read nsid 1 slba 2048 nlb 8"}
   * @param status the 15-bit status field from the completion queue entry
   * @param fabricsConnect whether the command was a Fabrics Connect (changes the meaning of SCT 1
   *     codes)
   */
  public NvmeStatusException(String command, int status, boolean fabricsConnect) {
    super(
        String.format(
            "%s failed: %s (SCT 0x%x %s, SC 0x%02x%s)",
            command,
            NvmeStatus.describe(NvmeStatus.sct(status), NvmeStatus.sc(status), fabricsConnect),
            NvmeStatus.sct(status),
            NvmeStatus.sctName(NvmeStatus.sct(status)),
            NvmeStatus.sc(status),
            NvmeStatus.dnr(status) ? ", do not retry" : ""));
    this.status = status;
    this.command = command;
  }

  /** The 15-bit status field. */
  public int status() {
    return status;
  }

  /** Status code type. */
  public int sct() {
    return NvmeStatus.sct(status);
  }

  /** Status code. */
  public int sc() {
    return NvmeStatus.sc(status);
  }

  /** Do Not Retry bit. */
  public boolean dnr() {
    return NvmeStatus.dnr(status);
  }

  /** The command that failed, as described when it was submitted. */
  public String command() {
    return command;
  }
}
