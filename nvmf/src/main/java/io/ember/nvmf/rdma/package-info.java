/**
 * The host interface over RDMA through jNVMf and DiSNI. Nothing outside this package references it
 * directly, so the TCP host and the target work where DiSNI's native library is missing.
 */
package io.ember.nvmf.rdma;
