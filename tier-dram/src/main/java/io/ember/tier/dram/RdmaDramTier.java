package io.ember.tier.dram;

import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.StorageTier;
import io.ember.client.spi.TierContext;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.rdma.RdmaSupport;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of DRAM data nodes that serve one-sided RDMA ({@code ember datanode dram
 * --transport rdma}): the client asks the data node once per block for the block's RDMA address and
 * key (BLOCK_GRANT, over the RPC connection, checked against the block's generation there), then
 * reads and writes it with RDMA READ and WRITE, without the data node's CPU on the data path.
 *
 * <p>Where RDMA cannot run in this process (no device, no libdisni, or the JVM flag DiSNI needs is
 * missing), the same blocks are read and written over TCP, which such data nodes also serve; the
 * reason is logged once.
 */
public final class RdmaDramTier implements StorageTier {
  /** The tier's name, which block locations of DRAM data nodes serving RDMA carry. */
  public static final String NAME = "dram-rdma";

  private static final Logger LOG = LoggerFactory.getLogger(RdmaDramTier.class);
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  /** Grants kept per client before the cache starts over (each is a few dozen bytes). */
  private static final int MAX_GRANTS = 1 << 16;

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public StorageEndpoint open(TierContext context) {
    TcpEndpoint tcp = new TcpEndpoint(context.connections());
    Optional<String> reason = RdmaSupport.unavailableReason();
    if (reason.isPresent()) {
      if (WARNED.compareAndSet(false, true)) {
        LOG.warn(
            "RDMA cannot run here ({}): blocks of DRAM data nodes serving RDMA go over TCP",
            reason.get());
      }
      return tcp;
    }
    return new Endpoint(tcp, context.config().get(EmberKeys.RPC_TIMEOUT).toNanos());
  }

  /**
   * What a data node granted for a block: where to connect and what to access, and until when the
   * token it was granted under holds (the data node drops the key once that has passed, unless a
   * later grant's token holds longer).
   */
  private record Grant(InetSocketAddress rdma, long remoteAddress, int rkey, long tokenExpires) {
    /**
     * True when {@code block}'s token holds so much longer than this grant's that the grant should
     * be asked again, so the data node keeps the key that long: once this grant's token has no more
     * than half the time left that the block's has. A reader re-asks about once per half a token's
     * lifetime, a writer when it renews its token.
     */
    boolean outlivedBy(BlockLocation block) {
      long blockExpires = block.token().expiresMillis();
      if (blockExpires <= tokenExpires) {
        return false;
      }
      long now = System.currentTimeMillis();
      return tokenExpires - now <= (blockExpires - now) / 2;
    }
  }

  /** Which grant: a read grant's key only reads (the data node registers the slot read-only). */
  private record GrantKey(
      String endpoint,
      long incarnation,
      long blockId,
      long generation,
      long address,
      boolean forWrite) {
    static GrantKey of(BlockLocation b, boolean forWrite) {
      return new GrantKey(
          b.endpoint(), b.incarnation(), b.blockId(), b.generation(), b.address(), forWrite);
    }
  }

  private static final class Endpoint implements StorageEndpoint {
    private final TcpEndpoint tcp;
    private final long timeoutNanos;
    private final Map<GrantKey, CompletableFuture<Grant>> grants = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, CompletableFuture<RdmaLink>> links =
        new ConcurrentHashMap<>();

    /** Connecting blocks on connection events, so it happens off the callers' threads. */
    private final ExecutorService connector =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "dram-rdma-connect");
              t.setDaemon(true);
              return t;
            });

    private volatile boolean closed;

    Endpoint(TcpEndpoint tcp, long timeoutNanos) {
      this.tcp = tcp;
      this.timeoutNanos = timeoutNanos;
    }

    @Override
    public boolean checksGenerations() {
      return true; // grants are checked, and keys dropped when a slot moves on
    }

    @Override
    public CompletableFuture<Void> write(BlockLocation block, int offset, ByteBuf data) {
      if (data.readableBytes() == 0) {
        data.release();
        return CompletableFuture.completedFuture(null);
      }
      long[] notice = {
        block.incarnation(), block.blockId(), block.generation(), block.address() + offset
      };
      int length = data.readableBytes();
      Supplier<String> what =
          () -> "write of " + length + " bytes at " + offset + " of block " + block.blockId();
      return withLink(
              block,
              true,
              (link, g) -> link.write(g.remoteAddress() + offset, g.rkey(), data, notice, what))
          .whenComplete((v, e) -> data.release());
    }

    @Override
    public CompletableFuture<ByteBuf> read(BlockLocation block, int offset, int length) {
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(length, length);
      return readInto(block, offset, buf.nioBuffer(0, length))
          .handle(
              (v, e) -> {
                if (e != null) {
                  buf.release();
                  throw e instanceof CompletionException ce ? ce : new CompletionException(e);
                }
                return buf.writerIndex(length);
              });
    }

    @Override
    public CompletableFuture<Void> readInto(BlockLocation block, int offset, ByteBuffer dst) {
      if (!dst.hasRemaining()) {
        return CompletableFuture.completedFuture(null);
      }
      int length = dst.remaining();
      Supplier<String> what =
          () -> "read of " + length + " bytes at " + offset + " of block " + block.blockId();
      return withLink(
          block, false, (link, g) -> link.read(g.remoteAddress() + offset, g.rkey(), dst, what));
    }

    private interface Access {
      CompletableFuture<Void> run(RdmaLink link, Grant grant);
    }

    /**
     * Runs {@code access} with the block's grant over a live connection; once more on a new
     * connection when the first failed before the access ran.
     */
    private CompletableFuture<Void> withLink(BlockLocation block, boolean forWrite, Access access) {
      return attempt(block, forWrite, access)
          .exceptionallyCompose(
              e ->
                  unwrap(e) instanceof RdmaLink.Flushed
                      ? attempt(block, forWrite, access)
                      : CompletableFuture.failedFuture(unwrap(e)));
    }

    private CompletableFuture<Void> attempt(BlockLocation block, boolean forWrite, Access access) {
      CompletableFuture<Grant> granted = grant(block, GrantKey.of(block, forWrite));
      return granted.thenCompose(
          g ->
              link(g.rdma(), block)
                  .thenCompose(l -> access.run(l, g))
                  .whenComplete(
                      (v, e) -> {
                        if (e != null
                            && unwrap(e) instanceof EmberException ee
                            && ee.code() == ErrorCode.STALE_LOCATION) {
                          // The block moved on or the key expired: ask again next time (not a
                          // grant another access has asked for since).
                          grants.remove(GrantKey.of(block, false), granted);
                          grants.remove(GrantKey.of(block, true), granted);
                        }
                      }));
    }

    private CompletableFuture<Grant> grant(BlockLocation block, GrantKey key) {
      CompletableFuture<Grant> known = grants.get(key);
      if (usable(known, block)) {
        return known;
      }
      if (!key.forWrite()) {
        // A writer reading back what it wrote uses its write key, which reads too.
        CompletableFuture<Grant> writable = grants.get(GrantKey.of(block, true));
        if (writable != null && writable.isDone() && usable(writable, block)) {
          return writable;
        }
      }
      if (grants.size() >= MAX_GRANTS) {
        grants.clear();
      }
      CompletableFuture<Grant> asked =
          tcp.connection(block)
              .thenCompose(
                  c ->
                      c.call(
                          MessageType.BLOCK_GRANT,
                          Messages.BlockGrantRequest.of(block, key.forWrite()),
                          Messages.BlockGrantResponse::decode))
              .thenApply(
                  r ->
                      new Grant(
                          new InetSocketAddress(tcp.hostPort(block).host(), r.rdmaPort()),
                          r.remoteAddress(),
                          r.rkey(),
                          block.token().expiresMillis()));
      CompletableFuture<Grant> raced = grants.putIfAbsent(key, asked);
      if (raced != null && usable(raced, block)) {
        return raced;
      }
      grants.put(key, asked);
      // A refused grant is not kept: the next access asks again.
      var unused =
          asked.whenComplete(
              (g, e) -> {
                if (e != null) {
                  grants.remove(key, asked);
                }
              });
      return asked;
    }

    /** A grant asked for, or got, that serves {@code block} (not refused, nor outlived). */
    private static boolean usable(CompletableFuture<Grant> f, BlockLocation block) {
      if (f == null || f.isCompletedExceptionally()) {
        return false;
      }
      Grant g = f.getNow(null);
      return g == null || !g.outlivedBy(block);
    }

    private CompletableFuture<RdmaLink> link(InetSocketAddress at, BlockLocation block) {
      while (true) {
        CompletableFuture<RdmaLink> f = links.get(at);
        if (f != null) {
          RdmaLink l = f.getNow(null);
          if (!f.isDone() || (l != null && l.isAlive())) {
            return f;
          }
          if (links.remove(at, f) && l != null) {
            connector.execute(() -> l.close("it failed"));
          }
          continue;
        }
        if (closed) {
          return CompletableFuture.failedFuture(
              new EmberException(ErrorCode.CLOSED, "the client is closed"));
        }
        String node = "data node " + block.datanodeId();
        CompletableFuture<RdmaLink> made = new CompletableFuture<>();
        if (links.putIfAbsent(at, made) != null) {
          continue;
        }
        connector.execute(
            () -> {
              try {
                RdmaLink l = RdmaLink.connect(at, node, timeoutNanos);
                if (closed) {
                  l.close("the client closed");
                  links.remove(at, made);
                  made.completeExceptionally(
                      new EmberException(ErrorCode.CLOSED, "the client is closed"));
                  return;
                }
                made.complete(l);
              } catch (EmberException | RuntimeException e) {
                links.remove(at, made);
                made.completeExceptionally(e);
              }
            });
        return made;
      }
    }

    private static Throwable unwrap(Throwable e) {
      while (e instanceof CompletionException && e.getCause() != null) {
        e = e.getCause();
      }
      return e;
    }

    @Override
    public void close() {
      closed = true;
      for (CompletableFuture<RdmaLink> f : links.values()) {
        // One still connecting is closed by its connector once it sees closed.
        RdmaLink l = f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
        if (l != null) {
          l.close("the client closed");
        }
      }
      links.clear();
      connector.shutdown();
      tcp.close();
    }
  }
}
