/**
 * What the NVMe-oF host does the same way over every transport: building I/O commands (with
 * splitting by the largest transfer), bringing a controller up through its admin queue, and
 * describing commands in errors. The TCP and RDMA hosts supply only how a capsule travels.
 */
package io.ember.nvmf.host;
