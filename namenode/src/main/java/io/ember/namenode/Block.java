package io.ember.namenode;

/**
 * A block held by a file: on {@code datanode} at block index {@code slot}, of generation {@code
 * generation} (new at each allocation, so a data node can tell this file's block from an earlier or
 * later file's block at the same slot).
 */
record Block(long blockId, long generation, Datanode datanode, long slot) {
  long address() {
    return slot * datanode.blockSize;
  }
}
