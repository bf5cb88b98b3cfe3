package io.ember.datanode.dram;

import io.ember.protocol.ContiguousPrefix;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The generation of the block each slot of a DRAM region holds. The name node gives a slot a larger
 * generation each time it allocates it, and a writer names it in every write, so the first write of
 * a new allocation moves the slot to it; from then on a read or write that names an older
 * generation (a client that kept the locations of a deleted file) is refused instead of reaching
 * the bytes of the file that reused the block.
 */
final class BlockGenerations {
  private final long incarnation;
  private final int blockSize;
  private final AtomicLongArray generations;

  /**
   * What each slot holds from its start without a gap in its generation (null: nothing yet): what a
   * writer that died had put there, for the name node's lease recovery. A slot's entry is used
   * under its stripe lock only.
   */
  private final ContiguousPrefix[] written;

  private final Object[] stripes = new Object[64];

  /**
   * The generation {@link #startReceive} is given for a write of earlier contents still arriving
   * (see {@code DramDataNode.DirectWrite#holdBack}): no write's, so every write to the slot waits.
   */
  static final long OTHER_CONTENTS = -1;

  /**
   * Per slot, the writes whose bytes are landing in the region straight from a socket (counted
   * under the slot's stripe lock), and the one generation they are of. Such a write was checked
   * when it began; it cannot be checked again as each socket read lands.
   */
  private final int[] receiving;

  private final long[] receivingGeneration;

  /** Per slot, writes waiting for its receives to end, in arrival order (null: none). */
  private final AtomicReferenceArray<ArrayDeque<Runnable>> waiting;

  /** Told, under the slot's lock, when a write moves a slot to a newer generation. */
  interface MoveListener {
    void moved(long slotAddress, long generation);
  }

  private final MoveListener onMove;

  /** The generations of the region's blocks under {@code incarnation}, none known yet. */
  BlockGenerations(long incarnation, long capacity, int blockSize) {
    this(incarnation, capacity, blockSize, (slotAddress, generation) -> {});
  }

