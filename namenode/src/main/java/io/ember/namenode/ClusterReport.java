package io.ember.namenode;

import java.util.List;

/**
 * What the name node knows of the cluster at one moment: for its status page, its JSON API and
 * {@code ember admin report}.
 *
 * @param files files in the namespace
 * @param openFiles files a writer holds open under a lease
 * @param writers clients holding leases
 * @param classes capacity and use per storage class
 * @param datanodes every data node the name node knows, lost ones too
 */
record ClusterReport(
    long files, long openFiles, int writers, List<ClassRow> classes, List<DatanodeRow> datanodes) {

  /** Capacity and use of one storage class, over its live data nodes. */
  record ClassRow(
      String storageClass,
      int liveNodes,
      int lostNodes,
      long capacityBytes,
      long usedBytes,
      long freeBytes) {}

  /**
   * One data node.
   *
   * @param state {@code live}; {@code lost} (no heartbeat within the timeout); {@code unreported}
   *     (known from the journal, not yet registered since the name node started); or {@code
   *     replaced} (a newer node took its address)
   * @param lastHeartbeatMillisAgo since its last heartbeat or registration
   * @param trimmingBlocks freed blocks whose trim is not yet confirmed
   * @param overwrittenBlocks blocks found overwritten by allocations the name node lost
   */
  record DatanodeRow(
      int id,
      String storageClass,
      int storageClassId,
      String tier,
      String endpoint,
      String state,
      long incarnation,
      int blockSize,
      long capacityBytes,
      long usedBytes,
      long freeBytes,
      long lastHeartbeatMillisAgo,
      int trimmingBlocks,
      int overwrittenBlocks) {}
}
