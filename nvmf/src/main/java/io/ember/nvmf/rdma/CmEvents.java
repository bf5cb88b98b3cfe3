package io.ember.nvmf.rdma;

/** The RDMA connection manager's event numbers (enum rdma_cm_event_type, a stable ABI). */
final class CmEvents {
  static final int ADDR_RESOLVED = 0;
  static final int ROUTE_RESOLVED = 2;
  static final int REJECTED = 8;
  static final int ESTABLISHED = 9;
  static final int DISCONNECTED = 10;
  static final int DEVICE_REMOVAL = 11;

  private static final String[] NAMES = {
    "ADDR_RESOLVED",
    "ADDR_ERROR",
    "ROUTE_RESOLVED",
    "ROUTE_ERROR",
    "CONNECT_REQUEST",
    "CONNECT_RESPONSE",
    "CONNECT_ERROR",
    "UNREACHABLE",
    "REJECTED",
    "ESTABLISHED",
    "DISCONNECTED",
    "DEVICE_REMOVAL",
    "MULTICAST_JOIN",
    "MULTICAST_ERROR",
    "ADDR_CHANGE",
    "TIMEWAIT_EXIT"
  };

  private CmEvents() {}

  static String name(int event) {
    return event >= 0 && event < NAMES.length ? NAMES[event] : "event " + event;
  }

  /** A work completion's status (enum ibv_wc_status) by name, for errors. */
  static String wcStatus(int status) {
    var all = com.ibm.disni.verbs.IbvWC.IbvWcStatus.values();
    return status >= 0 && status < all.length ? all[status].name() : "status " + status;
  }
}
