package io.ember.nvmf;

import io.ember.nvmf.spec.Nvme;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One entry of the Discovery Log Page (log 70h): where a subsystem can be reached.
 *
 * @param trtype transport type (1 RDMA, 2 FC, 3 TCP)
 * @param adrfam address family (1 IPv4, 2 IPv6)
 * @param subtype subsystem type (1 referral, 2 NVM subsystem, 3 current discovery subsystem)
 * @param portId port identifier
 * @param cntlid controller id (FFFFh: dynamic)
 * @param trsvcid transport service id (the port, as text)
 * @param subnqn subsystem NQN
 * @param traddr transport address
 */
public record DiscoveryLogEntry(
    int trtype,
    int adrfam,
    int subtype,
    int portId,
    int cntlid,
    String trsvcid,
    String subnqn,
    String traddr) {
  /** Size of one entry. */
  public static final int SIZE = 1024;

  /** Parses one entry at {@code off} of {@code log}. */
  public static DiscoveryLogEntry parse(byte[] log, int off) {
    ByteBuffer b = ByteBuffer.wrap(log).order(ByteOrder.LITTLE_ENDIAN);
    return new DiscoveryLogEntry(
        log[off] & 0xFF,
        log[off + 1] & 0xFF,
        log[off + 2] & 0xFF,
        b.getShort(off + 4) & 0xFFFF,
        b.getShort(off + 6) & 0xFFFF,
        Nvme.ascii(log, off + 32, 32),
        Nvme.ascii(log, off + 256, 256),
        Nvme.ascii(log, off + 512, 256));
  }
}
