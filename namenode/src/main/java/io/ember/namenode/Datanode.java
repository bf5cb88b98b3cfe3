package io.ember.namenode;

import io.ember.protocol.BlockLocation;
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

  /**
   * False for a node known only from the journal after a restart, until it registers again with the
   * same contents: its blocks are served meanwhile, and no new ones are taken from it.
   */
  boolean reported = true;

  /** Blocks below this index were handed out at least once. */
  private long nextFresh;

  /** Freed block indexes, oldest first: reuse is delayed as long as fresh blocks last. */
  private final ArrayDeque<Long> freed = new ArrayDeque<>();

  /** Freed, waiting to be sent to the data node for deallocation. */
  private final ArrayDeque<Long> toTrim = new ArrayDeque<>();

  /** Sent to the data node, not yet reported deallocated. */
  private final java.util.Set<Long> trimming = new java.util.HashSet<>();

  /**
   * Sent, and left out of the report that should have said they were done: slot and the time (the
   * name node's clock) after which each goes out again, oldest first.
   */
  private final java.util.LinkedHashMap<Long, Long> retrying = new java.util.LinkedHashMap<>();

  /**
   * How long a deallocation the data node did not report waits before it is sent again, by default:
   * see {@link NameNodeKeys#DEALLOCATION_RETRY} for why it is not sent again at once.
   */
  static final long TRIM_RETRY_NANOS =
      io.ember.protocol.EmberConfig.defaults().get(NameNodeKeys.DEALLOCATION_RETRY).toNanos();

  /**
   * Deallocated, but not reusable before {@link BlockLocation#UNCHECKED_REUSE_DELAY} has passed:
   * storage that trims cannot check generations, so a client may still use a location it checked
   * with the name node before the free. Pairs of slot and the time (the name node's clock) after
   * which it is free, oldest first.
   */
  private final ArrayDeque<long[]> cooling = new ArrayDeque<>();

  private static final long REUSE_DELAY_NANOS = BlockLocation.UNCHECKED_REUSE_DELAY.toNanos();

  Datanode(
      int id,
      StorageClass storageClass,
      String tier,
      String endpoint,
      int blockSize,
      long blockCount,
      boolean trimOnFree,
      long incarnation,
      long nowNanos) {
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

  /** Live again after being marked lost; deallocations in flight are sent again. */
  void revive(long nowNanos) {
    lost = false;
    reported = true;
    lastHeartbeatNanos = nowNanos;
    resendTrims();
  }

  /**
   * Deallocations sent but not reported done go out again: the node forgot them when it registered,
   * and deallocating twice does no harm.
   */
  void resendTrims() {
    for (Long slot : trimming) {
      toTrim.addFirst(slot);
    }
    trimming.clear();
    for (Long slot : retrying.keySet()) {
      toTrim.addFirst(slot);
    }
    retrying.clear();
  }

  /** Blocks below this index were handed out at least once. */
  long highWater() {
    return nextFresh;
  }

  /** Replaying the journal: block {@code slot} was handed out. */
  void restoreTaken(long slot) {
    nextFresh = Math.max(nextFresh, slot + 1);
  }

  /**
   * After a restart: every block handed out once and not {@code owned} by a file is free, and on
   * storage that trims is deallocated again first.
   */
  void restoreFree(java.util.BitSet owned) {
    freed.clear();
    toTrim.clear();
    trimming.clear();
    retrying.clear();
    cooling.clear();
    for (long slot = 0; slot < nextFresh; slot++) {
      if (!owned.get(Math.toIntExact(slot))) {
        giveBack(slot);
      }
    }
  }

  long freeBlocks(long nowNanos) {
    return blockCount - nextFresh + freed.size() + cooledCount(nowNanos);
  }

  /**
   * Freed blocks not yet free again: waiting to be deallocated on the storage, being deallocated,
   * or cooling after it.
   */
  long returningBlocks(long nowNanos) {
    return trimmingCount() + cooling.size() - cooledCount(nowNanos);
  }

  /** Cooling blocks whose delay has passed: free, though not yet moved to {@link #freed}. */
  private long cooledCount(long now) {
    long cooled = 0;
    for (long[] c : cooling) {
      if (now - c[1] < 0) {
        break;
      }
      cooled++;
    }
    return cooled;
  }

  /** Takes a free block's index, or -1. */
  long take(long now) {
    if (nextFresh < blockCount) {
      return nextFresh++;
    }
    drainCooled(now);
    Long i = freed.pollFirst();
    return i == null ? -1 : i;
  }

  private void drainCooled(long now) {
    while (!cooling.isEmpty() && now - cooling.peekFirst()[1] >= 0) {
      freed.addLast(cooling.pollFirst()[0]);
    }
  }

  /**
   * Slots whose block a block report found overwritten (a newer generation than the namespace's):
   * their blocks read as lost until their files free them.
   */
  private final java.util.BitSet overwritten = new java.util.BitSet();

  /** Marks the block at {@code slot} overwritten; false when it already was. */
  boolean markOverwritten(long slot) {
    int i = Math.toIntExact(slot);
    if (overwritten.get(i)) {
      return false;
    }
    overwritten.set(i);
    return true;
  }

  boolean isOverwritten(long slot) {
    return overwritten.get(Math.toIntExact(slot));
  }

  void giveBack(long index) {
    overwritten.clear(Math.toIntExact(index));
    if (trimOnFree) {
      toTrim.addLast(index);
    } else {
      freed.addLast(index);
    }
  }

  /**
   * Blocks the data node reports deallocated become free; those it left out go out again after
   * {@code retryNanos}. Returns the next ones to trim.
   */
  java.util.List<Long> trimmed(java.util.List<Long> done, int max, long nowNanos, long retryNanos) {
    // Each heartbeat moves what has cooled, so counting free blocks walks few cooled entries.
    drainCooled(nowNanos);
    long reusableAt = nowNanos + REUSE_DELAY_NANOS;
    for (Long slot : done) {
      if (trimming.remove(slot) || retrying.remove(slot) != null) {
        cooling.addLast(new long[] {slot, reusableAt});
      }
    }
    // A node starts each batch once the one it runs ends (within seconds) and reports it at the
    // first heartbeat after that, usually the next. What that report leaves out was not done yet
    // (a slow target), was dropped for a newer batch while one ran, failed or timed out, was cut
    // short by a closing node, or never reached it (the answer that carried it was lost). Those go
    // out again after retryNanos, and a later report still counts; kept
    // waiting for a report that might not come, they stayed out of use until the node registered
    // again, and a long-lived node lost capacity with every failure.
    for (Long slot : trimming) {
      retrying.put(slot, nowNanos + retryNanos);
    }
    trimming.clear();
    for (var it = retrying.entrySet().iterator(); it.hasNext(); ) {
      var retry = it.next();
      if (nowNanos - retry.getValue() < 0) {
        break; // the rest were left out later
      }
      toTrim.addLast(retry.getKey());
      it.remove();
    }
    java.util.List<Long> next = new java.util.ArrayList<>();
    while (next.size() < max && !toTrim.isEmpty()) {
      Long slot = toTrim.pollFirst();
      trimming.add(slot);
      next.add(slot);
    }
    return next;
  }

  /** Blocks freed but not yet trimmed, or trimmed but not yet confirmed. */
  int trimmingCount() {
    return toTrim.size() + trimming.size() + retrying.size();
  }

  /** Blocks whose deallocation the data node did not report, waiting to be sent again. */
  int retryingCount() {
    return retrying.size();
  }

  /** Blocks a block report found overwritten by an allocation the name node lost. */
  int overwrittenCount() {
    return overwritten.cardinality();
  }

  String describe() {
    return "data node " + id + " (" + endpoint + ")";
  }
}
