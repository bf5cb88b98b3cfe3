package io.ember.nvmf;

/**
 * A command got no completion within the configured command timeout. Only that command fails: the
 * queue, the controller and the other commands in flight go on. Its command id stays taken until
 * the late completion arrives, which is then dropped; the caller's buffer is not touched again
 * (data a late R2T asks for comes from a copy taken at the timeout). The controller is closed only
 * when Keep Alive goes unanswered or a connection fails, never because a command was slow.
 */
public class NvmfTimeoutException extends NvmfException {
  /**
   * @param message what timed out and after how long
   */
  public NvmfTimeoutException(String message) {
    super(message);
  }
}
