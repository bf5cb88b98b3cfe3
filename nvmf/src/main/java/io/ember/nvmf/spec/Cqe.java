package io.ember.nvmf.spec;

/**
 * A 16-byte NVMe completion queue entry.
 *
 * @param dw0 command specific dword 0
 * @param dw1 command specific dword 1
 * @param sqhd submission queue head pointer
 * @param sqid submission queue identifier
 * @param cid command identifier
 * @param status the 15-bit status field (without the phase tag)
 */
public record Cqe(int dw0, int dw1, int sqhd, int sqid, int cid, int status) {
  /** Size of a completion queue entry in bytes. */
  public static final int SIZE = 16;

  /** DW0 and DW1 as one 64-bit value (Property Get of an 8-byte property). */
  public long value64() {
    return (dw0 & 0xFFFFFFFFL) | ((long) dw1 << 32);
  }
}
