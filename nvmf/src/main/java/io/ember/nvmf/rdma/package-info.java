/**
 * The host over NVMe-oF's RDMA transport binding, written over DiSNI's verbs. Nothing outside this
 * package references it directly, so the TCP host and the target work where DiSNI's native library
 * is missing.
 */
package io.ember.nvmf.rdma;
