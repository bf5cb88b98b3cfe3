package io.ember.nvmf;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One I/O queue pair of a connected controller. Every method may be called from any thread and
 * returns at once; up to {@link #depth()} commands are in flight on the wire and further ones wait
 * in submission order. Transfers larger than the controller's maximum are split into several
 * commands transparently.
 *
 * <p><b>Buffers:</b> the caller owns every {@link ByteBuffer} passed in. The bytes between its
 * position and limit are the data; position and limit are never changed. The buffer must not be
 * touched (read buffers: not read; write buffers: not modified) until the command completes. Direct
 * buffers avoid a JDK-internal copy on the socket path; heap buffers work too. The length must be a
 * multiple of the namespace's block size.
 *
 * <p><b>Errors:</b> argument errors (unknown namespace, length not a multiple of the block size,
 * empty buffer) throw {@link IllegalArgumentException} at once. Everything else completes the
 * command with an {@link NvmfException}: {@link NvmeStatusException} when the controller returned
 * an error status, {@link NvmfTimeoutException} after the command timeout (that command alone: the
 * queue goes on), plain {@link NvmfException} when the connection failed or the controller was lost
 * (Keep Alive unanswered).
 */
public interface NvmfQueue {
  /** Queue id (1-based for I/O queues). */
  int qid();

  /** The most commands this queue keeps in flight at once. */
  int depth();

  /**
   * Reads {@code dst.remaining()} bytes from block {@code slba} of namespace {@code nsid} into
   * {@code dst}.
   */
  void read(int nsid, long slba, ByteBuffer dst, NvmfCallback callback);

  /** Writes {@code src.remaining()} bytes to block {@code slba} of namespace {@code nsid}. */
  void write(int nsid, long slba, ByteBuffer src, NvmfCallback callback);

  /** Flushes the namespace's volatile write cache (if any). */
  void flush(int nsid, NvmfCallback callback);

  /**
   * Deallocates (trims) {@code nlb} blocks from {@code slba} with Dataset Management. Fails with
   * Invalid Command Opcode status when the controller lacks DSM (see {@link
   * IdentifyController#supportsDsm()}).
   */
  void deallocate(int nsid, long slba, long nlb, NvmfCallback callback);

  /** Writes zeroes to {@code nlb} blocks from {@code slba} without transferring data. */
  void writeZeroes(int nsid, long slba, long nlb, NvmfCallback callback);

  /** {@link #read(int, long, ByteBuffer, NvmfCallback)} returning a future. */
  default CompletableFuture<Void> read(int nsid, long slba, ByteBuffer dst) {
    FutureCallback f = new FutureCallback();
    read(nsid, slba, dst, f);
    return f;
  }

  /** {@link #write(int, long, ByteBuffer, NvmfCallback)} returning a future. */
  default CompletableFuture<Void> write(int nsid, long slba, ByteBuffer src) {
    FutureCallback f = new FutureCallback();
    write(nsid, slba, src, f);
    return f;
  }

  /** {@link #flush(int, NvmfCallback)} returning a future. */
  default CompletableFuture<Void> flush(int nsid) {
    FutureCallback f = new FutureCallback();
    flush(nsid, f);
    return f;
  }

  /** {@link #deallocate(int, long, long, NvmfCallback)} returning a future. */
  default CompletableFuture<Void> deallocate(int nsid, long slba, long nlb) {
    FutureCallback f = new FutureCallback();
    deallocate(nsid, slba, nlb, f);
    return f;
  }

  /** {@link #writeZeroes(int, long, long, NvmfCallback)} returning a future. */
  default CompletableFuture<Void> writeZeroes(int nsid, long slba, long nlb) {
    FutureCallback f = new FutureCallback();
    writeZeroes(nsid, slba, nlb, f);
    return f;
  }

  /** Adapts the callback API to a {@link CompletableFuture}. */
  final class FutureCallback extends CompletableFuture<Void> implements NvmfCallback {
    @Override
    public void complete(NvmfException error) {
      if (error == null) {
        complete((Void) null);
      } else {
        completeExceptionally(error);
      }
    }
  }
}
