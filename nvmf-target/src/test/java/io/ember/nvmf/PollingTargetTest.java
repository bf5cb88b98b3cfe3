package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * The behaviour suite with both sides polling: the embedded target on one network thread that never
 * sleeps, the host on one such thread. Commands from the test's threads must be picked up although
 * nothing wakes the loops, and their timers must fire on connections with no traffic.
 */
class PollingTargetTest extends EmbeddedTargetTest {
  @Override
  protected NvmfTarget.Builder configure(NvmfTarget.Builder b) {
    return b.threads(1).poll(true);
  }

  @Override
  protected NvmfHostOptions.Builder options() {
    return super.options().pollThreads(1);
  }

  @Test
  void idleConnectionsAreStillPolledByOneHostAndOneTargetThread() throws Exception {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:polled-idle");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t =
            configure(NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s)).build().start();
        NvmfController c = NvmfHost.connect(t.uri(s.nqn()), options().ioQueues(2).build())) {
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
      assertEquals(1, host.size(), "host polling threads: " + host);
      assertEquals(1, target.size(), "target polling threads: " + target);
      assertEquals(List.of(), sleepingHost, "other host network threads");
      // With no command in flight a sleeping loop takes next to no CPU; a polling one keeps a core
      // busy. Wait for a second of CPU each, with a deadline far longer than that takes when
      // starved.
      ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
      long hostStart = cpu.getThreadCpuTime(host.get(0).getId());
      long targetStart = cpu.getThreadCpuTime(target.get(0).getId());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (cpu.getThreadCpuTime(host.get(0).getId()) - hostStart < 1_000_000_000L
          || cpu.getThreadCpuTime(target.get(0).getId()) - targetStart < 1_000_000_000L) {
        assertTrue(System.nanoTime() - deadline < 0, "an idle loop did not poll");
        Thread.sleep(50);
      }
      assertTrue(c.isConnected());
    }
  }

  @Test
  void aCommandTimesOutOnAPolledConnectionWithNoOtherTraffic() throws Exception {
    StallingNamespace withheld = new StallingNamespace();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:polled-timeout");
    s.addNamespace(withheld);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t =
            configure(NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s)).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                options().ioQueues(1).commandTimeout(Duration.ofSeconds(1)).build())) {
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
