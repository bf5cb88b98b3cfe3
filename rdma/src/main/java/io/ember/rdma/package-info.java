/**
 * What Ember's RDMA code shares over DiSNI's verbs. {@link io.ember.rdma.RdmaSupport} touches no
 * DiSNI class, so callers can ask whether RDMA can run before loading any.
 */
package io.ember.rdma;
