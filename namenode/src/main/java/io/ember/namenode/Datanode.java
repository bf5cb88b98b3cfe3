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
  volatile long lastHeartbeatNanos;
  boolean lost;
  /** Blocks below this index were handed out at least once. */
  private long nextFresh;
  /** Freed block indexes, oldest first: reuse is delayed as long as fresh blocks last. */
  private final ArrayDeque<Long> freed = new ArrayDeque<>();

  Datanode(int id, StorageClass storageClass, String tier, String endpoint, int blockSize,
      long blockCount, long nowNanos) {
    this.id = id;
    this.storageClass = storageClass;
    this.tier = tier;
    this.endpoint = endpoint;
    this.blockSize = blockSize;
    this.blockCount = blockCount;
    this.lastHeartbeatNanos = nowNanos;
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
    freed.addLast(index);
  }

  String describe() {
    return "data node " + id + " (" + endpoint + ")";
  }
}
