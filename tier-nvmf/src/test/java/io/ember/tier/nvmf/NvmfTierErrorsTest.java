package io.ember.tier.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientMetrics;
import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.TierContext;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfTimeoutException;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.StorageClass;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What an NVMf command's failure becomes on the Ember side: NVMe statuses that say what is wrong
 * keep saying it, a command timeout is a timeout and keeps the shared connection, a broken
 * connection is dropped.
 */
class NvmfTierErrorsTest {
  private static final String NQN = "nqn.2026-11.io.ember:errors";
  private static final int SIZE = 4 << 20;
  private static final int LBA = 4096;
  private static final String ENDPOINT = "nvmf+tcp://127.0.0.1:4420/" + NQN + "/1";

  private NvmfTarget target;
  private StallingNamespace namespace;
  private StorageEndpoint endpoint;

  /** A memory namespace whose reads of LBA 0 wait, while {@link #stall} is set, for a release. */
  private static final class StallingNamespace implements Namespace {
    final MemoryNamespace memory = new MemoryNamespace(SIZE, LBA);
    final AtomicBoolean stall = new AtomicBoolean();
    final CountDownLatch release = new CountDownLatch(1);

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
      return true; // on the target's worker pool, so a stalled read holds no event loop
    }

    @Override
    public ByteBuf read(ByteBufAllocator alloc, long offset, int len) throws IOException {
      if (offset == 0 && stall.get()) {
        try {
          release.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return memory.read(alloc, offset, len);
    }

    @Override
    public void write(long offset, ByteBuf src) throws IOException {
      memory.write(offset, src);
    }

    @Override
    public void flush() throws IOException {
      memory.flush();
    }

    @Override
    public void deallocate(long offset, long len) throws IOException {
      memory.deallocate(offset, len);
    }
  }

  @BeforeEach
  void start() throws Exception {
    namespace = new StallingNamespace();
    target =
        NvmfTarget.builder()
            .listen("127.0.0.1", 0)
            .subsystem(new Subsystem(NQN).namespace(1, namespace))
            .build()
            .start();
    // The command timeout of the client's NVMf host is the RPC timeout.
    EmberConfig config = EmberConfig.defaults().with(EmberKeys.RPC_TIMEOUT, "500ms");
    endpoint = new NvmfTier().open(new TierContext(config, null, new ClientMetrics()));
  }

  @AfterEach
  void stop() {
    namespace.release.countDown();
    endpoint.close();
    target.close();
  }

  /** A block of the target at byte {@code address}; the blank target records incarnation 0. */
  private BlockLocation block(long address, int length) {
    return new BlockLocation(
        0,
        1,
        1,
        1,
        0,
        StorageClass.NVMF,
        NvmfTier.NAME,
        target.uri(NQN) + "/1",
        address,
        length,
        false);
  }

  private static EmberException failure(java.util.concurrent.CompletableFuture<?> f)
      throws InterruptedException {
    try {
      Object v = f.get(10, TimeUnit.SECONDS);
      if (v instanceof ByteBuf b) {
        b.release();
      }
      throw new AssertionError("the read succeeded");
    } catch (ExecutionException e) {
      return EmberException.of(e);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("the read never completed");
    }
  }

  @Test
  void lbaOutOfRangeIsOutOfRange() throws Exception {
    // A location past the namespace's end (the target is not what the node registered).
    EmberException e = failure(endpoint.read(block(SIZE, 1 << 16), 0, LBA));
    assertEquals(ErrorCode.OUT_OF_RANGE, e.code(), e.toString());
    assertTrue(e.getMessage().contains("LBA Out of Range"), e.getMessage());
  }

  @Test
  void commandTimeoutIsATimeoutAndKeepsTheConnection() throws Exception {
    BlockLocation b = block(0, 1 << 16);
    ByteBuf warm = endpoint.read(b, 0, LBA).get(10, TimeUnit.SECONDS);
    warm.release();
    assertEquals(1, target.controllerCount());

    namespace.stall.set(true);
    EmberException e = failure(endpoint.read(b, 0, LBA));
    assertEquals(ErrorCode.TIMEOUT, e.code(), e.toString());

    // A dropped connection would be shut down in the background: give it time to show.
    Thread.sleep(1000);
    assertEquals(1, target.controllerCount(), "the shared connection was dropped");

    namespace.stall.set(false);
    namespace.release.countDown();
    ByteBuf again = endpoint.read(b, LBA, LBA).get(10, TimeUnit.SECONDS);
    again.release();
    assertEquals(1, target.controllerCount());
  }

  private static EmberException mapped(int sct, int sc) {
    return NvmfTier.Endpoint.toEmber(
        ENDPOINT,
        new NvmeStatusException("Write nsid 1 slba 0 nlb 8", Nvme.status(sct, sc, true), false));
  }

  @Test
  void nvmeStatusesMapToWhatTheySay() {
    assertEquals(ErrorCode.OUT_OF_RANGE, mapped(Nvme.SCT_GENERIC, Nvme.SC_LBA_RANGE).code());
    assertEquals(ErrorCode.NO_SPACE, mapped(Nvme.SCT_GENERIC, Nvme.SC_CAPACITY_EXCEEDED).code());
    assertEquals(ErrorCode.NOT_READY, mapped(Nvme.SCT_GENERIC, Nvme.SC_NS_NOT_READY).code());
    // Access refused: Operation Denied, Namespace is Write Protected, Reservation Conflict,
    // Attempted Write to Read Only Range, Access Denied.
    assertEquals(ErrorCode.PERMISSION_DENIED, mapped(Nvme.SCT_GENERIC, 0x15).code());
    assertEquals(ErrorCode.PERMISSION_DENIED, mapped(Nvme.SCT_GENERIC, 0x20).code());
    assertEquals(ErrorCode.PERMISSION_DENIED, mapped(Nvme.SCT_GENERIC, 0x83).code());
    assertEquals(ErrorCode.PERMISSION_DENIED, mapped(Nvme.SCT_COMMAND_SPECIFIC, 0x82).code());
    assertEquals(ErrorCode.PERMISSION_DENIED, mapped(Nvme.SCT_MEDIA, 0x86).code());
    // The same numbers in another status code type mean other things.
    assertEquals(ErrorCode.INTERNAL, mapped(Nvme.SCT_COMMAND_SPECIFIC, 0x80).code());
    assertEquals(ErrorCode.INTERNAL, mapped(Nvme.SCT_MEDIA, 0x81).code());
    assertEquals(ErrorCode.INTERNAL, mapped(Nvme.SCT_GENERIC, Nvme.SC_INTERNAL).code());
  }

  @Test
  void mappedErrorsNameTheTargetAndKeepTheStatus() {
    EmberException e = mapped(Nvme.SCT_GENERIC, Nvme.SC_NS_NOT_READY);
    assertTrue(e.getMessage().contains(ENDPOINT), e.getMessage());
    assertTrue(e.getMessage().contains("Namespace Not Ready"), e.getMessage());
    assertTrue(e.getCause() instanceof NvmeStatusException);
  }

  @Test
  void timeoutsAndBrokenConnectionsAndOthers() {
    assertEquals(
        ErrorCode.TIMEOUT,
        NvmfTier.Endpoint.toEmber(
                ENDPOINT, new NvmfTimeoutException("Read nsid 1: no completion in 500 ms"))
            .code());
    assertEquals(
        ErrorCode.CONNECTION_CLOSED,
        NvmfTier.Endpoint.toEmber(ENDPOINT, new NvmfException("connection to the target closed"))
            .code());
    assertEquals(
        ErrorCode.INTERNAL,
        NvmfTier.Endpoint.toEmber(ENDPOINT, new IllegalStateException("bug")).code());
    EmberException stale = new EmberException(ErrorCode.STALE_LOCATION, "ask again");
    assertSame(stale, NvmfTier.Endpoint.toEmber(ENDPOINT, stale));
    assertFalse(ErrorCode.TIMEOUT.surelyNotApplied());
  }
}
