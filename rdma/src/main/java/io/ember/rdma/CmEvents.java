package io.ember.rdma;

/** The RDMA connection manager's event numbers (enum rdma_cm_event_type, a stable ABI). */
public final class CmEvents {
  public static final int ADDR_RESOLVED = 0;
  public static final int CONNECT_REQUEST = 4;
  public static final int ROUTE_RESOLVED = 2;
  public static final int REJECTED = 8;
  public static final int ESTABLISHED = 9;
  public static final int DISCONNECTED = 10;
  public static final int DEVICE_REMOVAL = 11;
  public static final int TIMEWAIT_EXIT = 15;

  /** A work completion's status: the peer refused the access (a key it no longer knows). */
  public static final int WC_REMOTE_ACCESS_ERROR = 10;

  /** A work completion's status: flushed, because the queue pair failed before it ran. */
  public static final int WC_FLUSHED = 5;

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

  /** The event's name, for errors. */
  public static String name(int event) {
    return event >= 0 && event < NAMES.length ? NAMES[event] : "event " + event;
  }

  /** A work completion's status (enum ibv_wc_status) by name, for errors. */
  public static String wcStatus(int status) {
    var all = com.ibm.disni.verbs.IbvWC.IbvWcStatus.values();
    return status >= 0 && status < all.length ? all[status].name() : "status " + status;
  }
}
