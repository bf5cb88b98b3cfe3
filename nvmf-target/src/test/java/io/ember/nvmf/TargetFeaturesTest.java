package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** Discovery, host access control, command timeouts and a target that goes away mid-command. */
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TargetFeaturesTest {
  static final String HOST_A = "nqn.2024-01.io.ember:host-a";
  static final String HOST_B = "nqn.2024-01.io.ember:host-b";

  /** A 1 MiB memory namespace with 512-byte blocks, for tests that change one of its calls. */
  abstract static class OverMemory implements Namespace {
    final MemoryNamespace mem = new MemoryNamespace(1 << 20, 512);

    @Override
    public long blockCount() {
      return mem.blockCount();
    }

    @Override
    public int blockSize() {
      return 512;
    }

    @Override
    public ByteBuf read(ByteBufAllocator alloc, long offset, int len) throws IOException {
      return mem.read(alloc, offset, len);
    }

    @Override
    public void write(long offset, ByteBuf src) throws IOException {
      mem.write(offset, src);
    }

    @Override
    public void flush() {}

    @Override
    public void deallocate(long offset, long len) {
      mem.deallocate(offset, len);
    }
  }

  /** A namespace whose reads wait until released: lets a test hold a command in flight. */
  static final class StallingNamespace extends OverMemory {
    final CountDownLatch release = new CountDownLatch(1);
    final CountDownLatch entered = new CountDownLatch(1);

    @Override
    public boolean blocking() {
      return true;
    }

    @Override
    public ByteBuf read(ByteBufAllocator alloc, long offset, int len) throws IOException {
      entered.countDown();
      try {
        release.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return mem.read(alloc, offset, len);
    }
  }

  /** A namespace with a bug: every read and write throws an unchecked exception. */
  static final class BrokenNamespace implements Namespace {
    private final boolean blocking;

    BrokenNamespace(boolean blocking) {
      this.blocking = blocking;
    }

    @Override
    public long blockCount() {
      return 2048;
    }

    @Override
    public int blockSize() {
      return 512;
    }

    @Override
    public boolean blocking() {
      return blocking;
    }

    @Override
    public ByteBuf read(ByteBufAllocator alloc, long offset, int len) {
      throw new IllegalStateException("broken read");
    }

    @Override
    public void write(long offset, ByteBuf src) {
      throw new IllegalStateException("broken write");
    }

    @Override
    public void flush() {}

    @Override
    public void deallocate(long offset, long len) {
      throw new IllegalStateException("broken deallocate");
    }
  }

  static Throwable cause(CompletableFuture<?> f) throws Exception {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
    return e.getCause();
  }

  @Test
  @Timeout(30)
  void controllerSaysWhenItsConnectionIsGone() throws Exception {
    Subsystem s =
        new Subsystem("nqn.2024-01.io.ember:liveness")
            .namespace(1, new MemoryNamespace(1 << 20, 512));
    NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
    try (NvmfController c =
        NvmfHost.connect(
            t.uri("nqn.2024-01.io.ember:liveness"),
            NvmfHostOptions.builder().ioQueues(2).build())) {
      assertTrue(c.isConnected());
      t.close();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (c.isConnected() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertTrue(!c.isConnected(), "still connected after the target closed");
    } finally {
      t.close();
    }
  }

  @Test
  void discoveryLogListsOnlyTheSubsystemsAHostMaySee() throws Exception {
    Subsystem open = new Subsystem("nqn.2024-01.io.ember:open");
    open.addNamespace(new MemoryNamespace(1 << 20, 512));
    Subsystem closed = new Subsystem("nqn.2024-01.io.ember:closed").allowHost(HOST_A);
    closed.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t =
        NvmfTarget.builder()
            .listen("127.0.0.1", 0)
            .subsystem(open)
            .subsystem(closed)
            .build()
            .start()) {
      List<DiscoveryLogEntry> a =
          NvmfHost.discover(
              "127.0.0.1", t.port(), NvmfHostOptions.builder().hostNqn(HOST_A).build());
      assertEquals(
          List.of("nqn.2024-01.io.ember:closed", "nqn.2024-01.io.ember:open"),
          a.stream().map(DiscoveryLogEntry::subnqn).sorted().toList());
      DiscoveryLogEntry e = a.get(0);
      assertEquals(3, e.trtype(), "TCP");
      assertEquals(1, e.adrfam(), "IPv4");
      assertEquals(2, e.subtype(), "NVM subsystem");
      assertEquals("127.0.0.1", e.traddr());
      assertEquals(Integer.toString(t.port()), e.trsvcid());
      List<DiscoveryLogEntry> b =
          NvmfHost.discover(
              "127.0.0.1", t.port(), NvmfHostOptions.builder().hostNqn(HOST_B).build());
      assertEquals(
          List.of("nqn.2024-01.io.ember:open"), b.stream().map(DiscoveryLogEntry::subnqn).toList());
    }
  }

  @Test
  void onlyAllowedHostsConnect() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:acl").allowHost(HOST_A);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start()) {
      String uri = t.uri(s.nqn());
      NvmfException e =
          assertThrows(
              NvmfException.class,
              () ->
                  NvmfHost.connect(uri, NvmfHostOptions.builder().hostNqn(HOST_B).build()).close());
      NvmeStatusException st = assertInstanceOf(NvmeStatusException.class, e, e.getMessage());
      assertEquals(1, st.sct());
      assertEquals(0x84, st.sc());
      assertTrue(e.getMessage().contains("Connect Invalid Host"), e.getMessage());
      try (NvmfController c =
          NvmfHost.connect(uri, NvmfHostOptions.builder().hostNqn(HOST_A).build())) {
        assertEquals(1, c.namespaces().size());
      }
    }
  }

  @Test
  void timeoutFailsTheCommandNotTheQueue() throws Exception {
    StallingNamespace slow = new StallingNamespace();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:slow");
    s.addNamespace(slow);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder().commandTimeout(Duration.ofMillis(300)).build())) {
      ByteBuffer buf = ByteBuffer.allocateDirect(512);
      CompletableFuture<Void> stuck = c.ioQueue(0).read(1, 0, buf);
      Throwable e = cause(stuck);
      assertInstanceOf(NvmfTimeoutException.class, e, String.valueOf(e));
      assertTrue(e.getMessage().contains("300 ms"), e.getMessage());
      // The queue still serves other commands while the late one is outstanding.
      ByteBuffer w = ByteBuffer.allocateDirect(512).put(0, (byte) 42);
      c.ioQueue(0).write(2, 0, w).get(60, TimeUnit.SECONDS);
      ByteBuffer r = ByteBuffer.allocateDirect(512);
      c.ioQueue(0).read(2, 0, r).get(60, TimeUnit.SECONDS);
      assertEquals(42, r.get(0));
      // The late completion is dropped; the buffer of the timed-out read is not written.
      slow.write(0, io.netty.buffer.Unpooled.wrappedBuffer(new byte[] {7, 7, 7, 7}));
      slow.release.countDown();
      Thread.sleep(200);
      assertEquals(0, buf.get(0), "a timed-out read's buffer is left alone");
      c.ioQueue(0).read(2, 0, r).get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void targetClosingMidCommandFailsThoseCommandsClearly() throws Exception {
    StallingNamespace slow = new StallingNamespace();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:vanishing");
    s.addNamespace(slow);
    NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
    try (NvmfController c = NvmfHost.connect(t.uri(s.nqn()), NvmfHostOptions.defaults())) {
      CompletableFuture<Void> read = c.ioQueue(0).read(1, 0, ByteBuffer.allocateDirect(4096));
      assertTrue(slow.entered.await(60, TimeUnit.SECONDS), "read reached the namespace");
      Thread closer = new Thread(t::close);
      closer.start();
      Throwable e = cause(read);
      assertInstanceOf(NvmfException.class, e);
      assertTrue(e.getMessage().contains("closed by the target"), e.getMessage());
      slow.release.countDown();
      closer.join(60_000);
      // Later commands fail at once with the same reason instead of hanging.
      Throwable later = cause(c.ioQueue(0).flush(1));
      assertTrue(later.getMessage().contains("closed by the target"), later.getMessage());
    } finally {
      slow.release.countDown();
      t.close();
    }
  }

  /** A 64 MiB memory namespace that notes which thread runs each deallocation. */
  static final class ZeroingRecorder extends OverMemory {
    final MemoryNamespace big = new MemoryNamespace(64L << 20, 512);
    final List<String> threads = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public long blockCount() {
      return big.blockCount();
    }

    @Override
    public boolean blocking() {
      return false;
    }

    @Override
    public ByteBuf read(ByteBufAllocator alloc, long offset, int len) {
      return big.read(alloc, offset, len);
    }

    @Override
    public void write(long offset, ByteBuf src) {
      big.write(offset, src);
    }

    @Override
    public void deallocate(long offset, long len) {
      threads.add(Thread.currentThread().getName());
      big.deallocate(offset, len);
    }
  }

  @Test
  void largeZeroingLeavesTheNetworkThreadAndSmallStaysOnIt() throws Exception {
    ZeroingRecorder ns = new ZeroingRecorder();
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:zeroing");
    s.addNamespace(ns);
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c = NvmfHost.connect(t.uri(s.nqn()), NvmfHostOptions.defaults())) {
      // A whole written namespace deallocated at once, as a discard of the device does, is
      // zeroed off the network thread; a block, or Ember's 1 MiB, on it.
      ByteBuffer data = ByteBuffer.allocateDirect(128 << 10);
      while (data.hasRemaining()) {
        data.put((byte) 7);
      }
      for (long lba = 0; lba < ns.blockCount(); lba += 256) {
        c.ioQueue(0).write(1, lba, data.clear()).get(60, TimeUnit.SECONDS);
      }
      c.ioQueue(0).deallocate(1, 0, 2048).get(60, TimeUnit.SECONDS);
      c.ioQueue(0).deallocate(1, 0, ns.blockCount()).get(60, TimeUnit.SECONDS);
      c.ioQueue(0).writeZeroes(1, 0, 65536).get(60, TimeUnit.SECONDS);
      assertEquals(3, ns.threads.size(), ns.threads.toString());
      assertTrue(!ns.threads.get(0).startsWith("nvmf-target-io-"), ns.threads.toString());
      assertTrue(ns.threads.get(1).startsWith("nvmf-target-io-"), ns.threads.toString());
      assertTrue(ns.threads.get(2).startsWith("nvmf-target-io-"), ns.threads.toString());
      ByteBuffer back = ByteBuffer.allocateDirect(1 << 20);
      c.ioQueue(0).read(1, ns.blockCount() - 2048, back).get(60, TimeUnit.SECONDS);
      assertEquals(ByteBuffer.allocateDirect(1 << 20), back.clear());
    }
  }

  @Test
  void aNamespaceThatThrowsStillGetsEveryCommandAnswered() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:broken");
    s.addNamespace(new BrokenNamespace(false));
    s.addNamespace(new BrokenNamespace(true));
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder().commandTimeout(Duration.ofSeconds(20)).build())) {
      for (int nsid : new int[] {1, 2}) {
        List<CompletableFuture<Void>> fs =
            List.of(
                c.ioQueue(0).read(nsid, 0, ByteBuffer.allocateDirect(512)),
                c.ioQueue(0).write(nsid, 0, ByteBuffer.allocateDirect(512)),
                c.ioQueue(0).writeZeroes(nsid, 0, 1),
                c.ioQueue(0).deallocate(nsid, 0, 1));
        for (CompletableFuture<Void> f : fs) {
          NvmeStatusException e = assertInstanceOf(NvmeStatusException.class, cause(f));
          assertEquals(0, e.sct(), e.getMessage());
          assertEquals(0x06, e.sc(), "Internal Error: " + e.getMessage());
        }
      }
      c.ioQueue(0).write(3, 0, ByteBuffer.allocateDirect(512)).get(60, TimeUnit.SECONDS);
      assertTrue(c.isConnected());
    }
  }

  /**
   * A namespace that keeps its bytes in memory (so written data is placed PDU by PDU as it comes)
   * and fails every write that touches one block: as a medium error, or with a bug's exception.
   */
  static final class FaultyNamespace extends OverMemory {
    final long badBlock;
    final boolean asBug;

    FaultyNamespace(long badBlock, boolean asBug) {
      this.badBlock = badBlock;
      this.asBug = asBug;
    }

    @Override
    public boolean blocking() {
      return false;
    }

    @Override
    public void write(long offset, ByteBuf src) throws IOException {
      long bad = badBlock * 512;
      if (offset < bad + 512 && offset + src.readableBytes() > bad) {
        if (asBug) {
          throw new IllegalStateException("a bug at block " + badBlock);
        }
        throw new IOException("unreadable block " + badBlock);
      }
      mem.write(offset, src);
    }
  }

  /**
   * A write whose data comes in several PDUs, and whose namespace fails on the second of them: the
   * command is answered (Write Fault for a medium error, Internal Error for a bug), nothing after
   * the failure is stored, and the queue serves the next write.
   */
  @Test
  void aWriteThatFailsPartWayIsAnsweredAndTheQueueGoesOn() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:faulty");
    s.addNamespace(new FaultyNamespace(17, false)); // block 17: in the write's second 8 KiB
    s.addNamespace(new FaultyNamespace(17, true));
    try (NvmfTarget t =
            NvmfTarget.builder()
                .listen("127.0.0.1", 0)
                .subsystem(s)
                .maxH2CData(8192)
                .build()
                .start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder().commandTimeout(Duration.ofSeconds(20)).build())) {
      byte[] data = new byte[32 << 10]; // four H2CData PDUs
      new Random(17).nextBytes(data);
      for (int nsid : new int[] {1, 2}) {
        NvmeStatusException e =
            assertInstanceOf(
                NvmeStatusException.class,
                cause(
                    c.ioQueue(0)
                        .write(nsid, 0, ByteBuffer.allocateDirect(data.length).put(data).flip())));
        if (nsid == 1) {
          assertEquals(2, e.sct(), "media error: " + e.getMessage());
          assertEquals(0x80, e.sc(), "Write Fault: " + e.getMessage());
        } else {
          assertEquals(0, e.sct(), "generic: " + e.getMessage());
          assertEquals(0x06, e.sc(), "Internal Error: " + e.getMessage());
        }
        ByteBuffer rest = ByteBuffer.allocateDirect(16 << 10);
        c.ioQueue(0).read(nsid, 32, rest).get(60, TimeUnit.SECONDS);
        assertArrayEquals(new byte[16 << 10], toArray(rest), nsid + ": the PDUs after the failure");

        ByteBuffer good = ByteBuffer.allocateDirect(data.length).put(data).flip();
        c.ioQueue(0).write(nsid, 128, good).get(60, TimeUnit.SECONDS);
        ByteBuffer back = ByteBuffer.allocateDirect(data.length);
        c.ioQueue(0).read(nsid, 128, back).get(60, TimeUnit.SECONDS);
        assertArrayEquals(data, toArray(back), nsid + ": a later write on the same queue");
      }
      assertTrue(c.isConnected());
    }
  }

  private static byte[] toArray(ByteBuffer b) {
    byte[] a = new byte[b.remaining()];
    b.duplicate().get(a);
    return a;
  }

  @Test
  void keepAliveKeepsAnIdleControllerAlive() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:idle");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        NvmfController c =
            NvmfHost.connect(
                t.uri(s.nqn()),
                NvmfHostOptions.builder().keepAlive(Duration.ofSeconds(2)).build())) {
      // Idle for well over KATO is the point; KATO is long enough that a loaded machine still
      // sends keep-alives in time.
      Thread.sleep(5000);
      assertEquals(1, t.controllerCount(), "controller survives idle time well beyond KATO");
      c.ioQueue(0).flush(1).get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void commandsAfterCloseFailInsteadOfThrowing() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:closed-host");
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start()) {
      NvmfController c = NvmfHost.connect(t.uri(s.nqn()), NvmfHostOptions.defaults());
      NvmfQueue q = c.ioQueue(0);
      c.close();
      c.close(); // idempotent
      Throwable e = cause(q.read(1, 0, ByteBuffer.allocateDirect(512)));
      assertInstanceOf(NvmfException.class, e);
      assertTrue(e.getMessage().startsWith("Read nsid 1 slba 0 nlb 1 not sent"), e.getMessage());
    }
  }

  @Test
  void connectionRefusedSaysWhere() {
    NvmfException e =
        assertThrows(
            NvmfException.class,
            () ->
                NvmfHost.connect(
                    "nvmf+tcp://127.0.0.1:1/nqn.2024-01.io.ember:nothing",
                    NvmfHostOptions.builder().connectTimeout(Duration.ofSeconds(2)).build()));
    assertTrue(e.getMessage().contains("127.0.0.1:1"), e.getMessage());
  }

  @Test
  void manyHostsAndQueuesAtOnce() throws Exception {
    Subsystem s = new Subsystem("nqn.2024-01.io.ember:many");
    s.addNamespace(new MemoryNamespace(8L << 20, 4096));
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start()) {
      NvmfController[] hosts = new NvmfController[4];
      for (int i = 0; i < hosts.length; i++) {
        hosts[i] = NvmfHost.connect(t.uri(s.nqn()), NvmfHostOptions.builder().ioQueues(3).build());
      }
      try {
        assertEquals(4, t.controllerCount());
        List<CompletableFuture<Void>> fs = new java.util.ArrayList<>();
        for (int i = 0; i < hosts.length; i++) {
          for (int q = 0; q < 3; q++) {
            for (int k = 0; k < 8; k++) {
              long lba = i * 24L + q * 8L + k;
              ByteBuffer b = ByteBuffer.allocateDirect(4096);
              b.putLong(0, lba * 31 + 7);
              fs.add(hosts[i].ioQueue(q).write(1, lba, b));
            }
          }
        }
        for (CompletableFuture<Void> f : fs) {
          f.get(10, TimeUnit.SECONDS);
        }
        for (long lba = 0; lba < 96; lba++) {
          ByteBuffer r = ByteBuffer.allocateDirect(4096);
          hosts[(int) (lba % 4)].ioQueue((int) (lba % 3)).read(1, lba, r).get(10, TimeUnit.SECONDS);
          assertEquals(lba * 31 + 7, r.getLong(0), "block " + lba);
        }
        byte[] z = new byte[8];
        ByteBuffer r = ByteBuffer.allocateDirect(4096);
        hosts[0].ioQueue(0).read(1, 500, r).get(10, TimeUnit.SECONDS);
        byte[] got = new byte[8];
        r.get(got);
        assertArrayEquals(z, got, "never-written blocks read as zeroes");
      } finally {
        for (NvmfController h : hosts) {
          h.close();
        }
      }
    }
  }
}
