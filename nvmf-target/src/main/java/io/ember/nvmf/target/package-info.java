/**
 * An embedded NVMe/TCP target for development, tests and single-machine deployments: {@link
 * io.ember.nvmf.target.NvmfTarget} serves {@link io.ember.nvmf.target.Subsystem}s of {@link
 * io.ember.nvmf.target.Namespace}s (memory or file backed) plus a discovery subsystem, to any
 * NVMe/TCP host (this library's, the Linux kernel's, SPDK's).
 */
package io.ember.nvmf.target;
