/**
 * Numbers and entry layouts from the NVMe Base and NVMe over Fabrics specifications, shared by host
 * and target.
 */
package io.ember.nvmf.spec;
