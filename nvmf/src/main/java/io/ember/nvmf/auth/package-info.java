/**
 * NVMe in-band authentication with DH-HMAC-CHAP: secrets in the {@code DHHC-1} representation, the
 * protocol's messages and responses, the host's exchange ({@link io.ember.nvmf.auth.DhchapHost})
 * and the controller's ({@link io.ember.nvmf.auth.DhchapController}), interoperable with Linux's
 * host and target.
 */
package io.ember.nvmf.auth;
