package io.ember.nvmf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The fields of the Identify Namespace data structure (CNS 00h) that a host needs to address
 * blocks. A value: equal when every field is, the NGUID's bytes included.
 */
public final class IdentifyNamespace {
  private final int nsid;
  private final long size;
  private final long capacity;
  private final int lbaFormat;
  private final int blockSize;
  private final int metadataSize;
  private final int dlfeat;
  private final byte[] nguid;

  /**
   * The fields as read, or as another transport reports them.
   *
   * @param nsid the namespace id this was read for
   * @param size NSZE, in logical blocks
   * @param capacity NCAP, in logical blocks
   * @param lbaFormat index of the formatted LBA format (FLBAS bits 3:0)
   * @param blockSize bytes per logical block of the formatted LBA format
   * @param metadataSize metadata bytes per block of the formatted LBA format
   * @param dlfeat deallocate logical block features (bits 2:0 = 001b: deallocated blocks read as
   *     zeroes)
   * @param nguid namespace globally unique identifier (16 bytes, all zero if not reported); copied
   */
  public IdentifyNamespace(
      int nsid,
      long size,
      long capacity,
      int lbaFormat,
      int blockSize,
      int metadataSize,
      int dlfeat,
      byte[] nguid) {
    this.nsid = nsid;
    this.size = size;
    this.capacity = capacity;
    this.lbaFormat = lbaFormat;
    this.blockSize = blockSize;
    this.metadataSize = metadataSize;
    this.dlfeat = dlfeat;
    this.nguid = nguid.clone();
  }

  /** Parses the 4096-byte structure. */
  public static IdentifyNamespace parse(int nsid, byte[] d) {
    if (d.length < 4096) {
      throw new IllegalArgumentException("Identify Namespace data is 4096 bytes, got " + d.length);
    }
    ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
    int flbas = (d[26] & 0xF) | ((d[26] >> 1) & 0x30);
    int lbaf = b.getInt(128 + 4 * flbas);
    int lbads = (lbaf >> 16) & 0xFF;
    byte[] nguid = new byte[16];
    System.arraycopy(d, 104, nguid, 0, 16);
    return new IdentifyNamespace(
        nsid,
        b.getLong(0),
        b.getLong(8),
        flbas,
        lbads == 0 ? 0 : 1 << lbads,
        lbaf & 0xFFFF,
        d[33] & 0xFF,
        nguid);
  }

  /** Size in bytes. */
  public long sizeBytes() {
    return size * blockSize;
  }

  /** Whether the namespace exists (an inactive NSID reads as all zeroes). */
  public boolean active() {
    return size != 0 && blockSize != 0;
  }

  /** The namespace id this was read for. */
  public int nsid() {
    return nsid;
  }

  /** NSZE, in logical blocks. */
  public long size() {
    return size;
  }

  /** NCAP, in logical blocks. */
  public long capacity() {
    return capacity;
  }

  /** Index of the formatted LBA format (FLBAS bits 3:0). */
  public int lbaFormat() {
    return lbaFormat;
  }

  /** Bytes per logical block of the formatted LBA format. */
  public int blockSize() {
    return blockSize;
  }

  /** Metadata bytes per block of the formatted LBA format. */
  public int metadataSize() {
    return metadataSize;
  }

  /** Deallocate logical block features (bits 2:0 = 001b: deallocated blocks read as zeroes). */
  public int dlfeat() {
    return dlfeat;
  }

  /** The namespace globally unique identifier: a copy of its 16 bytes, all zero if not reported. */
  public byte[] nguid() {
    return nguid.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof IdentifyNamespace n
        && nsid == n.nsid
        && size == n.size
        && capacity == n.capacity
        && lbaFormat == n.lbaFormat
        && blockSize == n.blockSize
        && metadataSize == n.metadataSize
        && dlfeat == n.dlfeat
        && Arrays.equals(nguid, n.nguid);
  }

  @Override
  public int hashCode() {
    return 31 * Objects.hash(nsid, size, capacity, lbaFormat, blockSize, metadataSize, dlfeat)
        + Arrays.hashCode(nguid);
  }

  @Override
  public String toString() {
    return "IdentifyNamespace[nsid="
        + nsid
        + ", size="
        + size
        + ", capacity="
        + capacity
        + ", lbaFormat="
        + lbaFormat
        + ", blockSize="
        + blockSize
        + ", metadataSize="
        + metadataSize
        + ", dlfeat="
        + dlfeat
        + ", nguid="
        + HexFormat.of().formatHex(nguid)
        + "]";
  }
}
