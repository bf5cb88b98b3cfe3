package io.ember.client;

import java.util.concurrent.atomic.LongAdder;

/** Counters of one client, safe to read at any time. */
public final class ClientMetrics {
  final LongAdder bytesWritten = new LongAdder();
  final LongAdder bytesRead = new LongAdder();
  final LongAdder blockWrites = new LongAdder();
  final LongAdder blockReads = new LongAdder();
  final LongAdder metadataCalls = new LongAdder();
  final LongAdder leaseRenewals = new LongAdder();
  final LongAdder blockCacheHits = new LongAdder();
  final LongAdder blockCacheMisses = new LongAdder();
  private final LongAdder readModifyWriteSectors = new LongAdder();

  /** Reads the client's kept write memory; set by the client that owns these counters. */
  volatile java.util.function.LongSupplier writeMemoryKept = () -> 0;

  /**
   * Bytes of direct memory the client keeps for its output streams' next writes while no write uses
   * them ({@link ClientKeys#WRITE_BUFFERS_KEPT}); freed once it has stopped writing for {@link
   * ClientKeys#WRITE_BUFFERS_IDLE}, and at its close.
   */
  public long writeMemoryKept() {
    return writeMemoryKept.getAsLong();
  }

  /** Counts sectors a block-device tier had to read, patch and write back for unaligned writes. */
  public void addReadModifyWrites(long sectors) {
    readModifyWriteSectors.add(sectors);
  }

  /** Sectors read-modify-written for unaligned writes (block-device tiers only). */
  public long readModifyWriteSectors() {
    return readModifyWriteSectors.sum();
  }

  /** Bytes written to data nodes. */
  public long bytesWritten() {
    return bytesWritten.sum();
  }

  /** Bytes read from data nodes. */
  public long bytesRead() {
    return bytesRead.sum();
  }

  /** Write transfers sent to data nodes. */
  public long blockWrites() {
    return blockWrites.sum();
  }

  /** Read transfers sent to data nodes. */
  public long blockReads() {
    return blockReads.sum();
  }

  /**
   * Calls to the name node made by the client's operations; the lease renewals that run in the
   * background while files are open for writing are counted apart, by {@link #leaseRenewals()}.
   */
  public long metadataCalls() {
    return metadataCalls.sum();
  }

  /** Lease renewals sent to the name node for the files this client has open for writing. */
  public long leaseRenewals() {
    return leaseRenewals.sum();
  }

  /** Block locations found in the cache. */
  public long blockCacheHits() {
    return blockCacheHits.sum();
  }

  /** Block locations fetched from the name node. */
  public long blockCacheMisses() {
    return blockCacheMisses.sum();
  }

  @Override
  public String toString() {
    return "written="
        + bytesWritten()
        + "B in "
        + blockWrites()
        + ", read="
        + bytesRead()
        + "B in "
        + blockReads()
        + ", metadata calls="
        + metadataCalls()
        + ", lease renewals="
        + leaseRenewals()
        + ", block cache hits="
        + blockCacheHits()
        + " misses="
        + blockCacheMisses()
        + ", read-modify-write sectors="
        + readModifyWriteSectors()
        + ", write memory kept="
        + writeMemoryKept()
        + "B";
  }
}