  /** As above, telling {@code onMove} each time a slot moves to a newer generation. */
  BlockGenerations(long incarnation, long capacity, int blockSize, MoveListener onMove) {
    this.onMove = onMove;
    if (blockSize <= 0) {
      throw new IllegalStateException("block size unknown before registration");
    }
    this.incarnation = incarnation;
    this.blockSize = blockSize;
    this.generations = new AtomicLongArray((int) (capacity / blockSize));
    this.written = new ContiguousPrefix[generations.length()];
    this.receiving = new int[generations.length()];
    this.receivingGeneration = new long[generations.length()];
    this.waiting = new AtomicReferenceArray<>(generations.length());
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Object();
    }
  }

  long incarnation() {
    return incarnation;
  }

  /**
   * The lock a write to {@code address} holds while it checks its generation and copies its bytes,
   * striped over slots so writes to different blocks rarely share one.
   */
  Object lockFor(long address) {
    return stripes[(int) Math.floorMod(address / blockSize, (long) stripes.length)];
  }

  /**
   * Checks a write of {@code length} bytes at {@code address} into block {@code blockId} of {@code
   * generation}, and makes that generation the slot's when it is newer.
   *
   * @throws EmberException {@link ErrorCode#STALE_LOCATION} when the slot holds a newer generation;
   *     {@link ErrorCode#OUT_OF_RANGE} when the range is not inside one block
   */
  void checkWrite(long blockId, long generation, long address, int length, String node)
      throws EmberException {
    int slot = slot(blockId, address, length);
    while (true) {
      long held = generations.get(slot);
      if (generation == held) {
        return;
      }
      if (generation < held) {
        throw stale(blockId, generation, held, node);
      }
      if (generations.compareAndSet(slot, held, generation)) {
        // Under the slot's lock (the caller's): no write of the old generation lands after this.
        written[slot] = null;
        onMove.moved((long) slot * blockSize, generation);
        return;
      }
    }
  }

  /**
   * True when a write of {@code generation} at {@code address} must wait, under the slot's lock,
   * before it is checked: writes of another generation are landing there from a socket (so making
   * its generation the slot's would not stop their bytes), or earlier writes wait already. False
   * for an address outside the region, which {@link #checkWrite} refuses.
   */
  boolean mustWait(long address, long generation) {
    int slot = slotOrMinus(address);
    if (slot < 0) {
      return false;
    }
    return waiting.get(slot) != null
        || (receiving[slot] > 0 && receivingGeneration[slot] != generation);
  }

  /**
   * Counts a write that {@link #checkWrite} let through, of {@code generation}, whose bytes now
   * land at {@code address} from a socket until {@link #endReceive}; call under the slot's lock,
   * after {@link #mustWait} said no.
   */
  void startReceive(long address, long generation) {
    int slot = (int) (address / blockSize);
    receiving[slot]++;
    receivingGeneration[slot] = generation;
  }

  /**
   * Ends a receive that {@link #startReceive} counted (complete or not); call under the slot's
   * lock. Returns the writes that waited for the slot's last receive to end, to run now under the
   * same lock in order, or an empty list.
   */
  List<Runnable> endReceive(long address) {
    int slot = (int) (address / blockSize);
    ArrayDeque<Runnable> queued = waiting.get(slot);
    if (--receiving[slot] > 0 || queued == null) {
      return List.of();
    }
    waiting.set(slot, null);
    return new ArrayList<>(queued);
  }

  /**
   * Queues {@code write} until the receives at {@code address}'s slot end; call under the slot's
   * lock, when {@link #mustWait} said so. {@link #endReceive} hands it back.
   */
  void await(long address, Runnable write) {
    int slot = (int) (address / blockSize);
    ArrayDeque<Runnable> queued = waiting.get(slot);
    if (queued == null) {
      queued = new ArrayDeque<>();
      waiting.set(slot, queued);
    }
    queued.add(write);
  }

  private int slotOrMinus(long address) {
    long slot = address / blockSize;
    return address < 0 || slot >= generations.length() ? -1 : (int) slot;
  }

  /**
   * Counts a write that {@link #checkWrite} let through and that is now in the region; call under
   * the same lock. A write past a gap is kept aside until the gap is filled: a client's writes to
   * one block can arrive out of order.
   */
  void wrote(long address, int length) {
    int slot = (int) (address / blockSize);
    long start = address % blockSize;
    if (written[slot] == null) {
      written[slot] = new ContiguousPrefix();
    }
    written[slot].add(start, start + length);
  }

  /**
   * Bytes written without a gap from the start of block {@code blockId} of {@code generation} at
   * {@code address}: 0 when none of that generation was written yet.
   *
   * @throws EmberException {@link ErrorCode#STALE_LOCATION} when the slot holds a newer generation;
   *     {@link ErrorCode#OUT_OF_RANGE} when the address is not a block's start
   */
  int heldLength(long blockId, long generation, long address, String node) throws EmberException {
    int slot = slot(blockId, address, blockSize);
    long current = generations.get(slot);
    if (current > generation) {
      throw stale(blockId, generation, current, node);
    }
    return current == generation && written[slot] != null ? (int) written[slot].prefix() : 0;
  }

  /** Each slot written under this incarnation, with the generation written there last. */
  List<Messages.HeldBlock> heldBlocks() {
    List<Messages.HeldBlock> out = new ArrayList<>();
    for (int slot = 0; slot < generations.length(); slot++) {
      long g = generations.get(slot);
      if (g != 0) {
        out.add(new Messages.HeldBlock((long) slot * blockSize, g));
      }
    }
    return out;
  }

  /**
   * Checks a read of {@code length} bytes at {@code address} of block {@code blockId} of {@code
   * generation}: the slot must hold that generation.
   *
   * @throws EmberException {@link ErrorCode#STALE_LOCATION} when it holds another (newer: the block
   *     went to another file; older: nothing of this generation was written here); {@link
   *     ErrorCode#OUT_OF_RANGE} when the range is not inside one block
   */
  void checkRead(long blockId, long generation, long address, int length, String node)
      throws EmberException {
    long held = generations.get(slot(blockId, address, length));
    if (generation != held) {
      throw stale(blockId, generation, held, node);
    }
  }

  /** The block size the slots are of. */
  int blockSize() {
    return blockSize;
  }

  /** The address of the first byte of the slot {@code address} is in. */
  long slotStart(long address) {
    return address - address % blockSize;
  }

  private int slot(long blockId, long address, int length) throws EmberException {
    long slot = address / blockSize;
    if (address < 0
        || length < 0
        || slot >= generations.length()
        || address % blockSize > blockSize - length) {
      throw new EmberException(
          ErrorCode.OUT_OF_RANGE,
          "range ["
              + address
              + ", "
              + (address + length)
              + ") of block "
              + blockId
              + " is not inside one block of "
              + blockSize
              + " bytes of the region");
    }
    return (int) slot;
  }

  private static EmberException stale(long blockId, long generation, long held, String node) {
    String why =
        held > generation
            ? "it now holds generation " + held + ": the file was deleted and the block reused"
            : "it holds no bytes of that generation (it has generation " + held + ")";
    return new EmberException(
        ErrorCode.STALE_LOCATION,
        node
            + " refuses block "
            + blockId
            + " of generation "
            + generation
            + ": "
            + why
            + "; ask the name node again");
  }
}
