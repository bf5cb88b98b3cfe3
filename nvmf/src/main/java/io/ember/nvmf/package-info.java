/**
 * NVMe over Fabrics host API: {@link io.ember.nvmf.NvmfHost} connects to a controller by URI and
 * returns an {@link io.ember.nvmf.NvmfController} whose {@link io.ember.nvmf.NvmfQueue}s submit I/O
 * asynchronously over caller-owned buffers. Failures are {@link io.ember.nvmf.NvmfException}s; NVMe
 * status codes arrive in words as {@link io.ember.nvmf.NvmeStatusException}. Transports: NVMe/TCP
 * ({@code io.ember.nvmf.tcp}) and RDMA through jNVMf ({@code io.ember.nvmf.rdma}). The embedded
 * target lives in {@code io.ember.nvmf.target}.
 */
package io.ember.nvmf;
