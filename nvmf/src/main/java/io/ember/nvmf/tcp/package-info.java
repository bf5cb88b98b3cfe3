/**
 * The NVMe/TCP transport (NVMe/TCP Transport Specification 1.0): PDU decoding with every length
 * checked ({@link io.ember.nvmf.tcp.PduFrameDecoder}), encoding without copying payloads ({@link
 * io.ember.nvmf.tcp.PduWriter}), CRC32C digests, and the host side ({@link
 * io.ember.nvmf.tcp.TcpController}). The embedded target reuses the codec.
 */
package io.ember.nvmf.tcp;
