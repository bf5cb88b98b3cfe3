package io.ember.tier.nvmf;

import io.ember.client.ClientMetrics;
import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.StorageTier;
import io.ember.client.spi.TierContext;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.NvmfUri;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of the NVMf tier: reads and writes go from the client straight to the target over
 * the nvmf host, one connection (with several queues) per target shared by all of a client's
 * streams. Any offset and length work: the aligned middle of a write goes out as is (in-capsule
 * when small), and unaligned edges become read-modify-write of the edge sectors, serialized per
 * sector so two pieces in flight never tear a shared sector.
 */
public final class NvmfTier implements StorageTier {
  private static final Logger LOG = LoggerFactory.getLogger(NvmfTier.class);

  /** The tier's name, which block locations of NVMf data nodes carry. */
  public static final String NAME = "nvmf";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public StorageEndpoint open(TierContext context) {
    return new Endpoint(context.config(), context.metrics());
  }

  static final class Endpoint implements StorageEndpoint {
    private final NvmfHostOptions options;
    private final ClientMetrics metrics;
    private final Map<String, CompletableFuture<Target>> targets = new ConcurrentHashMap<>();
    private final ExecutorService connector =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "ember-nvmf-connect");
              t.setDaemon(true);
              return t;
            });

    Endpoint(EmberConfig config, ClientMetrics metrics) {
      this.metrics = metrics;
      this.options =
          NvmfTierKeys.identity(
                  NvmfHostOptions.builder()
                      .ioQueues(config.get(NvmfTierKeys.QUEUES))
                      .ioQueueSize(config.get(NvmfTierKeys.QUEUE_DEPTH))
                      .busyPoll(config.get(NvmfTierKeys.BUSY_POLL))
                      .commandTimeout(config.get(EmberKeys.RPC_TIMEOUT))
                      .connectTimeout(config.get(EmberKeys.CONNECT_TIMEOUT)),
                  config)
              .build();
    }

    @Override
    public CompletableFuture<Void> write(BlockLocation block, int offset, ByteBuf data) {
      return serving(block)
          .whenComplete(
              (t, e) -> {
                if (e != null) {
                  data.release(); // no write takes it
                }
              })
          .thenCompose(
              t -> t.write(block.address() + offset, data).whenComplete((v, err) -> data.release()))
          .exceptionallyCompose(e -> failed(block, e));
    }

    @Override
    public CompletableFuture<Void> readInto(BlockLocation block, int offset, ByteBuffer dst) {
      return serving(block)
          .thenCompose(
              t ->
                  t.canReadInto(block.address() + offset, dst)
                      ? t.queue().read(t.nsid, (block.address() + offset) / t.sectorSize, dst)
                      : StorageEndpoint.super.readInto(block, offset, dst))
          .exceptionallyCompose(e -> failed(block, e));
    }

    @Override
    public CompletableFuture<ByteBuf> read(BlockLocation block, int offset, int length) {
      return serving(block)
          .thenCompose(t -> t.read(block.address() + offset, length))
          .exceptionallyCompose(e -> failed(block, e));
    }

    private <T> CompletableFuture<T> failed(BlockLocation block, Throwable e) {
      Throwable cause = EmberException.unwrap(e);
      EmberException ee = toEmber(block.endpoint(), cause);
      if (cause instanceof NvmfException && ee.code() == ErrorCode.CONNECTION_CLOSED) {
        // The connection failed: drop it, so the next call connects again.
        // Only the connection that failed: another caller may have connected anew meanwhile.
        CompletableFuture<Target> t = targets.get(block.endpoint());
        if (t != null
            && t.isDone()
            && !t.isCompletedExceptionally()
            && !t.join().controller.isConnected()
            && targets.remove(block.endpoint(), t)) {
          closeLater(block.endpoint(), t);
        }
      }
      return CompletableFuture.failedFuture(ee);
    }

    /**
     * The Ember error for {@code cause}, a command to the NVMf target at {@code endpoint} that
     * failed. An NVMe status that says what is wrong keeps saying it (others are {@link
     * ErrorCode#INTERNAL}); a command timeout is {@link ErrorCode#TIMEOUT}, and leaves the queue
     * usable (the late completion is dropped); any other nvmf failure broke the connection, {@link
     * ErrorCode#CONNECTION_CLOSED}. An {@link EmberException} is returned as it is.
     */
    static EmberException toEmber(String endpoint, Throwable cause) {
      if (cause instanceof EmberException ee) {
        return ee;
      }
      String where = "NVMf target " + endpoint + ": ";
      if (cause instanceof NvmeStatusException s) {
        // The NVMe status code values: an SC number means different things in each SCT.
        ErrorCode code =
            switch (s.sct()) {
              case 0 ->
                  switch (s.sc()) { // Generic Command Status
                    case 0x80 -> ErrorCode.OUT_OF_RANGE; // LBA Out of Range
                    case 0x81 -> ErrorCode.NO_SPACE; // Capacity Exceeded
                    case 0x82 -> ErrorCode.NOT_READY; // Namespace Not Ready
                    // Operation Denied, Namespace is Write Protected, Reservation Conflict
                    case 0x15, 0x20, 0x83 -> ErrorCode.PERMISSION_DENIED;
                    default -> ErrorCode.INTERNAL;
                  };
              // Command Specific: Attempted Write to Read Only Range (for NVM reads and writes).
              case 1 -> s.sc() == 0x82 ? ErrorCode.PERMISSION_DENIED : ErrorCode.INTERNAL;
              // Media and Data Integrity Errors: Access Denied.
              case 2 -> s.sc() == 0x86 ? ErrorCode.PERMISSION_DENIED : ErrorCode.INTERNAL;
              default -> ErrorCode.INTERNAL;
            };
        return new EmberException(code, where + s.getMessage(), s);
      }
      if (cause instanceof io.ember.nvmf.NvmfTimeoutException) {
        return new EmberException(ErrorCode.TIMEOUT, where + cause.getMessage(), cause);
      }
      if (cause instanceof NvmfException) {
        return new EmberException(ErrorCode.CONNECTION_CLOSED, where + cause.getMessage(), cause);
      }
      return new EmberException(ErrorCode.INTERNAL, where + cause, cause);
    }

    /**
     * The target of {@code block}, once its stamp says it holds the contents the location names. A
     * target that came back empty holds others (its data node registered anew, and the name node
     * may have placed other files at the same addresses), so the command is refused before it reads
     * another file's bytes or writes over them.
     */
    private CompletableFuture<Target> serving(BlockLocation block) {
      CompletableFuture<Target> connected = target(block);
      if (connected.isDone()
          && !connected.isCompletedExceptionally()
          && connected.join().trusts(block.incarnation())) {
        return connected;
      }
      return connected.thenCompose(
          t ->
              t.trusts(block.incarnation())
                  ? CompletableFuture.completedFuture(t)
                  : t.readStamp()
                      .thenApply(
                          held -> {
                            if (held != block.incarnation()) {
                              throw new CompletionException(
                                  new EmberException(
                                      ErrorCode.STALE_LOCATION,
                                      "NVMf target "
                                          + block.endpoint()
                                          + " no longer holds the blocks of "
                                          + block.describeNode()
                                          + " (it came back empty, or its data node "
                                          + "registered anew): ask the name node again"));
                            }
                            return t;
                          }));
    }

    private CompletableFuture<Target> target(BlockLocation block) {
      String endpoint = block.endpoint();
      while (true) {
        CompletableFuture<Target> f = targets.get(endpoint);
        boolean usable =
            f != null
                && !f.isCompletedExceptionally()
                && (!f.isDone() || f.join().controller.isConnected());
        if (usable) {
          return f;
        }
        if (f != null) {
          // Failed to connect, or connected to a target that has since gone (and may be back):
          // connect again rather than fail the caller's command on a dead connection.
          if (targets.remove(endpoint, f) && f.isDone() && !f.isCompletedExceptionally()) {
            closeLater(endpoint, f);
          }
          continue;
        }
        CompletableFuture<Target> fresh =
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    NvmfUri uri = NvmfUri.parse(endpoint);
                    NvmfController c = NvmfHost.connect(uri, options);
                    int nsid = uri.nsid() != 0 ? uri.nsid() : c.namespaces().get(0).nsid();
                    Target t = new Target(c, c.namespace(nsid), metrics);
                    try {
                      t.readStamp().join();
                    } catch (RuntimeException e) {
                      c.close();
                      throw e;
                    }
                    return t;
                  } catch (NvmfException | RuntimeException e) {
                    throw new CompletionException(
                        new EmberException(
                            ErrorCode.UNREACHABLE,
                            "cannot reach NVMf target " + endpoint + ": " + e.getMessage(),
                            e));
                  }
                },
                connector);
        if (targets.putIfAbsent(endpoint, fresh) == null) {
          return fresh;
        }
      }
    }

    /**
     * Closes a dropped target's connection on the connector's threads (closing waits for the
     * connection to go), once it has one.
     */
    private void closeLater(String endpoint, CompletableFuture<Target> target) {
      target
          .thenAcceptAsync(Target::close, connector)
          .exceptionally(e -> closeFailed(endpoint, target, e));
    }

    /**
     * Logs why a dropped target's connection could not be closed. A target that never connected has
     * nothing to close, and its failure was for its callers to see.
     */
    private static Void closeFailed(
        String endpoint, CompletableFuture<Target> target, Throwable e) {
      if (!target.isCompletedExceptionally()) {
        LOG.warn(
            "closing the connection to NVMf target {} failed", endpoint, EmberException.unwrap(e));
      }
      return null;
    }

    @Override
    public void close() {
      // Here, not on the connector, which stops now (a connect under way finishes, and closes).
      for (Map.Entry<String, CompletableFuture<Target>> e : targets.entrySet()) {
        CompletableFuture<Target> target = e.getValue();
        target.thenAccept(Target::close).exceptionally(err -> closeFailed(e.getKey(), target, err));
      }
      targets.clear();
      connector.shutdown();
    }
  }

  /** One connected target namespace. */
  static final class Target {
    final NvmfController controller;
    final IdentifyNamespace namespace;
    final int nsid;
    final int sectorSize;
    private final ClientMetrics metrics;
    private final SectorLocks locks = new SectorLocks();
    private final AtomicInteger nextQueue = new AtomicInteger();

    /** The incarnation the target's {@link TargetStamp} recorded when last read. */
    private volatile long stamp;

    /** When the read of {@link #stamp} was sent ({@link System#nanoTime()}). */
    private volatile long stampAskedNanos;

    /** The stamp read in flight, shared by the commands that wait for it. */
    private CompletableFuture<Long> stampRead;

    Target(NvmfController controller, IdentifyNamespace namespace, ClientMetrics metrics) {
      this.controller = controller;
      this.namespace = namespace;
      this.nsid = namespace.nsid();
      this.sectorSize = namespace.blockSize();
      this.metrics = metrics;
    }

    /** Whether the stamp, read recently enough to act on, says the target holds these contents. */
    boolean trusts(long incarnation) {
      return stamp == incarnation
          && System.nanoTime() - stampAskedNanos < TargetStamp.TRUSTED_FOR_NANOS;
    }

    /** Reads the stamp again, or joins a read already on its way. */
    synchronized CompletableFuture<Long> readStamp() {
      if (stampRead == null || stampRead.isDone()) {
        long asked = System.nanoTime();
        stampRead =
            TargetStamp.read(queue(), namespace)
                .thenApply(
                    held -> {
                      stamp = held;
                      stampAskedNanos = asked;
                      return held;
                    });
      }
      return stampRead;
    }

    NvmfQueue queue() {
      return controller.ioQueue(
          Math.floorMod(nextQueue.getAndIncrement(), controller.ioQueueCount()));
    }

    /** Writes {@code data} at byte {@code address}; the caller keeps its reference to data. */
    CompletableFuture<Void> write(long address, ByteBuf data) {
      int len = data.readableBytes();
      if (len == 0) {
        return CompletableFuture.completedFuture(null);
      }
      long end = address + len;
      long firstSector = address / sectorSize;
      long lastSector = (end - 1) / sectorSize;
      long alignedStart = (address % sectorSize == 0) ? address : (firstSector + 1) * sectorSize;
      long alignedEnd = (end % sectorSize == 0) ? end : lastSector * sectorSize;
      List<CompletableFuture<Void>> parts = new ArrayList<>(3);
      if (alignedStart > alignedEnd) {
        // Within one sector, unaligned at both ends.
        parts.add(readModifyWrite(firstSector, address, data, data.readerIndex(), len));
      } else {
        if (address < alignedStart) {
          parts.add(
              readModifyWrite(
                  firstSector, address, data, data.readerIndex(), (int) (alignedStart - address)));
        }
        if (alignedEnd > alignedStart) {
          ByteBuffer middle =
              data.nioBuffer(
                  data.readerIndex() + (int) (alignedStart - address),
                  (int) (alignedEnd - alignedStart));
          parts.add(queue().write(nsid, alignedStart / sectorSize, middle));
        }
        if (end > alignedEnd) {
          parts.add(
              readModifyWrite(
                  lastSector,
                  alignedEnd,
                  data,
                  data.readerIndex() + (int) (alignedEnd - address),
                  (int) (end - alignedEnd)));
        }
      }
      return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
    }

    /**
     * Patches {@code len} bytes at byte {@code address} (inside {@code sector}) from {@code src}.
     */
    private CompletableFuture<Void> readModifyWrite(
        long sector, long address, ByteBuf src, int srcIndex, int len) {
      metrics.addReadModifyWrites(1);
      return locks.run(
          sector,
          () -> {
            ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(sectorSize, sectorSize);
            ByteBuffer io = buf.nioBuffer(0, sectorSize);
            NvmfQueue q = queue();
            return q.read(nsid, sector, io)
                .thenCompose(
                    v -> {
                      buf.setBytes((int) (address - sector * sectorSize), src, srcIndex, len);
                      return q.write(nsid, sector, buf.nioBuffer(0, sectorSize));
                    })
                .whenComplete((v, e) -> buf.release());
          });
    }

    /**
     * True when {@code dst} can take the target's bytes directly, with no copy: a direct buffer and
     * a range of whole sectors.
     */
    boolean canReadInto(long address, ByteBuffer dst) {
      int len = dst.remaining();
      return dst.isDirect() && address % sectorSize == 0 && len % sectorSize == 0 && len > 0;
    }

    /** Reads {@code len} bytes at byte {@code address}; the caller owns the result. */
    CompletableFuture<ByteBuf> read(long address, int len) {
      long first = address / sectorSize;
      long last = (address + len - 1) / sectorSize;
      int span = (int) ((last - first + 1) * sectorSize);
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(span, span);
      int skip = (int) (address - first * sectorSize);
      return queue()
          .read(nsid, first, buf.nioBuffer(0, span))
          .handle(
              (v, e) -> {
                if (e != null) {
                  buf.release();
                  throw e instanceof CompletionException ce ? ce : new CompletionException(e);
                }
                return buf.setIndex(skip, skip + len);
              });
    }

    void close() {
      controller.close();
    }
  }
}
