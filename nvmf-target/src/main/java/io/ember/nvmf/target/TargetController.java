package io.ember.nvmf.target;

import io.ember.nvmf.tcp.ChannelListeners;
import io.netty.channel.Channel;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * State of one controller of the embedded target (dynamic controller model): created by an admin
 * queue Connect, joined by I/O queue Connects with its CNTLID, gone when its admin queue closes or
 * its keep-alive timer expires.
 */
final class TargetController {
  final int cntlid;

  /** Null for a discovery controller. */
  final Subsystem subsystem;

  final String hostNqn;
  final UUID hostId;
  volatile long katoMs;
  volatile int cc;
  volatile int csts;
  volatile int ioQueuesGranted;
  volatile int asyncEventConfig;
  volatile long lastKeepAlive = System.nanoTime();

  /**
   * DH-HMAC-CHAP steps running for this controller's queues: while the host waits on one, its
   * silence is the target's, and the keep-alive clock does not run.
   */
  final java.util.concurrent.atomic.AtomicInteger authStepsRunning =
      new java.util.concurrent.atomic.AtomicInteger();

  final Map<Integer, Channel> queues = new ConcurrentHashMap<>();
  final ControllerCounters counters = new ControllerCounters();

  TargetController(
      int cntlid, Subsystem subsystem, String hostNqn, UUID hostId, long katoMs, int maxIoQueues) {
    this.cntlid = cntlid;
    this.subsystem = subsystem;
    this.hostNqn = hostNqn;
    this.hostId = hostId;
    this.katoMs = katoMs;
    this.ioQueuesGranted = maxIoQueues;
  }

  boolean discovery() {
    return subsystem == null;
  }

  boolean ready() {
    return (csts & 1) != 0;
  }

  /** Closes every queue of this controller. */
  void teardown() {
    for (Channel c : queues.values()) {
      c.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    }
    queues.clear();
  }
}
