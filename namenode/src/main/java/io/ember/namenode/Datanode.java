package io.ember.namenode;

import io.ember.protocol.StorageClass;
import java.util.ArrayDeque;

/**
 * A registered data node and its free blocks. Guarded by the name node's state lock, except the
 * heartbeat time.
 */
final class Datanode {
  final int id;
  final StorageClass storageClass;
  final String tier;
  final String endpoint;
  final int blockSize;
  final long blockCount;
  /** Freed blocks go back to the data node to be deallocated before reuse (NVMf). */
  final boolean trimOnFree;
  /** The data node's name for its storage's contents (0: none); see RegisterRequest. */
  final long incarnation;
  volatile long lastHeartbeatNanos;
  boolean lost;
  /** Another node registered at this endpoint since: this one never comes back. */
  boolean superseded;
  /** Blocks below this index were handed out at least once. */
  private long nextFresh;
  /** Freed block indexes, oldest first: reuse is delayed as long as fresh blocks last. */
  private final ArrayDeque<Long> freed = new ArrayDeque<>();
  /** Freed, waiting to be sent to the data node for deallocation. */
  private final ArrayDeque<Long> toTrim = new ArrayDeque<>();
  /** Sent to the data node, not yet reported deallocated. */
  private final java.util.Set<Long> trimming = new java.util.HashSet<>();

  Datanode(int id, StorageClass storageClass, String tier, String endpoint, int blockSize,
      long blockCount, boolean trimOnFree, long incarnation, long nowNanos) {
    this.id = id;
    this.storageClass = storageClass;
    this.tier = tier;
    this.endpoint = endpoint;
    this.blockSize = blockSize;
    this.blockCount = blockCount;
    this.trimOnFree = trimOnFree;
    this.incarnation = incarnation;
    this.lastHeartbeatNanos = nowNanos;
  }

  /**
   * Live again after being marked lost. Deallocations sent before are sent again: the node
   * forgot them when it registered, and deallocating twice does no harm.
   */
  void revive(long nowNanos) {
    lost = false;
    lastHeartbeatNanos = nowNanos;
    for (Long slot : trimming) {
      toTrim.addFirst(slot);
    }
    trimming.clear();
  }

  long freeBlocks() {
    return blockCount - nextFresh + freed.size();
  }

  /** Takes a free block's index, or -1. */
  long take() {
    if (nextFresh < blockCount) {
      return nextFresh++;
    }
    Long i = freed.pollFirst();
    return i == null ? -1 : i;
  }

  void giveBack(long index) {
    if (trimOnFree) {
      toTrim.addLast(index);
    } else {
      freed.addLast(index);
    }
  }

  /** Blocks the data node reports deallocated become free; returns the next ones to trim. */
  java.util.List<Long> trimmed(java.util.List<Long> done, int max) {
    for (Long slot : done) {
      if (trimming.remove(slot)) {
        freed.addLast(slot);
      }
    }
    java.util.List<Long> next = new java.util.ArrayList<>();
    while (next.size() < max && !toTrim.isEmpty()) {
      Long slot = toTrim.pollFirst();
      trimming.add(slot);
      next.add(slot);
    }
    return next;
  }

  /** Blocks freed but not yet deallocated by the data node. */
  long trimPending() {
    return toTrim.size() + trimming.size();
  }

  String describe() {
    return "data node " + id + " (" + endpoint + ")";
  }
}
