package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberException;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * What {@link NameNodeState#expireDatanodes} reports: the data nodes it marked lost, not those it
 * first suspected. It looks for silent nodes under the read lock and marks them under the write
 * lock, so a heartbeat or a registration can land in between.
 */
class DatanodeExpiryTest {
  private static final int BS = 4096;
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private final AtomicLong time = new AtomicLong();

  /** Run once, from inside the clock read that comes after the scan; see {@link #clock}. */
  private Runnable betweenScanAndMark;

  private int reads;
  private int runAtRead = -1;
  private final NameNodeState nn =
      new NameNodeState(BS, List.of(StorageClass.DRAM, StorageClass.NVMF), TIMEOUT, this::clock);

  /**
   * The name node's clock. expireDatanodes reads it once for the scan, then again (holding the
   * write lock) before it marks each suspect; the second read is where a request that was waiting
   * for the lock would have run, so that is where the test runs it. The write lock is reentrant, so
   * the request can take it on this thread.
   */
  private long clock() {
    if (++reads == runAtRead && betweenScanAndMark != null) {
      Runnable r = betweenScanAndMark;
      betweenScanAndMark = null;
      r.run();
    }
    return time.get();
  }

  private void onSecondClockReadOfNextExpiry(Runnable r) {
    reads = 0;
    runAtRead = 2;
    betweenScanAndMark = r;
  }

  private int register(String endpoint, long incarnation) throws EmberException {
    return nn.register(StorageClass.DRAM, "dram", endpoint, 4L * BS, false, incarnation)
        .datanodeId();
  }

  private ClassUsage dram() {
    return nn.usage().stream()
        .filter(u -> u.storageClass().equals(StorageClass.DRAM))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void nodeWhoseHeartbeatArrivesAfterTheScanIsNotCounted() throws Exception {
    register("h:1", 1);
    int b = register("h:2", 2);
    time.addAndGet(TIMEOUT.toNanos() + 1);
    onSecondClockReadOfNextExpiry(
        () -> {
          try {
            nn.heartbeat(b);
          } catch (EmberException e) {
            throw new AssertionError(e);
          }
        });
    assertEquals(1, nn.expireDatanodes(), "both were silent at the scan; only one stayed so");
    assertTrue(betweenScanAndMark == null, "the heartbeat ran inside expireDatanodes");
    assertEquals(1, dram().liveNodes());
    assertEquals(1, dram().lostNodes());
    assertEquals(0, nn.expireDatanodes(), "nothing left to mark");
  }

  @Test
  void nodeSupersededAfterTheScanIsNotCountedAgain() throws Exception {
    register("h:1", 1);
    register("h:2", 2);
    time.addAndGet(TIMEOUT.toNanos() + 1);
    // A restarted process at h:2 registers: the old node is marked lost by the registration.
    onSecondClockReadOfNextExpiry(
        () -> {
          try {
            register("h:2", 3);
          } catch (EmberException e) {
            throw new AssertionError(e);
          }
        });
    assertEquals(1, nn.expireDatanodes(), "the registration, not the expiry, marked h:2's node");
    assertTrue(betweenScanAndMark == null, "the registration ran inside expireDatanodes");
    assertEquals(1, dram().liveNodes());
    assertEquals(2, dram().lostNodes());
  }

  @Test
  void countsEveryNodeItMarks() throws Exception {
    register("h:1", 1);
    register("h:2", 2);
    int c = register("h:3", 3);
    time.addAndGet(TIMEOUT.toNanos() / 2);
    nn.heartbeat(c);
    time.addAndGet(TIMEOUT.toNanos() / 2 + 1);
    assertEquals(2, nn.expireDatanodes());
    assertEquals(0, nn.expireDatanodes());
    assertEquals(1, dram().liveNodes(), "the node that heartbeat is live");
  }
}
