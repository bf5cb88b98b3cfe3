package io.ember.namenode;

/** A block held by a file: on {@code datanode} at block index {@code slot}. */
record Block(long blockId, Datanode datanode, long slot) {
  long address() {
    return slot * datanode.blockSize;
  }
}
