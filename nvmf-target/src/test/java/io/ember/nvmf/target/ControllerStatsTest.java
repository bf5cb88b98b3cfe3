package io.ember.nvmf.target;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The target counts what each controller served, over a real NVMe/TCP connection on loopback. */
class ControllerStatsTest {
  private static final String NQN = "nqn.2026-11.io.ember:stats-test";

  @Test
  void eachControllerCountsItsCommandsBytesFailuresAndLatency() throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(8L << 20, 4096));
    try (NvmfTarget target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build()) {
      target.start();
      try (NvmfController c =
          NvmfHost.connect(target.uri(NQN), NvmfHostOptions.builder().ioQueues(2).build())) {
        NvmfQueue q0 = c.ioQueue(0);
        NvmfQueue q1 = c.ioQueue(1);
        ByteBuffer block = ByteBuffer.allocateDirect(16 << 10);
        for (int i = 0; i < 5; i++) {
          q0.write(1, i * 4L, block.duplicate()).get(30, TimeUnit.SECONDS);
        }
        for (int i = 0; i < 3; i++) {
          q1.read(1, i * 4L, ByteBuffer.allocateDirect(16 << 10)).get(30, TimeUnit.SECONDS);
        }
        q1.flush(1).get(30, TimeUnit.SECONDS);
        ExecutionException beyond =
            assertThrows(
                ExecutionException.class,
                () ->
                    q0.read(1, (8L << 20) / 4096, ByteBuffer.allocateDirect(4096))
                        .get(30, TimeUnit.SECONDS));
        assertTrue(beyond.getCause() instanceof NvmeStatusException, beyond.toString());

        List<ControllerStats> all = target.controllerStats();
        assertEquals(1, all.size(), all.toString());
        ControllerStats st = all.get(0);
        assertEquals(NQN, st.subsystemNqn());
        assertEquals(2, st.ioQueues());
        assertEquals(5, st.writes());
        assertEquals(4, st.reads());
        assertEquals(1, st.others());
        assertEquals(1, st.failed());
        assertEquals(5L * (16 << 10), st.bytesWritten());
        assertEquals(3L * (16 << 10), st.bytesRead(), "a failed read moves no bytes");
        assertEquals(0, st.outstanding());
        assertEquals(st.commands(), st.latencyCounts().stream().mapToLong(Long::longValue).sum());
        assertEquals(Double.POSITIVE_INFINITY, st.latencyBoundsSeconds().get(11));
        assertTrue(st.latencySumSeconds() > 0);
      }
      // A host that disconnects takes its controller's figures with it.
      long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
      while (!target.controllerStats().isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(List.of(), target.controllerStats());
    }
  }

  @Test
  void countingSwitchedOffLeavesTheFiguresAtZero() throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(1L << 20, 4096));
    try (NvmfTarget target =
        NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).countCommands(false).build()) {
      target.start();
      try (NvmfController c =
          NvmfHost.connect(target.uri(NQN), NvmfHostOptions.builder().build())) {
        c.ioQueue(0).write(1, 0, ByteBuffer.allocateDirect(4096)).get(30, TimeUnit.SECONDS);
        ControllerStats st = target.controllerStats().get(0);
        assertEquals(0, st.commands());
        assertEquals(0, st.bytesWritten());
        assertEquals(0, st.outstanding());
      }
    }
  }
}
