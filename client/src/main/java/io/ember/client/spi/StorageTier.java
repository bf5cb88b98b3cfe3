package io.ember.client.spi;

import io.ember.protocol.EmberException;

/**
 * A kind of data node as the client sees it, found with {@link java.util.ServiceLoader}. The name
 * node tells the client each block's tier ({@link io.ember.protocol.BlockLocation#tier()}); the
 * client asks the tier with that {@link #name()} for an endpoint. The client compiles against this
 * interface only, never against a data node module.
 */
public interface StorageTier {
  /** The tier's name as data nodes register it, e.g. "dram". */
  String name();

  /**
   * Opens the client side of this tier for one {@code EmberClient}.
   *
   * @throws EmberException when the tier cannot start (e.g. a missing native library)
   */
  StorageEndpoint open(TierContext context) throws EmberException;
}
