package io.ember.client.spi;

import io.ember.client.ClientMetrics;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.RpcClients;

/**
 * What a tier gets from the client that opens it.
 *
 * @param config the client's configuration
 * @param connections the client's shared connections and network threads
 * @param metrics the client's counters, which tiers add to
 */
public record TierContext(EmberConfig config, RpcClients connections, ClientMetrics metrics) {}
