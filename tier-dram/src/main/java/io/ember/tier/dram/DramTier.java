package io.ember.tier.dram;

import io.ember.client.spi.StorageEndpoint;
import io.ember.client.spi.StorageTier;
import io.ember.client.spi.TierContext;

/**
 * The client side of the DRAM tier over TCP: BLOCK_WRITE and BLOCK_READ frames to the data node.
 * Data nodes that serve one-sided RDMA register as {@link RdmaDramTier} instead.
 */
public final class DramTier implements StorageTier {
  /** The tier's name, which block locations of DRAM data nodes carry. */
  public static final String NAME = "dram";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public StorageEndpoint open(TierContext context) {
    return new TcpEndpoint(context.connections());
  }
}
