package io.ember.nvmf.target;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The target spreads I/O queues over its network threads, over real NVMe/TCP connections on
 * loopback: hosts connect an admin queue before each I/O queue, so connections placed in turn put
 * every one-queue host's I/O on the same thread of two.
 */
class NetworkThreadPlacementTest {
  private static final String NQN = "nqn.2026-12.io.ember:placement-test";

  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + PATIENCE + ": " + what);
      }
      Thread.sleep(20);
    }
  }

  @Test
  void oneQueueHostsSpreadTheirIoQueuesOverTheThreadsAndGiveThemBackOnDisconnect()
      throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(8L << 20, 4096));
    NvmfHostOptions oneQueue = NvmfHostOptions.builder().ioQueues(1).build();
    try (NvmfTarget target =
        NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).threads(2).build()) {
      target.start();
      assertEquals(List.of(0, 0), target.ioQueuesPerThread());
      List<NvmfController> hosts = new ArrayList<>();
      try {
        for (int i = 0; i < 4; i++) {
          hosts.add(NvmfHost.connect(target.uri(NQN), oneQueue));
        }
        // Each host's queue serves I/O wherever it landed.
        for (NvmfController c : hosts) {
          c.ioQueue(0).write(1, 0, ByteBuffer.allocateDirect(4096)).get(30, TimeUnit.SECONDS);
        }
        assertEquals(List.of(2, 2), target.ioQueuesPerThread());

        hosts.remove(0).close();
        hosts.remove(0).close();
        await(
            "the two closed hosts' I/O queues to be given back",
            () -> target.ioQueuesPerThread().stream().mapToInt(Integer::intValue).sum() == 2);
        // Whichever threads the closed ones left, the next host goes to the one with fewer.
        int fewer = Math.min(target.ioQueuesPerThread().get(0), target.ioQueuesPerThread().get(1));
        hosts.add(NvmfHost.connect(target.uri(NQN), oneQueue));
        hosts.add(NvmfHost.connect(target.uri(NQN), oneQueue));
        List<Integer> after = target.ioQueuesPerThread();
        assertEquals(4, after.get(0) + after.get(1), after.toString());
        assertEquals(
            List.of(2, 2),
            after,
            "with " + fewer + " on the emptier thread before the last two hosts connected");
      } finally {
        for (NvmfController c : hosts) {
          c.close();
        }
      }
      await(
          "every host's I/O queue to be given back",
          () -> target.ioQueuesPerThread().equals(List.of(0, 0)));
    }
  }
}
