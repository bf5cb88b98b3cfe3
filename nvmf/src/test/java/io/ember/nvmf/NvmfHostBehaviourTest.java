package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * What every NVMe-oF target must do for our host. Subclasses bind it to a target: the embedded one,
 * or a real one named by {@code EMBER_TEST_NVMF_TARGET}. Tests use disjoint LBA ranges so that
 * their order does not matter, and keep the data volume to a few MiB so that a software-emulated
 * target stays quick.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@org.junit.jupiter.api.extension.ExtendWith(LeakCheck.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class NvmfHostBehaviourTest {
  /** The target, as {@code nvmf+tcp://host:port/subnqn}. Called once, before any test. */
  protected abstract String targetUri() throws Exception;

  /** Stops whatever {@link #targetUri()} started. */
  protected void stopTarget() throws Exception {}

  protected NvmfController ctrl;
  protected int nsid;
  protected int bs;
  protected long nsze;

  @BeforeAll
  void connect() throws Exception {
    ctrl = NvmfHost.connect(targetUri(), options().build());
    IdentifyNamespace ns = ctrl.namespaces().get(0);
    nsid = ns.nsid();
    bs = ns.blockSize();
    nsze = ns.size();
  }

  protected NvmfHostOptions.Builder options() {
    return NvmfHostOptions.builder()
        .ioQueues(4)
        .ioQueueSize(64)
        .commandTimeout(Duration.ofSeconds(30));
  }

  @AfterAll
  void disconnect() throws Exception {
    if (ctrl != null) {
      ctrl.close();
    }
    stopTarget();
  }

  /** Byte offset of each test's private region: tests never overlap. */
  protected long lba(int region) {
    long regionBytes = 8L << 20;
    return region * regionBytes / bs;
  }

  protected static ByteBuffer pattern(Random r, int len) {
    byte[] b = new byte[len];
    r.nextBytes(b);
    ByteBuffer d = ByteBuffer.allocateDirect(len + 16);
    d.position(7); // data not at position 0: the host must honour position and limit
    d.put(b).flip().position(7);
    return d;
  }

  protected static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  protected static <T> T join(CompletableFuture<T> f) throws NvmfException {
    try {
      return f.get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof NvmfException n) {
        throw n;
      }
      throw new AssertionError(e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void identifiesControllerAndNamespace() {
    IdentifyController id = ctrl.identify();
    assertEquals(NvmfUri.parse(uriForAsserts()).subsystemNqn(), id.subsystemNqn());
    assertTrue(id.ioccsz() >= 4, "IOCCSZ " + id.ioccsz());
    assertTrue((id.sgls() & 3) != 0, "SGLs supported");
    assertFalse(ctrl.namespaces().isEmpty());
    assertTrue(bs >= 512 && Integer.bitCount(bs) == 1, "block size " + bs);
    assertTrue(
        nsze * bs >= 64L << 20, "namespace of at least 64 MiB for these tests, got " + nsze * bs);
    assertTrue(ctrl.ioQueueCount() >= 1);
    assertEquals(1, ctrl.cap() >>> 37 & 1, "CAP.CSS has the NVM command set");
    assertTrue(ctrl.version() >= 0x00010200, "VS " + Integer.toHexString(ctrl.version()));
  }

  /** The URI the subclass connected to (for assertions). */
  protected String uriForAsserts() {
    try {
      return targetUri();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void writesAndReadsBackPatternsOfManySizes() throws Exception {
    int icd = ctrl.identify().inCapsuleDataSize();
    List<Integer> sizes =
        new ArrayList<>(
            List.of(
                bs,
                4096,
                8192 + bs,
                65536 + 3 * bs,
                131072,
                300 * 1024,
                ctrl.maxTransferSize() + 4096));
    if (icd >= bs) {
      sizes.add(icd / bs * bs); // largest in-capsule write
      sizes.add(icd / bs * bs + bs); // smallest R2T write
    }
    Random r = new Random(42);
    long lba = lba(1);
    NvmfQueue q = ctrl.ioQueue(0);
    for (int size : sizes) {
      ByteBuffer w = pattern(r, size);
      long slba = lba + r.nextInt(64);
      join(q.write(nsid, slba, w));
      assertEquals(7, w.position(), "the host must not move the caller's position");
      ByteBuffer back = ByteBuffer.allocateDirect(size + 9);
      back.position(5).limit(5 + size);
      join(ctrl.ioQueue(ctrl.ioQueueCount() - 1).read(nsid, slba, back));
      assertArrayEquals(bytes(w), bytes(back), "pattern of " + size + " bytes at LBA " + slba);
      lba = slba + size / bs + 1;
    }
    join(q.flush(nsid));
  }

  @Test
  void heapBuffersWorkToo() throws Exception {
    byte[] data = new byte[16384];
    new Random(7).nextBytes(data);
    NvmfQueue q = ctrl.ioQueue(0);
    join(q.write(nsid, lba(2), ByteBuffer.wrap(data)));
    ByteBuffer back = ByteBuffer.allocate(data.length);
    join(q.read(nsid, lba(2), back));
    assertArrayEquals(data, back.array());
  }

  @Test
  void deallocateThenReadIsZeroWhenTheControllerSaysSo() throws Exception {
    assumeTrue(ctrl.identify().supportsDsm(), "controller does not support Dataset Management");
    NvmfQueue q = ctrl.ioQueue(0);
    long slba = lba(3);
    ByteBuffer w = pattern(new Random(3), 65536);
    join(q.write(nsid, slba, w));
    join(q.deallocate(nsid, slba, 65536 / bs));
    ByteBuffer back = ByteBuffer.allocateDirect(65536);
    join(q.read(nsid, slba, back));
    if ((ctrl.namespace(nsid).dlfeat() & 7) == 1) {
      assertArrayEquals(
          new byte[65536], bytes(back), "DLFEAT says deallocated blocks read as zeroes");
    }
  }

  @Test
  void writeZeroesClearsBlocks() throws Exception {
    assumeTrue(ctrl.identify().supportsWriteZeroes(), "controller does not support Write Zeroes");
    NvmfQueue q = ctrl.ioQueue(0);
    long slba = lba(4);
    join(q.write(nsid, slba, pattern(new Random(4), 32 * bs)));
    join(q.writeZeroes(nsid, slba + 8, 16));
    ByteBuffer back = ByteBuffer.allocateDirect(32 * bs);
    join(q.read(nsid, slba, back));
    byte[] got = bytes(back);
    for (int i = 8 * bs; i < 24 * bs; i++) {
      assertEquals(0, got[i], "byte " + i + " after Write Zeroes");
    }
    assertFalse(
        java.util.Arrays.equals(new byte[8 * bs], java.util.Arrays.copyOf(got, 8 * bs)),
        "blocks before the zeroed range keep their data");
  }

  @Test
  void queueDepth32OnFourQueues() throws Exception {
    assumeTrue(
        ctrl.ioQueueCount() >= 4, "target granted only " + ctrl.ioQueueCount() + " I/O queues");
    int perQueue = 32;
    int len = 4096;
    long base = lba(5);
    Random r = new Random(5);
    List<ByteBuffer> data = new ArrayList<>();
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    for (int qi = 0; qi < 4; qi++) {
      for (int i = 0; i < perQueue; i++) {
        ByteBuffer w = pattern(r, len);
        data.add(w);
        long slba = base + (long) (qi * perQueue + i) * (len / bs);
        fs.add(ctrl.ioQueue(qi).write(nsid, slba, w));
      }
    }
    for (CompletableFuture<Void> f : fs) {
      join(f);
    }
    fs.clear();
    List<ByteBuffer> back = new ArrayList<>();
    for (int qi = 0; qi < 4; qi++) {
      for (int i = 0; i < perQueue; i++) {
        ByteBuffer b = ByteBuffer.allocateDirect(len);
        back.add(b);
        long slba = base + (long) (qi * perQueue + i) * (len / bs);
        // Read each block through a different queue than the one that wrote it.
        fs.add(ctrl.ioQueue((qi + 1) % 4).read(nsid, slba, b));
      }
    }
    for (CompletableFuture<Void> f : fs) {
      join(f);
    }
    for (int i = 0; i < data.size(); i++) {
      assertArrayEquals(bytes(data.get(i)), bytes(back.get(i)), "block " + i);
    }
  }

  @Test
  void readBeyondTheEndIsLbaOutOfRange() {
    NvmfQueue q = ctrl.ioQueue(0);
    NvmeStatusException e =
        assertThrows(
            NvmeStatusException.class,
            () -> join(q.read(nsid, nsze, ByteBuffer.allocateDirect(bs))));
    NvmeStatusException w =
        assertThrows(
            NvmeStatusException.class,
            () -> join(q.write(nsid, nsze - 1, pattern(new Random(1), 2 * bs))));
    assertTrue(
        e.getMessage().startsWith("Read nsid " + nsid + " slba " + nsze + " nlb 1 failed: "),
        e.getMessage());
    // Large enough for the R2T path: the error may come before any R2T, or after the data.
    NvmeStatusException big =
        assertThrows(
            NvmeStatusException.class,
            () -> join(q.write(nsid, nsze - 8, pattern(new Random(2), 64 * 1024))));
    for (NvmeStatusException x : List.of(e, w, big)) {
      if (strictLbaRangeCheck()) {
        assertEquals(0, x.sct(), x.getMessage());
        assertEquals(0x80, x.sc(), x.getMessage());
        assertTrue(x.getMessage().contains("LBA Out of Range"), x.getMessage());
      }
      assertTrue(
          x.dnr() || !strictLbaRangeCheck(),
          "LBA Out of Range is not retryable: " + x.getMessage());
    }
    // The queue keeps working after errors.
    assertDoesNotFail(q.read(nsid, 0, ByteBuffer.allocateDirect(bs)));
  }

  /**
   * Whether the target answers LBA Out of Range (SCT 0, SC 80h) itself. Linux nvmet with a block
   * device back end passes the request to the block layer, which fails it as an I/O error: it
   * answers Internal Error (06h) instead.
   */
  protected boolean strictLbaRangeCheck() {
    return true;
  }

  @Test
  void unknownNamespaceIsInvalidNamespace() {
    NvmeStatusException e =
        assertThrows(NvmeStatusException.class, () -> join(ctrl.ioQueue(0).flush(0x7FFF)));
    assertEquals(0, e.sct());
    assertEquals(0x0B, e.sc(), e.getMessage());
  }

  @Test
  void argumentErrorsThrowAtOnce() {
    NvmfQueue q = ctrl.ioQueue(0);
    assertThrows(
        IllegalArgumentException.class, () -> q.read(nsid, 0, ByteBuffer.allocateDirect(bs + 1)));
    assertThrows(
        IllegalArgumentException.class, () -> q.write(nsid, 0, ByteBuffer.allocateDirect(0)));
    assertThrows(
        IllegalArgumentException.class, () -> q.read(0x7FFF, 0, ByteBuffer.allocateDirect(bs)));
  }

  @Test
  void digestsWhenNegotiated() throws Exception {
    assumeTrue(
        NvmfUri.parse(uriForAsserts()).transport().equals("tcp"),
        "header and data digests belong to NVMe/TCP");
    try (NvmfController c =
        NvmfHost.connect(
            uriForAsserts(),
            NvmfHostOptions.builder().headerDigest(true).dataDigest(true).ioQueues(1).build())) {
      NvmfQueue q = c.ioQueue(0);
      Random r = new Random(9);
      for (int size : new int[] {4096, 40960 + bs}) {
        ByteBuffer w = pattern(r, size);
        join(q.write(nsid, lba(6), w));
        ByteBuffer back = ByteBuffer.allocateDirect(size);
        join(q.read(nsid, lba(6), back));
        assertArrayEquals(bytes(w), bytes(back), size + " bytes with digests");
      }
    }
  }

  @Test
  void secondControllerSeesTheFirstOnesData() throws Exception {
    ByteBuffer w = pattern(new Random(11), 8192);
    join(ctrl.ioQueue(0).write(nsid, lba(7), w));
    try (NvmfController c = NvmfHost.connect(uriForAsserts(), NvmfHostOptions.builder().build())) {
      ByteBuffer back = ByteBuffer.allocateDirect(8192);
      join(c.ioQueue(0).read(nsid, lba(7), back));
      assertArrayEquals(bytes(w), bytes(back));
    }
  }

  @Test
  void connectToUnknownSubsystemFailsWithConnectStatus() throws Exception {
    NvmfUri u = NvmfUri.parse(uriForAsserts());
    String bad =
        "nvmf+"
            + u.transport()
            + "://"
            + u.host()
            + ":"
            + u.port()
            + "/nqn.2014-08.io.ember:no-such-subsystem";
    NvmfException e =
        assertThrows(
            NvmfException.class,
            () ->
                NvmfHost.connect(
                        bad,
                        NvmfHostOptions.builder().connectTimeout(Duration.ofSeconds(10)).build())
                    .close());
    assertInstanceOf(NvmeStatusException.class, e, e.getMessage());
    assertEquals(1, ((NvmeStatusException) e).sct(), e.getMessage());
  }

  @Test
  void discoveryControllerListsTheSubsystem() throws Exception {
    NvmfUri u = NvmfUri.parse(uriForAsserts());
    assumeTrue(u.transport().equals("tcp"), "this host discovers over NVMe/TCP only");
    List<DiscoveryLogEntry> entries =
        NvmfHost.discover(u.host(), u.port(), NvmfHostOptions.defaults());
    assertTrue(
        entries.stream().anyMatch(e -> e.subnqn().equals(u.subsystemNqn()) && e.trtype() == 3),
        "discovery log of "
            + u.host()
            + ":"
            + u.port()
            + " lists "
            + u.subsystemNqn()
            + ": "
            + entries);
  }

  static void assertDoesNotFail(CompletableFuture<?> f) {
    try {
      f.get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError(
          "expected success, got " + (e.getCause() != null ? e.getCause() : e), e);
    }
  }

  static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }
}
