package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.namenode.NameNodeKeys;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import io.ember.tier.nvmf.NvmfTierKeys;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The NVMf tier in a cluster: spill from DRAM, a target that dies, deallocation on delete. */
class NvmfTierClusterTest {
  private MiniCluster cluster;

  /** Targets a test started itself, closed after the cluster whose data nodes use them. */
  private final List<NvmfTarget> targets = new ArrayList<>();

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    targets.forEach(NvmfTarget::close);
  }

  private static ClassUsage usage(EmberClient c, StorageClass sc) throws EmberException {
    return c.df().stream().filter(u -> u.storageClass().equals(sc)).findFirst().orElseThrow();
  }

  /** Waits until the NVMf class's usage (live and lost nodes, free blocks) satisfies {@code ok}. */
  private static void awaitNvmf(EmberClient c, Predicate<ClassUsage> ok, String what)
      throws InterruptedException {
    await(
        () -> {
          try {
            return ok.test(usage(c, StorageClass.NVMF));
          } catch (EmberException e) {
            return false;
          }
        },
        what);
  }

  /** A cluster whose only data node is NVMf, on an embedded target of {@code size}. */
  private static MiniCluster embeddedNvmfOnly(String size) throws EmberException {
    return embeddedNvmfOnlyBuilder(size).build();
  }

  /** A cluster of 64 KiB blocks with no DRAM data node, for the test to add NVMf ones. */
  private static MiniCluster.Builder nvmfOnly() {
    return MiniCluster.builder().dramDatanodes(0).blockSize("64k");
  }

  private static MiniCluster.Builder embeddedNvmfOnlyBuilder(String size) {
    return nvmfOnly().set(NvmfDataNodeKeys.EMBEDDED_SIZE, size).nvmfDatanode("");
  }

  /** Reads {@code path} whole through {@code c}, which must fail; returns the failure. */
  private static EmberException readFails(EmberClient c, String path) {
    return assertThrows(
        EmberException.class,
        () -> {
          try (InputStream in = c.open(path)) {
            in.readAllBytes();
          }
        });
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  @Test
  void nvmfTrafficAuthenticatesInBandWhereTheTargetAsks(@TempDir Path dir) throws Exception {
    java.security.SecureRandom random = new java.security.SecureRandom();
    String hostKey = DhchapSecret.generate(DhchapHash.SHA256, 32, random).encoded();
    String ctrlKey = DhchapSecret.generate(DhchapHash.SHA384, 48, random).encoded();
    String host = "nqn.2024-01.io.ember:cluster-host";
    Path hosts = dir.resolve("nvmf-hosts");
    java.nio.file.Files.writeString(
        hosts,
        "# the cluster's members\n" + host + " " + hostKey + " " + ctrlKey + " group=ffdhe2048\n");
    cluster =
        nvmfOnly()
            .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "4m")
            .set(NvmfDataNodeKeys.EMBEDDED_HOSTS, hosts.toString())
            .set(NvmfTierKeys.HOST_NQN, host)
            .set(NvmfTierKeys.DHCHAP_SECRET, hostKey)
            .set(NvmfTierKeys.DHCHAP_CTRL_SECRET, ctrlKey)
            .nvmfDatanode("")
            .build();
    EmberClient c = cluster.newClient();
    byte[] bytes = data(5 * 65536 + 7, 3);
    try (EmberOutputStream out = c.createBuffered("/authenticated", CreateOptions.DEFAULT)) {
      out.write(bytes);
    }
    try (InputStream in = c.open("/authenticated")) {
      assertArrayEquals(bytes, in.readAllBytes());
    }
    assertEquals(StorageClass.NVMF, c.blockLocations("/authenticated").get(0).storageClass());

    // A client with another secret, or none, reads nothing, and says why.
    String wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, random).encoded();
    for (String secret : List.of(wrong, "")) {
      EmberClient other =
          cluster.newClient(
              cluster
                  .config()
                  .with(NvmfTierKeys.DHCHAP_SECRET, secret)
                  .with(NvmfTierKeys.DHCHAP_CTRL_SECRET, ""));
      EmberException e = readFails(other, "/authenticated");
      assertTrue(e.getMessage().contains("DH-HMAC-CHAP"), e.getMessage());
    }
    // The right client still reads, and the data node stayed healthy throughout.
    try (InputStream in = c.open("/authenticated")) {
      assertArrayEquals(bytes, in.readAllBytes());
    }
    assertEquals(0, usage(c, StorageClass.NVMF).lostNodes());
  }

  @Test
  void fullDramSpillsToNvmfAndEverythingReadsBack() throws Exception {
    cluster =
        MiniCluster.builder()
            .blockSize("64k")
            .dramCapacity("512k")
            .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "16m")
            .nvmfDatanode("")
            .build();
    EmberClient c = cluster.newClient();
    byte[] big = data(20 * 65536 + 123, 1);
    try (EmberOutputStream out = c.createBuffered("/spill", CreateOptions.DEFAULT)) {
      out.write(big);
    }
    try (InputStream in = c.open("/spill")) {
      assertArrayEquals(big, in.readAllBytes());
    }
    List<BlockLocation> blocks = c.blockLocations("/spill");
    assertEquals(21, blocks.size());
    for (BlockLocation b : blocks) {
      assertEquals(
          b.index() < 8 ? StorageClass.DRAM : StorageClass.NVMF,
          b.storageClass(),
          "block " + b.index());
    }
    assertEquals(0, usage(c, StorageClass.DRAM).freeBlocks());
    assertEquals(13, usage(c, StorageClass.NVMF).usedBytes() / 65536);
    // NVMf is last in the spill order: it fills, then fails naming the class.
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> {
              try (EmberOutputStream out =
                  c.create(
                      "/nvmf-only", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
                out.write(new byte[17 << 20]);
              }
            });
    assertEquals(ErrorCode.NO_CAPACITY, e.code());
    assertTrue(e.getMessage().contains("no NVMf capacity left for 64 KiB"), e.getMessage());
  }

  /**
   * A client whose NVMf connections poll for a while after each event, against a data node whose
   * embedded target polls too: commands must find the loops polling or wake them once the window
   * has passed, and data round-trips either way.
   */
  @Test
  void aClientThatPollsItsTargetWritesAndReadsLikeAnyOther() throws Exception {
    cluster =
        embeddedNvmfOnlyBuilder("16m").set(NvmfDataNodeKeys.EMBEDDED_BUSY_POLL, "200us").build();
    assertTrue(
        Thread.getAllStackTraces().keySet().stream()
            .anyMatch(t -> t.getName().startsWith("nvmf-target-poll-")),
        "the embedded target does not poll");
    EmberClient polling =
        cluster.newClient(EmberConfig.defaults().with(NvmfTierKeys.BUSY_POLL, "200us"));
    byte[] data = data(5 * 65536 + 123, 7);
    try (EmberOutputStream out =
        polling.create("/polled", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
      out.write(data);
    }
    assertTrue(
        Thread.getAllStackTraces().keySet().stream()
            .anyMatch(t -> t.getName().startsWith("nvmf-host-poll-")),
        "no polling thread");
    try (InputStream in = polling.open("/polled")) {
      assertArrayEquals(data, in.readAllBytes());
    }
    // Byte-granular read-modify-write through the polling connections, read by a sleeping client.
    try (EmberOutputStream out =
        polling.create(
            "/polled-small", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
      for (int i = 0; i < 50; i++) {
        out.write(data, i * 7, 7);
        out.flush();
      }
    }
    try (InputStream in = cluster.newClient().open("/polled-small")) {
      assertArrayEquals(java.util.Arrays.copyOf(data, 350), in.readAllBytes());
    }
  }

  /**
   * NVMf locations are asked again once older than the name node lets them be trusted; asking again
   * for the blocks of a run the file already holds is not a run that came back short, and the file
   * goes on taking its blocks in runs.
   */
  @Test
  void aWriterThatHoldsARunPastItsTrustStillTakesTheNextRunWhole() throws Exception {
    cluster = embeddedNvmfOnly("16m");
    EmberClient c = cluster.newClient();
    long free = usage(c, StorageClass.NVMF).freeBlocks();
    byte[] first = data(20 * 65536, 3);
    byte[] second = data(20 * 65536, 4);
    try (EmberOutputStream out =
        c.create("/trusted", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
      out.write(first);
      out.flush();
      assertEquals(free - 32, usage(c, StorageClass.NVMF).freeBlocks()); // blocks 16 to 31 ahead
      long untrusted = System.nanoTime() + BlockLocation.UNCHECKED_TRUST.toNanos();
      while (System.nanoTime() - untrusted <= 0) {
        Thread.sleep(50);
      }
      out.write(second);
      out.flush();
      // Blocks 20 to 31 were asked again; blocks 32 to 63 still came as one run.
      assertEquals(free - 64, usage(c, StorageClass.NVMF).freeBlocks());
    }
    try (InputStream in = c.open("/trusted")) {
      byte[] got = in.readAllBytes();
      assertArrayEquals(first, java.util.Arrays.copyOfRange(got, 0, first.length));
      assertArrayEquals(second, java.util.Arrays.copyOfRange(got, first.length, got.length));
    }
  }

  @Test
  void deletedNvmfBlocksAreDeallocatedOnTheTargetBeforeReuse() throws Exception {
    cluster = embeddedNvmfOnly("1m");
    EmberClient c = cluster.newClient();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberOutputStream out = c.create("/a", nvmf)) {
      out.write(data(15 * 65536, 2)); // every block of the target: the last LBA is its stamp
    }
    List<BlockLocation> blocks = c.blockLocations("/a");
    c.delete("/a", false);
    // Freed blocks wait for the data node to deallocate them, then come back.
    awaitNvmf(c, u -> u.freeBlocks() == 15, "the 15 freed blocks to be deallocated and returned");
    // Deallocated blocks read as zeroes on this target: the bytes were gone before reuse.
    io.ember.client.spi.StorageEndpoint raw =
        new io.ember.tier.nvmf.NvmfTier()
            .open(
                new io.ember.client.spi.TierContext(
                    cluster.config(), null, new io.ember.client.ClientMetrics()));
    try {
      for (BlockLocation b : blocks) {
        io.netty.buffer.ByteBuf bytes = raw.read(b, 0, 65536).join();
        try {
          for (int i = 0; i < 65536; i++) {
            assertEquals(
                0, bytes.getByte(bytes.readerIndex() + i), "block " + b.index() + " @" + i);
          }
        } finally {
          bytes.release();
        }
      }
    } finally {
      raw.close();
    }
  }

  /**
   * A memory namespace whose deallocations fail, as a target's media would, or do not end (a target
   * stalled on them), while told to.
   */
  private static final class TroubledDeallocation implements Namespace {
    private final MemoryNamespace memory;
    private final boolean blocking;
    volatile boolean failing;

    /** While set, each deallocation waits for it (a minute at most), on the target's workers. */
    volatile java.util.concurrent.CountDownLatch stall;

    final java.util.concurrent.atomic.AtomicInteger stalled =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger failed =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger done =
        new java.util.concurrent.atomic.AtomicInteger();

    /** Deallocations fail until told otherwise. */
    static TroubledDeallocation failing(MemoryNamespace memory) {
      TroubledDeallocation ns = new TroubledDeallocation(memory, false);
      ns.failing = true;
      return ns;
    }

    /**
     * Deallocations wait for {@code stall}; the target runs this namespace's I/O on its workers, so
     * a stalled deallocation holds up only a worker, not the reads of other commands.
     */
    static TroubledDeallocation stalling(
        MemoryNamespace memory, java.util.concurrent.CountDownLatch stall) {
      TroubledDeallocation ns = new TroubledDeallocation(memory, true);
      ns.stall = stall;
      return ns;
    }

    private TroubledDeallocation(MemoryNamespace memory, boolean blocking) {
      this.memory = memory;
      this.blocking = blocking;
    }

    @Override
    public long blockCount() {
      return memory.blockCount();
    }

    @Override
    public int blockSize() {
      return memory.blockSize();
    }

    @Override
    public boolean blocking() {
      return blocking;
    }

    @Override
    public io.netty.buffer.ByteBuf read(
        io.netty.buffer.ByteBufAllocator alloc, long offset, int len) {
      return memory.read(alloc, offset, len);
    }

    @Override
    public void write(long offset, io.netty.buffer.ByteBuf src) {
      memory.write(offset, src);
    }

    @Override
    public void flush() {}

    @Override
    public void deallocate(long offset, long len) throws java.io.IOException {
      java.util.concurrent.CountDownLatch held = stall;
      if (held != null) {
        stalled.incrementAndGet();
        try {
          held.await(1, java.util.concurrent.TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.IOException("interrupted (test)", e);
        }
      }
      if (failing) {
        failed.incrementAndGet();
        throw new java.io.IOException("deallocation failed (test)");
      }
      memory.deallocate(offset, len);
      done.incrementAndGet();
    }
  }

  /**
   * Writes one block to {@code path}, which must fail for want of capacity, and leave no file;
   * returns the failure's message.
   */
  private static String fullTierMessage(EmberClient c, String path) {
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    EmberException full =
        assertThrows(
            EmberException.class,
            () -> {
              try (EmberOutputStream out = c.create(path, nvmf)) {
                out.write(data(65536, 9));
              }
            });
    assertEquals(ErrorCode.NO_CAPACITY, full.code(), full.getMessage());
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> c.lookup(path)).code());
    return full.getMessage();
  }

  @Test
  void freedBlocksATargetFailsToDeallocateStayOutOfUseUntilARetrySucceeds() throws Exception {
    String nqn = "nqn.2026-11.io.ember:failing-deallocation";
    // 1 MiB: 15 blocks of 64 KiB and the stamp's LBA.
    TroubledDeallocation ns = TroubledDeallocation.failing(new MemoryNamespace(1 << 20, 4096));
    NvmfTarget t = target(nqn, 0, ns);
    cluster =
        nvmfOnly()
            .set(NameNodeKeys.DEALLOCATION_RETRY, "2s")
            .nvmfDatanode(t.uri(nqn) + "/1")
            .build();
    EmberClient c = cluster.newClient();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberOutputStream out = c.create("/a", nvmf)) {
      out.write(data(15 * 65536, 2));
    }
    c.delete("/a", false);
    await(() -> ns.failed.get() >= 15, "the data node to fail to deallocate the 15 freed blocks");
    // The failed blocks still hold /a's bytes, so none goes to a new file; the writer is told
    // they wait for a retry, not that they will be free within seconds.
    String[] message = new String[1];
    await(
        () -> {
          message[0] = fullTierMessage(c, "/b");
          return message[0].endsWith(
              " (block 0 of /b); 15 freed blocks were not confirmed deallocated by their data node"
                  + " and are sent again every 2 s (a failure shows in the data node's log)");
        },
        "the name node to learn the deallocations failed");
    assertEquals(0, usage(c, StorageClass.NVMF).freeBlocks());
    assertEquals(0, ns.done.get());
    int failedBefore = ns.failed.get();
    // The name node sends them again (while the target still fails, more than once), and once
    // the target recovers they are deallocated and come back.
    await(() -> ns.failed.get() >= failedBefore + 30, "the failed deallocations to be retried");
    ns.failing = false;
    awaitNvmf(c, u -> u.freeBlocks() == 15, "the 15 freed blocks to be deallocated and returned");
    assertTrue(ns.done.get() >= 15, ns.done.get() + " deallocations done");
    byte[] b = data(15 * 65536, 3);
    try (EmberOutputStream out = c.create("/b", nvmf)) {
      out.write(b);
    }
    try (InputStream in = c.open("/b")) {
      assertArrayEquals(b, in.readAllBytes());
    }
  }

  @Test
  void aDeallocationTheTargetStallsOnDoesNotStopHeartbeats() throws Exception {
    String nqn = "nqn.2026-12.io.ember:stalled-deallocation";
    java.util.concurrent.CountDownLatch stall = new java.util.concurrent.CountDownLatch(1);
    TroubledDeallocation ns =
        TroubledDeallocation.stalling(new MemoryNamespace(1 << 20, 4096), stall);
    NvmfTarget t = target(nqn, 0, ns);
    Duration timeout = Duration.ofSeconds(5);
    cluster =
        nvmfOnly()
            .set(NameNodeKeys.DATANODE_TIMEOUT, timeout.toSeconds() + "s")
            .set(EmberKeys.HEARTBEAT_INTERVAL, "200ms")
            // Should the node give up on the stalled command first (a very slow machine), the
            // retry soon deallocates the block all the same.
            .set(NameNodeKeys.DEALLOCATION_RETRY, "2s")
            .nvmfDatanode(t.uri(nqn) + "/1")
            .build();
    try {
      EmberClient c = cluster.newClient();
      CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
      try (EmberOutputStream out = c.create("/a", nvmf)) {
        out.write(data(65536, 4));
      }
      c.delete("/a", false);
      await(() -> ns.stalled.get() >= 1, "the target to take the deallocation");
      long stalledSince = System.nanoTime();
      // The node must stay live while the target sits on the deallocation for longer than the
      // name node's data node timeout; the heartbeat thread that used to wait for it stopped
      // beating, and the node was marked lost.
      await(
          () -> {
            Messages.DatanodeInfo dn;
            try {
              dn = nvmfDatanode(c);
            } catch (EmberException e) {
              return false;
            }
            assertEquals("live", dn.state(), "data node state while its target stalls");
            long heartbeatAfter =
                System.nanoTime()
                    - Duration.ofMillis(dn.lastHeartbeatMillisAgo()).toNanos()
                    - stalledSince;
            return heartbeatAfter > timeout.toNanos();
          },
          "a heartbeat more than " + timeout + " into the stalled deallocation");
      stall.countDown();
      // Once the target answers, the block is reported deallocated and comes back.
      awaitNvmf(c, u -> u.freeBlocks() == 15, "the freed block to be deallocated and returned");
      assertTrue(ns.done.get() >= 1, ns.done.get() + " deallocations done");
    } finally {
      stall.countDown();
    }
  }

  private static Messages.DatanodeInfo nvmfDatanode(EmberClient c) throws EmberException {
    return c.datanodes().stream()
        .filter(d -> d.storageClass().equals(StorageClass.NVMF))
        .reduce(
            (a, b) -> {
              throw new AssertionError("more than one NVMf data node: " + a + ", " + b);
            })
        .orElseThrow();
  }

  @Test
  void dataNodeRegistersAgainWhenItsTargetComesBack() throws Exception {
    String nqn = "nqn.2026-11.io.ember:comeback";
    NvmfTarget first = target(nqn, 0, new MemoryNamespace(8 << 20, 4096));
    int port = first.port();
    cluster =
        nvmfOnly()
            .set(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .nvmfDatanode(first.uri(nqn) + "/1")
            .build();
    EmberClient c = cluster.newClient();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberOutputStream out = c.create("/before", nvmf)) {
      out.write(data(100_000, 1));
    }
    // A reader that cached /before's locations, and is connected to the target, before it goes.
    EmberClient reader = cluster.newClient();
    try (InputStream in = reader.open("/before")) {
      assertArrayEquals(data(100_000, 1), in.readAllBytes());
    }
    BlockLocation old = c.blockLocations("/before").get(0);
    // A writer that wrote part of its file before the target goes, and more after it is back.
    EmberOutputStream idle = c.create("/idle", nvmf);
    idle.write(data(1000, 3));
    idle.flush();
    first.close();
    awaitNvmf(
        c,
        u -> u.lostNodes() == 1,
        "the NVMf data node to be marked lost when its target went away");
    // The target comes back on the same port (empty: its namespace was memory).
    target(nqn, port, new MemoryNamespace(8 << 20, 4096));
    awaitNvmf(c, u -> u.liveNodes() == 1, "the NVMf data node to register again");
    byte[] after = data(200_000, 2);
    try (EmberOutputStream out = c.create("/after", nvmf)) {
      out.write(after);
    }
    try (InputStream in = c.open("/after")) {
      assertArrayEquals(after, in.readAllBytes());
    }
    // The old file's blocks belonged to the lost registration and stay unavailable.
    assertEquals(ErrorCode.DATANODE_LOST, readFails(c, "/before").code());
    // The new registration placed /after where /before was. Through its cached location the
    // reader would read /after's bytes; the target's stamp names the new registration, so the
    // reader asks the name node again, which says the block is lost.
    assertEquals(old.address(), c.blockLocations("/after").get(0).address());
    EmberException stale = readFails(reader, "/before");
    assertEquals(ErrorCode.DATANODE_LOST, stale.code(), stale.getMessage());
    // The idle writer's block is one of the old registration's: its write is refused, not
    // written over /after's bytes.
    EmberException refused =
        assertThrows(
            EmberException.class,
            () -> {
              idle.write(data(1000, 4));
              idle.close();
            });
    assertTrue(
        refused.getMessage().contains("no longer holds the blocks of"), refused.getMessage());
    try (InputStream in = c.open("/after")) {
      assertArrayEquals(after, in.readAllBytes());
    }
  }

  @Test
  void targetThatComesBackWithItsContentsGivesItsBlocksBack(@TempDir Path dir) throws Exception {
    String nqn = "nqn.2026-11.io.ember:kept";
    Path file = dir.resolve("ns.img");
    NvmfTarget first = fileTarget(nqn, file, 0);
    int port = first.port();
    cluster =
        nvmfOnly()
            .set(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .nvmfDatanode(first.uri(nqn) + "/1")
            .build();
    EmberClient c = cluster.newClient();
    byte[] kept = data(150_000, 7);
    try (EmberOutputStream out =
        c.create("/kept", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
      out.write(kept);
    }
    first.close();
    awaitNvmf(
        c,
        u -> u.lostNodes() == 1,
        "the NVMf data node to be marked lost when its target went away");
    assertEquals(ErrorCode.DATANODE_LOST, readFails(c, "/kept").code());
    // Back from the same file: the stamp is still there, so the node registers as itself.
    fileTarget(nqn, file, port);
    awaitNvmf(
        c,
        u -> u.liveNodes() == 1 && u.lostNodes() == 0,
        "the NVMf data node to get its blocks back");
    try (InputStream in = c.open("/kept")) {
      assertArrayEquals(kept, in.readAllBytes());
    }
  }

  private NvmfTarget fileTarget(String nqn, Path file, int port) throws Exception {
    return target(nqn, port, new FileNamespace(file, 8 << 20, 4096, false));
  }

  /**
   * An embedded target on loopback {@code port} (0: any) exporting {@code ns} as namespace 1,
   * closed after the test.
   */
  private NvmfTarget target(String nqn, int port, Namespace ns) throws Exception {
    NvmfTarget t =
        NvmfTarget.builder()
            .listen("127.0.0.1", port)
            .subsystem(new Subsystem(nqn).namespace(1, ns))
            .build()
            .start();
    targets.add(t);
    return t;
  }

  @Test
  void streamOpenedBeforeANameNodeRestartIsRefusedByTheRestampedTarget() throws Exception {
    cluster = embeddedNvmfOnly("8m");
    EmberClient c = cluster.newClient();
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberOutputStream out = c.create("/open", nvmf)) {
      out.write(data(300_000, 8));
    }
    // The stream holds /open's locations, and the client trusts the target's stamp.
    io.ember.client.EmberInputStream open = c.open("/open");
    byte[] head = new byte[10];
    open.readFully(0, head, 0, head.length);
    BlockLocation old = c.blockLocations("/open").get(0);
    cluster.restartNamenodeEmpty();
    // The new name node does not know the target's contents: the data node stamps a new
    // incarnation, waits out the clients' trust in the old one, and registers anew.
    cluster.awaitLiveDatanodes(StorageClass.NVMF, 1, Duration.ofSeconds(90));
    byte[] after = data(300_000, 9);
    EmberClient other = cluster.newClient();
    try (EmberOutputStream out = other.create("/after", nvmf)) {
      out.write(after);
    }
    assertEquals(old.address(), other.blockLocations("/after").get(0).address());
    // Through its locations the stream would read /after's bytes; the stamp refuses them.
    byte[] rest = new byte[200_000];
    EmberException refused =
        assertThrows(EmberException.class, () -> open.readFully(100_000, rest, 0, rest.length));
    assertTrue(refused.getMessage().contains("/open"), refused.getMessage());
    open.close();
    try (InputStream in = c.open("/after")) {
      assertArrayEquals(after, in.readAllBytes());
    }
  }

  @Test
  void targetThatDiesMidWriteFailsTheWriterAndDramFilesStayReadable() throws Exception {
    cluster =
        MiniCluster.builder()
            .blockSize("64k")
            .dramCapacity("4m")
            .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "16m")
            .set(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .set(EmberKeys.RPC_TIMEOUT, "2m")
            .nvmfDatanode("")
            .build();
    EmberClient c = cluster.newClient();
    byte[] safe = data(300_000, 3);
    try (EmberOutputStream out = c.create("/dram-file", CreateOptions.DEFAULT)) {
      out.write(safe);
    }
    CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
    try (EmberOutputStream out = c.create("/nvmf-done", nvmf)) {
      out.write(data(100_000, 4));
    }
    EmberOutputStream out = c.create("/nvmf-victim", nvmf);
    out.write(data(200_000, 5));
    out.flush();
    cluster.nvmfDatanodes().get(0).embeddedTarget().close();
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> {
              for (int i = 0; i < 40; i++) {
                out.write(data(65536, 6 + i));
              }
              out.close();
            });
    assertTrue(e.getMessage().startsWith("writing /nvmf-victim at byte "), e.getMessage());
    assertTrue(e.getMessage().contains("nvmf+tcp://"), e.getMessage());
    try (InputStream in = c.open("/dram-file")) {
      assertArrayEquals(safe, in.readAllBytes());
    }
    awaitNvmf(c, u -> u.lostNodes() == 1, "the NVMf data node to be marked lost");
    EmberException lost = readFails(c, "/nvmf-done");
    assertEquals(ErrorCode.DATANODE_LOST, lost.code());
    assertTrue(lost.getMessage().contains("block 0 of /nvmf-done unavailable"), lost.getMessage());
  }
}
