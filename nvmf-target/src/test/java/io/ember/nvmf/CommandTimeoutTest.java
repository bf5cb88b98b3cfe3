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
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A command that times out fails alone: the other commands of its queue and controller go on, its
 * command id stays taken until its late answer comes, and that answer is dropped. Only an
 * unanswered Keep Alive (or a failed transport) closes the controller. Timeouts are short; waits
 * are for conditions, with generous deadlines.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CommandTimeoutTest {
  static final long WAIT_S = 20;

  static Throwable cause(CompletableFuture<?> f) throws Exception {
    return TargetFeaturesTest.cause(f);
  }

  static ByteBuffer block(int b) {
    ByteBuffer buf = ByteBuffer.allocateDirect(512);
    for (int i = 0; i < 512; i++) {
      buf.put(i, (byte) b);
    }
    return buf;
  }

  @Test
  void oneCommandTimesOutWhileOthersOnTheSameControllerComplete() throws Exception {
    StallingNamespace withheld = new StallingNamespace();
    StallingNamespace slow = new StallingNamespace();
    withheld.write(0, Unpooled.wrappedBuffer(new byte[] {7, 7, 7, 7}));
    slow.write(0, Unpooled.wrappedBuffer(new byte[] {9, 9, 9, 9}));
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:timeout-alone");
    s.addNamespace(withheld);
    s.addNamespace(slow);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder()
                    .ioQueues(2)
                    .commandTimeout(Duration.ofSeconds(1))
                    .build())) {
      ByteBuffer lost = ByteBuffer.allocateDirect(512);
      CompletableFuture<Void> timesOut = c.ioQueue(0).read(1, 0, lost);
      assertTrue(
          withheld.entered.await(WAIT_S, TimeUnit.SECONDS), "the withheld read reached the target");
      // In flight on the same queue across the timeout: answered only once the other command timed
      // out.
      ByteBuffer lateButFine = ByteBuffer.allocateDirect(512);
      CompletableFuture<Void> inFlight = c.ioQueue(0).read(2, 0, lateButFine);
      // Fails as the timed-out read did, once the slow namespace has been let go.
      CompletableFuture<Void> timedOutThenReleased =
          timesOut.whenComplete((v, e) -> slow.release.countDown());
      // Issued while the withheld command is outstanding: on its queue and on the controller's
      // other one.
      c.ioQueue(0).write(3, 0, block(42)).get(WAIT_S, TimeUnit.SECONDS);
      ByteBuffer r = ByteBuffer.allocateDirect(512);
      c.ioQueue(1).read(3, 0, r).get(WAIT_S, TimeUnit.SECONDS);
      assertEquals(42, r.get(511));

      Throwable e = cause(timedOutThenReleased);
      assertInstanceOf(NvmfTimeoutException.class, e, String.valueOf(e));
      assertTrue(e.getMessage().startsWith("Read nsid 1 slba 0 nlb 1 on "), e.getMessage());
      try {
        inFlight.get(WAIT_S, TimeUnit.SECONDS);
        assertEquals(9, lateButFine.get(0), "the command in flight got its own data");
      } catch (ExecutionException x) {
        // Both deadlines fell within one sweep of the timer: it timed out on its own account, which
        // is fine; a connection failure is not.
        assertInstanceOf(NvmfTimeoutException.class, x.getCause(), String.valueOf(x.getCause()));
      }
      assertTrue(c.isConnected(), "a command timeout leaves the controller connected");

      withheld.release.countDown();
      for (int q = 0; q < 2; q++) {
        ByteBuffer again = ByteBuffer.allocateDirect(512);
        c.ioQueue(q).read(3, 0, again).get(WAIT_S, TimeUnit.SECONDS);
        assertEquals(42, again.get(0), "queue " + q + " after the timeout");
      }
      assertEquals(0, lost.get(0), "the timed-out read's buffer is left alone");
      assertTrue(c.isConnected());
    } finally {
      withheld.release.countDown();
      slow.release.countDown();
    }
  }

  @Test
  void aTimedOutCommandIdIsNotReusedBeforeItsLateAnswerArrives() throws Exception {
    StallingNamespace withheld = new StallingNamespace();
    withheld.write(0, Unpooled.wrappedBuffer(new byte[] {7, 7, 7, 7}));
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:timeout-cid");
    s.addNamespace(withheld);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    // A queue of two entries has a single command id: the next command must wait for the late
    // answer.
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder()
                    .ioQueueSize(2)
                    .commandTimeout(Duration.ofSeconds(1))
                    .build())) {
      NvmfQueue q = c.ioQueue(0);
      assertEquals(1, q.depth());
      q.write(2, 0, block(42)).get(WAIT_S, TimeUnit.SECONDS);
      ByteBuffer lost = ByteBuffer.allocateDirect(512);
      CompletableFuture<Void> timesOut = q.read(1, 0, lost);
      Throwable e = cause(timesOut);
      assertInstanceOf(NvmfTimeoutException.class, e, String.valueOf(e));

      ByteBuffer next = ByteBuffer.allocateDirect(512);
      CompletableFuture<Void> waits = q.read(2, 0, next);
      withheld.release.countDown();
      // It can only have gone out on the id the late answer gave back, so that answer has been
      // handled.
      waits.get(WAIT_S, TimeUnit.SECONDS);
      assertEquals(42, next.get(0), "the next command got its own data, not the late answer's");
      assertEquals(0, lost.get(0), "the late data did not reach the timed-out read's buffer");
      assertTrue(c.isConnected(), "the late answer was no protocol error");
      q.read(2, 0, next).get(WAIT_S, TimeUnit.SECONDS);
    } finally {
      withheld.release.countDown();
    }
  }

  @Test
  void aQueueWhoseEveryCommandIdTheTargetNeverAnswersCloses() throws Exception {
    StallingNamespace withheld = new StallingNamespace();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:timeout-all-ids");
    s.addNamespace(withheld);
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder()
                    .ioQueueSize(2)
                    .commandTimeout(Duration.ofMillis(500))
                    .build())) {
      NvmfQueue q = c.ioQueue(0);
      Throwable first = cause(q.read(1, 0, ByteBuffer.allocateDirect(512)));
      assertInstanceOf(NvmfTimeoutException.class, first, String.valueOf(first));
      // Its only command id stays held; once it has gone unanswered for two more timeouts the
      // queue gives up rather than time out every later command for ever.
      Throwable later;
      do {
        later = cause(q.read(1, 0, ByteBuffer.allocateDirect(512)));
      } while (later instanceof NvmfTimeoutException);
      assertTrue(
          String.valueOf(later.getMessage()).contains("never answered"), String.valueOf(later));
    } finally {
      withheld.release.countDown();
    }
  }

  @Test
  void aTimedOutWriteThatTheTargetFetchesLateSendsTheBytesItCarried() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:late-r2t");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    int len =
        64 * 1024; // beyond the target's in-capsule size: the data goes when the target asks (R2T)
    try (NvmfTarget t =
            NvmfTarget.builder()
                .listen("127.0.0.1", 0)
                .subsystem(s)
                .inCapsuleDataSize(8192)
                .build()
                .start();
        SilentProxy proxy = new SilentProxy("127.0.0.1", t.port());
        NvmfController c =
            NvmfHost.connect(
                "nvmf+tcp://127.0.0.1:" + proxy.port() + "/" + s.nqn(),
                NvmfHostOptions.builder()
                    .ioQueueSize(2)
                    .commandTimeout(Duration.ofSeconds(1))
                    .build())) {
      NvmfQueue q = c.ioQueue(0);
      ByteBuffer carried = ByteBuffer.allocateDirect(len);
      for (int i = 0; i < len; i++) {
        carried.put(i, (byte) (i * 31 + 1));
      }
      byte[] want = new byte[len];
      carried.get(0, want);
      proxy.hold();
      Throwable e = cause(q.write(1, 0, carried));
      assertInstanceOf(NvmfTimeoutException.class, e, String.valueOf(e));
      // Told it timed out, the caller owns its buffer again and reuses it.
      for (int i = 0; i < len; i++) {
        carried.put(i, (byte) 0x5A);
      }
      proxy.resume();
      // The only command id comes back with the late write's completion, so this read follows it.
      ByteBuffer back = ByteBuffer.allocateDirect(len);
      q.read(1, 0, back).get(WAIT_S, TimeUnit.SECONDS);
      byte[] got = new byte[len];
      back.get(0, got);
      HexFormat hex = HexFormat.of();
      assertEquals(
          hex.formatHex(want, 0, 16),
          hex.formatHex(got, 0, 16),
          "the late transfer carries the write's own bytes, not zeroes or the reused buffer's");
      assertArrayEquals(want, got, "all " + len + " bytes of the late write");
      assertTrue(c.isConnected());
    }
  }

  @Test
  void anUnansweredKeepAliveClosesTheController() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:silent");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        SilentProxy proxy = new SilentProxy("127.0.0.1", t.port());
        NvmfController c =
            NvmfHost.connect(
                "nvmf+tcp://127.0.0.1:" + proxy.port() + "/" + s.nqn(),
                NvmfHostOptions.builder()
                    .keepAlive(Duration.ofMillis(500))
                    .commandTimeout(Duration.ofSeconds(30))
                    .build())) {
      c.ioQueue(0).write(1, 0, block(1)).get(WAIT_S, TimeUnit.SECONDS);
      proxy.silence();
      CompletableFuture<Void> stranded = c.ioQueue(0).read(1, 0, ByteBuffer.allocateDirect(512));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
      while (c.isConnected() && System.nanoTime() - deadline < 0) {
        Thread.sleep(20);
      }
      assertFalse(c.isConnected(), "still connected after the target stopped answering Keep Alive");
      // Failed with the lost controller, long before its own 30 s timeout.
      Throwable e = cause(stranded);
      assertFalse(e instanceof NvmfTimeoutException, String.valueOf(e));
      assertInstanceOf(NvmfException.class, e);
      assertTrue(e.getMessage().contains("Keep Alive"), e.getMessage());
      Throwable later = cause(c.ioQueue(0).flush(1));
      assertTrue(later.getMessage().contains("not sent"), later.getMessage());
    }
  }
}
