package io.ember.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.namenode.NameNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcClients;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * A data node's link against a real name node over loopback, with heartbeats slower than the name
 * node's timeout: the node is marked lost between heartbeats, and each time registers again as the
 * same node rather than as a new one with none of its blocks.
 */
class NameNodeLinkTest {
  /** Far longer than any step takes even on a starved machine: the test waits for events. */
  private static final Duration PATIENCE = Duration.ofSeconds(90);

  private static Messages.ClassUsage usage(RpcClients rpc, HostPort nn, StorageClass storageClass)
      throws Exception {
    return Futures.await(
            rpc.get(nn, "name node")
                .thenCompose(
                    c -> c.call(MessageType.DF, Message.EMPTY, Messages.DfResponse::decode)))
        .classes()
        .stream()
        .filter(u -> u.storageClass().equals(storageClass))
        .findFirst()
        .orElseThrow();
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + PATIENCE + ": " + what);
      }
      Thread.sleep(20);
    }
  }

  /** A memory stamp that counts what the link asks of it. */
  private static final class CountingStamp implements NameNodeLink.Stamp {
    private final NameNodeLink.MemoryStamp stamp = new NameNodeLink.MemoryStamp();

    /** Every registration starts by asking for the incarnation held. */
    final AtomicInteger registrations = new AtomicInteger();

    final AtomicInteger forgotten = new AtomicInteger();

    @Override
    public long held() {
      registrations.incrementAndGet();
      return stamp.held();
    }

    @Override
    public void record(long incarnation, long replacing) {
      stamp.record(incarnation, replacing);
    }

    @Override
    public void cannotVouch() {
      stamp.cannotVouch();
      forgotten.incrementAndGet();
    }
  }

  @Test
  void lateHeartbeatsKeepTheNodeAndHealthLossMakesANewOne() throws Exception {
    EmberConfig config =
        EmberConfig.defaults()
            // The test's node serves nothing at the address it registers.
            .with(NameNodeKeys.PROBE_DATANODES, "false")
            .with(NameNodeKeys.DATANODE_TIMEOUT, "200ms")
            .with(EmberKeys.HEARTBEAT_INTERVAL, "700ms");
    AtomicBoolean healthy = new AtomicBoolean(true);
    CountingStamp stamp = new CountingStamp();
    try (NameNode nn = NameNode.start(config, "127.0.0.1", 0);
        RpcClients rpc = new RpcClients(config, "test", 1)) {
      HostPort address = new HostPort("127.0.0.1", nn.address().getPort());
      EmberConfig linkConfig = config.with(EmberKeys.NAMENODE_ADDRESS, address.toString());
      try (NameNodeLink link =
          new NameNodeLink(
              linkConfig,
              "test node",
              new Messages.RegisterRequest(
                  StorageClass.DRAM, "dram", "127.0.0.1:1", 8L << 20, false),
              slots -> List.of(),
              healthy::get,
              stamp)) {
        link.start();
        int id = link.datanodeId();
        assertTrue(id >= 0);
        // Each heartbeat comes after the node was marked lost (timeout 200 ms, heartbeats every
        // 700 ms), is refused, and the node registers again: wait for three such returns.
        await(
            "three registrations after the first",
            () -> stamp.registrations.get() >= 4 && link.datanodeId() >= 0);
        assertEquals(id, link.datanodeId());
        Messages.ClassUsage usage = usage(rpc, address, StorageClass.DRAM);
        assertEquals(1, usage.liveNodes() + usage.lostNodes(), "one node, not one per return");

        // A node that could not serve its blocks cannot vouch for them: it comes back as new.
        healthy.set(false);
        await("a heartbeat that found the node unhealthy", () -> stamp.forgotten.get() > 0);
        healthy.set(true);
        await(
            "a registration as a new node",
            () -> link.datanodeId() >= 0 && link.datanodeId() != id);
        assertTrue(link.datanodeId() > id, "registered as " + link.datanodeId());
      }
    }
  }

  /** Creates {@code path} on NVMf with its first block and closes it empty, which frees it. */
  private static void emptyFile(RpcClients rpc, HostPort nn, String path) throws Exception {
    Messages.CreateResponse created =
        call(
            rpc,
            nn,
            MessageType.CREATE,
            new Messages.CreateRequest(
                path,
                io.ember.protocol.NodeType.FILE,
                StorageClass.NVMF,
                false,
                "test writer",
                true,
                false),
            Messages.CreateResponse::decode);
    assertTrue(created.firstBlock() != null, "no first block for " + path);
    call(
        rpc,
        nn,
        MessageType.CLOSE_FILE,
        new Messages.CloseFileRequest(created.status().id(), 0),
        io.ember.protocol.NodeStatus::decode);
  }

  @Test
  void aTrimmerThatThrowsAnErrorDoesNotStopLaterDeallocations() throws Exception {
    EmberConfig config =
        EmberConfig.defaults()
            .with(NameNodeKeys.PROBE_DATANODES, "false")
            .with(EmberKeys.HEARTBEAT_INTERVAL, "100ms");
    AtomicInteger batches = new AtomicInteger();
    try (NameNode nn = NameNode.start(config, "127.0.0.1", 0);
        RpcClients rpc = new RpcClients(config, "test", 1)) {
      HostPort address = new HostPort("127.0.0.1", nn.address().getPort());
      EmberConfig linkConfig = config.with(EmberKeys.NAMENODE_ADDRESS, address.toString());
      try (NameNodeLink link =
          new NameNodeLink(
              linkConfig,
              "test node",
              new Messages.RegisterRequest(
                  StorageClass.NVMF, "nvmf", "127.0.0.1:1", 8L << 20, true),
              slots -> {
                if (batches.getAndIncrement() == 0) {
                  throw new AssertionError("a trimmer that fails hard (test)");
                }
                return slots;
              },
              () -> true,
              new NameNodeLink.MemoryStamp())) {
        link.start();
        long total = usage(rpc, address, StorageClass.NVMF).totalBlocks();
        emptyFile(rpc, address, "/a");
        await("the first batch to fail", () -> batches.get() >= 1);
        emptyFile(rpc, address, "/b");
        // /a's block waits for the name node's retry (minutes); /b's comes back.
        await("the second batch", () -> batches.get() >= 2);
        awaitFree(rpc, address, total - 1, "/b's block to come back");
      }
    }
  }

  /**
   * A link for an NVMf node of {@code capacity} bytes, counting its heartbeats in {@code beats}.
   */
  private static NameNodeLink nvmfLink(
      EmberConfig linkConfig,
      long capacity,
      java.util.function.Function<List<Long>, List<Long>> trimmer,
      AtomicInteger beats) {
    return new NameNodeLink(
        linkConfig,
        "test node",
        new Messages.RegisterRequest(StorageClass.NVMF, "nvmf", "127.0.0.1:1", capacity, true),
        trimmer,
        () -> {
          beats.incrementAndGet();
          return true;
        },
        new NameNodeLink.MemoryStamp());
  }

  /** {@link #await} inside a trimmer, which may not throw InterruptedException. */
  private static void awaitInTrimmer(String what, BooleanSupplier condition) {
    try {
      await(what, condition);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits until the NVMf class has {@code free} blocks free. */
  private static void awaitFree(RpcClients rpc, HostPort nn, long free, String what)
      throws InterruptedException {
    await(
        what,
        () -> {
          try {
            return usage(rpc, nn, StorageClass.NVMF).freeBlocks() == free;
          } catch (Exception e) {
            return false;
          }
        });
  }

  /** Calls the name node as a client would. */
  private static <T> T call(
      RpcClients rpc,
      HostPort nn,
      MessageType type,
      Message request,
      io.ember.protocol.ResponseDecoder<T> decoder)
      throws Exception {
    return Futures.await(rpc.get(nn, "name node").thenCompose(c -> c.call(type, request, decoder)));
  }

  @Test
  void moreDeallocatedSlotsThanOneReportHoldsGoBackOverSeveralHeartbeats() throws Exception {
    EmberConfig config =
        EmberConfig.defaults()
            .with(NameNodeKeys.PROBE_DATANODES, "false")
            .with(EmberKeys.BLOCK_SIZE, "4k")
            .with(EmberKeys.HEARTBEAT_INTERVAL, "100ms");
    int slots = 2 * Messages.MAX_TRIM_SLOTS;
    AtomicInteger beats = new AtomicInteger();
    AtomicInteger batches = new AtomicInteger();
    try (NameNode nn = NameNode.start(config, "127.0.0.1", 0);
        RpcClients rpc = new RpcClients(config, "test", 1)) {
      HostPort address = new HostPort("127.0.0.1", nn.address().getPort());
      EmberConfig linkConfig = config.with(EmberKeys.NAMENODE_ADDRESS, address.toString());
      try (NameNodeLink link =
          nvmfLink(
              linkConfig,
              (slots + 2048L) * 4096,
              batch -> {
                if (batches.getAndIncrement() == 0) {
                  // The name node sends at most a report's worth a heartbeat: while this first
                  // batch runs, the next heartbeats bring the rest, which end right after it, so
                  // the node holds both batches' slots to report at once.
                  int from = beats.get();
                  awaitInTrimmer(
                      "two heartbeats during the first batch", () -> beats.get() >= from + 3);
                }
                return batch;
              },
              beats)) {
        link.start();
        long total = usage(rpc, address, StorageClass.NVMF).totalBlocks();
        Messages.CreateResponse created =
            call(
                rpc,
                address,
                MessageType.CREATE,
                new Messages.CreateRequest(
                    "/big",
                    io.ember.protocol.NodeType.FILE,
                    StorageClass.NVMF,
                    false,
                    "test writer",
                    true,
                    false),
                Messages.CreateResponse::decode);
        long id = created.status().id();
        for (int held = 1; held < slots; ) {
          held +=
              call(
                      rpc,
                      address,
                      MessageType.ALLOCATE_BLOCKS,
                      new Messages.AllocateBlocksRequest(
                          id, held, Math.min(Messages.MAX_BLOCKS_PER_CALL, slots - held)),
                      Messages.BlocksResponse::decode)
                  .blocks()
                  .size();
        }
        assertEquals(total - slots, usage(rpc, address, StorageClass.NVMF).freeBlocks());
        // Closed empty, the file gives every block back, each to be deallocated on the target.
        call(
            rpc,
            address,
            MessageType.CLOSE_FILE,
            new Messages.CloseFileRequest(id, 0),
            io.ember.protocol.NodeStatus::decode);
        awaitFree(rpc, address, total, "every block to come back");
        assertTrue(batches.get() >= 2, batches.get() + " batches");
      }
    }
  }

  @Test
  void slotsAHeartbeatBringsReplaceThoseStillWaitingForARunningBatch() throws Exception {
    EmberConfig config =
        EmberConfig.defaults()
            .with(NameNodeKeys.PROBE_DATANODES, "false")
            // Far longer than the steps before the first batch is released, even on a busy machine:
            // no slot is sent again while the test still counts batches.
            .with(NameNodeKeys.DEALLOCATION_RETRY, "30s")
            .with(EmberKeys.HEARTBEAT_INTERVAL, "100ms");
    AtomicInteger beats = new AtomicInteger();
    List<Integer> batchSizes = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicBoolean released = new AtomicBoolean();
    try (NameNode nn = NameNode.start(config, "127.0.0.1", 0);
        RpcClients rpc = new RpcClients(config, "test", 1)) {
      HostPort address = new HostPort("127.0.0.1", nn.address().getPort());
      EmberConfig linkConfig = config.with(EmberKeys.NAMENODE_ADDRESS, address.toString());
      try (NameNodeLink link =
          nvmfLink(
              linkConfig,
              8L << 20,
              batch -> {
                batchSizes.add(batch.size());
                if (batchSizes.size() == 1) {
                  awaitInTrimmer("the test to release the first batch", released::get);
                }
                return batch;
              },
              beats)) {
        link.start();
        long total = usage(rpc, address, StorageClass.NVMF).totalBlocks();
        emptyFile(rpc, address, "/x");
        await("the first batch to start", () -> batchSizes.size() == 1);
        // A heartbeat has answered once the one after it starts.
        int from = beats.get();
        emptyFile(rpc, address, "/a");
        await("a heartbeat to bring /a's slot", () -> beats.get() >= from + 2);
        int then = beats.get();
        emptyFile(rpc, address, "/b");
        await("a heartbeat to bring /b's slot", () -> beats.get() >= then + 2);
        released.set(true);
        await("the second batch", () -> batchSizes.size() >= 2);
        // /a's slot was replaced by /b's: it waits for the name node to send it again, rather
        // than go out long after its heartbeat.
        assertEquals(1, batchSizes.get(1), "second batch " + batchSizes);
        awaitFree(
            rpc, address, total, "every block to come back, /a's after the name node's retry");
      }
    }
  }
}
