package io.ember.nvmf;

/**
 * A command got no completion within the configured command timeout. The command is failed; the queue
 * stays usable, and a completion that arrives later for it is dropped (its buffer is not touched again).
 */
public class NvmfTimeoutException extends NvmfException {
    /** @param message what timed out and after how long */
    public NvmfTimeoutException(String message) {
        super(message);
    }
}
