package io.ember.nvmf;

import io.ember.nvmf.spec.Nvme;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The fields of the Identify Controller data structure (CNS 01h) that a fabrics host needs.
 *
 * @param vid PCI vendor id
 * @param serial serial number
 * @param model model number
 * @param firmware firmware revision
 * @param mdts maximum data transfer size as a power of two in units of CAP.MPSMIN (0 = no limit)
 * @param cntlid controller id
 * @param version VER (major 31:16, minor 15:8, tertiary 7:0)
 * @param controllerType CNTRLTYPE (1 I/O, 2 discovery, 3 admin; 0 on older controllers)
 * @param kas keep alive granularity in 100 ms units (0 = no keep alive)
 * @param maxcmd MAXCMD, outstanding commands per queue (0 = not reported)
 * @param nn number of namespaces (largest valid NSID)
 * @param oncs optional NVM command support (bit 2 DSM, bit 3 Write Zeroes)
 * @param vwc volatile write cache present (bit 0)
 * @param sgls SGL support
 * @param subsystemNqn SUBNQN
 * @param ioccsz I/O queue command capsule supported size in 16-byte units (includes the 64-byte
 *     SQE)
 * @param iorcsz I/O queue response capsule supported size in 16-byte units
 * @param icdoff in-capsule data offset in 16-byte units
 */
public record IdentifyController(
    int vid,
    String serial,
    String model,
    String firmware,
    int mdts,
    int cntlid,
    int version,
    int controllerType,
    int kas,
    int maxcmd,
    int nn,
    int oncs,
    int vwc,
    int sgls,
    String subsystemNqn,
    int ioccsz,
    int iorcsz,
    int icdoff) {
  /** Size of the Identify data structures. */
  public static final int SIZE = 4096;

  /** Parses the 4096-byte structure. */
  public static IdentifyController parse(byte[] d) {
    if (d.length < SIZE) {
      throw new IllegalArgumentException("Identify Controller data is 4096 bytes, got " + d.length);
    }
    ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
    return new IdentifyController(
        b.getShort(0) & 0xFFFF,
        Nvme.ascii(d, 4, 20),
        Nvme.ascii(d, 24, 40),
        Nvme.ascii(d, 64, 8),
        d[77] & 0xFF,
        b.getShort(78) & 0xFFFF,
        b.getInt(80),
        d[111] & 0xFF,
        b.getShort(320) & 0xFFFF,
        b.getShort(514) & 0xFFFF,
        b.getInt(516),
        b.getShort(520) & 0xFFFF,
        d[525] & 0xFF,
        b.getInt(536),
        Nvme.ascii(d, 768, 256),
        b.getInt(1792),
        b.getInt(1796),
        b.getShort(1800) & 0xFFFF);
  }

  /** Bytes of in-capsule data an I/O command may carry (IOCCSZ minus the SQE), 0 if none. */
  public int inCapsuleDataSize() {
    return Math.max(0, ioccsz * 16 - 64);
  }

  /** Whether Dataset Management is supported (ONCS bit 2). */
  public boolean supportsDsm() {
    return (oncs & 4) != 0;
  }

  /** Whether Write Zeroes is supported (ONCS bit 3). */
  public boolean supportsWriteZeroes() {
    return (oncs & 8) != 0;
  }

  /** The version as {@code major.minor.tertiary}. */
  public String versionString() {
    return (version >>> 16) + "." + ((version >> 8) & 0xFF) + "." + (version & 0xFF);
  }
}
