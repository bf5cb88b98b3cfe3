package io.ember.datanode;

import io.ember.protocol.StorageClass;

/**
 * A running data node of any tier, as the servers that start and stop them see it ({@code ember
 * datanode}, {@code ember local}, the mini cluster). A data node registers its storage with the
 * name node as blocks of one storage class, heartbeats through its {@link NameNodeLink}, and is
 * reached by clients through the endpoint it advertises, with the client side of its tier.
 */
public interface DataNode extends AutoCloseable {
  /** The tier clients use to reach this node's blocks ("dram", "nvmf"). */
  String tier();

  /** The storage class of this node's blocks. */
  StorageClass storageClass();

  /** The address clients are told to use for this node's blocks. */
  String endpoint();

  /** The id the name node gave this node, or -1 before it registered. */
  int datanodeId();

  /**
   * The incarnation block locations of this node name (the contents of its storage as registered),
   * or 0 before it registers.
   */
  long incarnation();

  /**
   * Stops heartbeats, closes connections and releases what the node started (its region, its
   * controller, an embedded target). Idempotent.
   */
  @Override
  void close();

  /**
   * Stops as a crash would: connections drop at once, nothing is flushed or said to the name node,
   * which marks the node lost when its heartbeats stop. For tests; the same as {@link #close} for a
   * node that has nothing to flush.
   */
  default void kill() {
    close();
  }

  /**
   * Stops answering clients and the name node without closing anything, as a stalled process
   * (SIGSTOP, a long pause) would, until {@link #resume}. For tests.
   */
  void suspend();

  /** Answers again after {@link #suspend}. */
  void resume();
}
