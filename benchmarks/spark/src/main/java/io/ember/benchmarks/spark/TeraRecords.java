package io.ember.benchmarks.spark;

import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * Hadoop TeraGen's 100-byte record: a 10-byte random key, a break, the 128-bit row number in 32 hex
 * digits, a break, 48 bytes of filler and a closing break (the layout of Hadoop's {@code
 * GenSort.generateRecord}), and the order-independent checksum TeraValidate compares.
 */
public final class TeraRecords {
  /** Bytes per record. */
  public static final int RECORD = 100;

  /** Bytes of key at the front of each record. */
  public static final int KEY = 10;

  private static final byte[] HEX =
      "0123456789ABCDEF".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private TeraRecords() {}

  /** The random stream for the rows from {@code firstRow}: a fixed function of it and the seed. */
  public static SplittableRandom randomFrom(long seed, long firstRow) {
    return new SplittableRandom(seed * 0x9E3779B97F4A7C15L + firstRow);
  }

  /** Writes row {@code row}'s record at {@code offset}, drawing its 128 random bits from rng. */
  public static void generate(byte[] buf, int offset, long row, SplittableRandom rng) {
    long hi = rng.nextLong();
    long lo = rng.nextLong();
    for (int i = 0; i < 8; i++) {
      buf[offset + i] = (byte) (hi >>> (56 - 8 * i));
    }
    buf[offset + 8] = (byte) (lo >>> 56);
    buf[offset + 9] = (byte) (lo >>> 48);
    buf[offset + 10] = 0x00;
    buf[offset + 11] = 0x11;
    // The row number as a 128-bit value in hex: 16 leading zeros, then the long.
    for (int i = 0; i < 16; i++) {
      buf[offset + 12 + i] = '0';
      buf[offset + 28 + i] = HEX[(int) (row >>> (60 - 4 * i)) & 0xF];
    }
    buf[offset + 44] = (byte) 0x88;
    buf[offset + 45] = (byte) 0x99;
    buf[offset + 46] = (byte) 0xAA;
    buf[offset + 47] = (byte) 0xBB;
    // Filler: 12 groups of four copies of one of the low 48 random bits' hex digits.
    for (int i = 0; i < 12; i++) {
      byte digit = HEX[(int) (lo >>> (44 - 4 * i)) & 0xF];
      int at = offset + 48 + 4 * i;
      buf[at] = digit;
      buf[at + 1] = digit;
      buf[at + 2] = digit;
      buf[at + 3] = digit;
    }
    buf[offset + 96] = (byte) 0xCC;
    buf[offset + 97] = (byte) 0xDD;
    buf[offset + 98] = (byte) 0xEE;
    buf[offset + 99] = (byte) 0xFF;
  }

  /**
   * The record's share of a data set's checksum: sums of these do not depend on order. {@code crc}
   * is reset and reused, so loops over millions of records need not allocate one each.
   */
  public static long checksum(CRC32C crc, byte[] buf, int offset) {
    crc.reset();
    crc.update(buf, offset, RECORD);
    return crc.getValue();
  }

  /** Compares two records' keys as unsigned bytes, as TeraSort orders them. */
  public static int compareKeys(byte[] a, int aOffset, byte[] b, int bOffset) {
    return java.util.Arrays.compareUnsigned(a, aOffset, aOffset + KEY, b, bOffset, bOffset + KEY);
  }
}
