package io.ember.namenode;

import io.ember.protocol.Messages;
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
    long files,
    long openFiles,
    int writers,
    List<ClassRow> classes,
    List<Messages.DatanodeInfo> datanodes) {

  /** Capacity and use of one storage class, over its live data nodes. */
  record ClassRow(
      String storageClass,
      int liveNodes,
      int lostNodes,
      long capacityBytes,
      long usedBytes,
      long freeBytes) {}
}
