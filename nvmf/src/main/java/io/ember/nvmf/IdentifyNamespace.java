package io.ember.nvmf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The fields of the Identify Namespace data structure (CNS 00h) that a host needs to address blocks.
 *
 * @param nsid the namespace id this was read for
 * @param size NSZE, in logical blocks
 * @param capacity NCAP, in logical blocks
 * @param lbaFormat index of the formatted LBA format (FLBAS bits 3:0)
 * @param blockSize bytes per logical block of the formatted LBA format
 * @param metadataSize metadata bytes per block of the formatted LBA format
 * @param dlfeat deallocate logical block features (bits 2:0 = 001b: deallocated blocks read as zeroes)
 * @param nguid namespace globally unique identifier (16 bytes, all zero if not reported)
 */
public record IdentifyNamespace(int nsid, long size, long capacity, int lbaFormat, int blockSize, int metadataSize,
                                int dlfeat, byte[] nguid) {
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
        return new IdentifyNamespace(nsid, b.getLong(0), b.getLong(8), flbas, lbads == 0 ? 0 : 1 << lbads,
                lbaf & 0xFFFF, d[33] & 0xFF, nguid);
    }

    /** Size in bytes. */
    public long sizeBytes() {
        return size * blockSize;
    }

    /** Whether the namespace exists (an inactive NSID reads as all zeroes). */
    public boolean active() {
        return size != 0 && blockSize != 0;
    }
}
