package io.ember.nvmf;

import java.util.List;

/**
 * A host's association with one NVMe-oF controller: the admin queue, the enabled controller, its
 * identify data and its I/O queues. The transport-neutral seam that the TCP and RDMA hosts both
 * implement. Obtain one with {@link NvmfHost#connect(String, NvmfHostOptions)}. Thread-safe.
 */
public interface NvmfController extends AutoCloseable {
  /** Where this controller was reached. */
  NvmfUri uri();

  /** Identify Controller data, read during connect. */
  IdentifyController identify();

  /** The active namespaces (or just the one named in the URI), identified during connect. */
  List<IdentifyNamespace> namespaces();

  /**
   * Identify data of namespace {@code nsid}.
   *
   * @throws IllegalArgumentException when the namespace was not identified during connect
   */
  IdentifyNamespace namespace(int nsid);

  /** Number of connected I/O queues (may be fewer than asked if the controller grants fewer). */
  int ioQueueCount();

  /**
   * I/O queue {@code index} (0-based; its qid is index+1).
   *
   * @throws IndexOutOfBoundsException when index is not below {@link #ioQueueCount()}
   */
  NvmfQueue ioQueue(int index);

  /** The controller's CAP property. */
  long cap();

  /** The controller's VS property. */
  int version();

  /**
   * True while the controller is open and every queue's connection is up. A false answer means
   * commands would fail: connect again. A true answer promises nothing about the next command.
   */
  boolean isConnected();

  /**
   * How the admin queue authenticated in-band, e.g. {@code sha256/ffdhe2048} or {@code
   * sha512/ffdhe3072, bidirectional}; null when the controller did not ask for authentication.
   */
  default String authentication() {
    return null;
  }

  /** Largest transfer of a single command in bytes; larger requests are split. */
  int maxTransferSize();

  /**
   * Shuts the controller down (CC.SHN, bounded wait for CSTS.SHST) and closes every queue.
   * Outstanding commands fail with an {@link NvmfException}. Idempotent; never throws. Blocks for
   * up to a few seconds: do not call it from a completion callback (those run on the I/O threads it
   * waits for).
   */
  @Override
  void close();
}
