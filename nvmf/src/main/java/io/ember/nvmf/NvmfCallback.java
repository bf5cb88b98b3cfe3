package io.ember.nvmf;

/**
 * Completion callback for the allocation-free submission path. Called exactly once per command, on
 * the queue's I/O thread: do not block in it.
 */
@FunctionalInterface
public interface NvmfCallback {
  /**
   * Reports how the command ended.
   *
   * @param error null on success, else why the command failed ({@link NvmeStatusException} for an
   *     NVMe status, {@link NvmfTimeoutException}, or {@link NvmfException} for transport failures)
   */
  void complete(NvmfException error);
}
