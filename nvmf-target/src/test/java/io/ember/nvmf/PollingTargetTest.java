package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.TargetFeaturesTest.StallingNamespace;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The behaviour suite with both sides polling for 200 µs after each event: every pause between
 * commands longer than that puts the loops to sleep, so a command must wake them as well as find
 * them polling. Two more tests keep the loops polling for an hour: an idle connection must still be
 * polled, and a command's timer must fire although the loop never sleeps.
 */
class PollingTargetTest extends EmbeddedTargetTest {
  private static final Duration WINDOW = Duration.ofNanos(200_000);
  private static final Duration FOR_GOOD = Duration.ofHours(1);

  @Override
  protected NvmfTarget.Builder configure(NvmfTarget.Builder b) {
    return b.busyPoll(WINDOW);
  }

  @Override
  protected NvmfHostOptions.Builder options() {
    return super.options().busyPoll(WINDOW);
  }

  private static NvmfTarget pollingForGood(Subsystem s) throws java.io.IOException {
    return NvmfTarget.builder()
        .listen("127.0.0.1", 0)
        .subsystem(s)
        .threads(1)
        .busyPoll(FOR_GOOD)
        .build()
        .start();
  }

  @Test
  void idleConnectionsArePolledForTheWholeWindow() throws Exception {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:polled-idle");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = pollingForGood(s);
        NvmfController c =
            NvmfHost.connect(t.uri(s.nqn()), options().ioQueues(2).busyPoll(FOR_GOOD).build())) {
      List<Thread> host = new ArrayList<>();
      List<Thread> target = new ArrayList<>();
      List<Thread> sleepingHost = new ArrayList<>();
      for (Thread th : Thread.getAllStackTraces().keySet()) {
        if (!before.contains(th)) {
          String name = th.getName();
          if (name.startsWith("nvmf-host-poll-")) {
            host.add(th);
          } else if (name.startsWith("nvmf-target-poll-")) {
            target.add(th);
          } else if (name.startsWith("nvmf-host-")) {
            sleepingHost.add(th);
          }
        }
      }
      assertFalse(host.isEmpty(), "no host polling thread");
      assertEquals(1, target.size(), "target polling threads: " + target);
      assertEquals(List.of(), sleepingHost, "other host network threads");
      // With no command in flight a sleeping loop takes next to no CPU; a polling one keeps a core
      // busy. Wait for a second of CPU on each side, with a deadline far longer than that takes
      // when starved.
      long hostStart = cpuNanos(host);
      long targetStart = cpuNanos(target);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (cpuNanos(host) - hostStart < 1_000_000_000L
          || cpuNanos(target) - targetStart < 1_000_000_000L) {
        assertTrue(System.nanoTime() - deadline < 0, "an idle loop did not poll");
        Thread.sleep(50);
      }
      assertTrue(c.isConnected());
    }
  }

  private static long cpuNanos(List<Thread> threads) {
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (Thread t : threads) {
      sum += Math.max(0, cpu.getThreadCpuTime(t.getId()));
    }
    return sum;
  }

  @Test
  void aCommandTimesOutOnAConnectionThatIsNeverLeftUnpolled() throws Exception {
    StallingNamespace withheld = new StallingNamespace();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:polled-timeout");
    s.addNamespace(withheld);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = pollingForGood(s);
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                options()
                    .ioQueues(1)
                    .busyPoll(FOR_GOOD)
                    // Longer than CommandTimeoutTest's second: the connect's own admin commands
                    // share the cores with threads that never sleep here.
                    .commandTimeout(Duration.ofSeconds(3))
                    .build())) {
      CompletableFuture<Void> timesOut = c.ioQueue(0).read(1, 0, ByteBuffer.allocateDirect(512));
      assertTrue(
          withheld.entered.await(CommandTimeoutTest.WAIT_S, TimeUnit.SECONDS),
          "the withheld read reached the target");
      assertInstanceOf(NvmfTimeoutException.class, CommandTimeoutTest.cause(timesOut));
      withheld.release.countDown();
      // The queue goes on: a write and a read on the other namespace after the timeout.
      ByteBuffer written = CommandTimeoutTest.block(0x5c);
      c.ioQueue(0)
          .write(2, 0, written.duplicate())
          .get(CommandTimeoutTest.WAIT_S, TimeUnit.SECONDS);
      ByteBuffer read = ByteBuffer.allocateDirect(512);
      c.ioQueue(0).read(2, 0, read).get(CommandTimeoutTest.WAIT_S, TimeUnit.SECONDS);
      assertArrayEquals(bytes(written), bytes(read));
    }
  }
}
