package io.ember.spark;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;

/**
 * Where each partition of one map output starts in its data file, and the CRC32C of each
 * partition's bytes. Stored as the data file's trailer, after the partitions: {@code int n | long
 * offsets[n + 1] | long crc[n] | int size}, where size is that of the fields before it, so a reader
 * can check the trailer it read is one. A value: equal when the offsets and checksums are.
 */
final class ShuffleIndex {
  static final String DATA = ".data";

  private final long[] offsets;
  private final long[] checksums;

  /**
   * An index over arrays the caller hands over (they are not copied, and must not change).
   *
   * @param offsets n + 1 offsets; partition p is [offsets[p], offsets[p + 1])
   * @param checksums the CRC32C of each partition
   */
  ShuffleIndex(long[] offsets, long[] checksums) {
    if (offsets.length != checksums.length + 1) {
      throw new IllegalArgumentException(
          offsets.length + " offsets for " + checksums.length + " partitions");
    }
    this.offsets = offsets;
    this.checksums = checksums;
  }

  int partitions() {
    return checksums.length;
  }

  /** Where partition {@code p} starts; {@code offset(partitions())} is where the last one ends. */
  long offset(int p) {
    return offsets[p];
  }

  /** The CRC32C of partition {@code p}'s bytes. */
  long checksum(int p) {
    return checksums[p];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ShuffleIndex i
        && Arrays.equals(offsets, i.offsets)
        && Arrays.equals(checksums, i.checksums);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(offsets) + Arrays.hashCode(checksums);
  }

  @Override
  public String toString() {
    return "ShuffleIndex[offsets="
        + Arrays.toString(offsets)
        + ", checksums="
        + Arrays.toString(checksums)
        + "]";
  }

  /** Bytes of the index of {@code partitions} partitions: the trailer without its size field. */
  private static long indexSize(int partitions) {
    return 4L + 8L * (partitions + 1) + 8L * partitions;
  }

  /** Bytes of the trailer of a map output with {@code partitions} partitions. */
  static long trailerSize(int partitions) {
    return indexSize(partitions) + 4;
  }

  byte[] encodeTrailer() {
    int indexSize = (int) indexSize(partitions());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(indexSize + 4);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(checksums.length);
      for (long o : offsets) {
        out.writeLong(o);
      }
      for (long c : checksums) {
        out.writeLong(c);
      }
      out.writeInt(indexSize);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Reads the trailer that ends {@code bytes}, checking its sizes.
   *
   * @throws IOException when the bytes do not end in a well-formed trailer
   */
  static ShuffleIndex decodeTrailer(byte[] bytes) throws IOException {
    int end = bytes.length;
    if (end < 4) {
      throw new IOException("shuffle map output of " + end + " bytes has no trailer");
    }
    int size = java.nio.ByteBuffer.wrap(bytes).getInt(end - 4);
    if (size < 4 || size > end - 4) {
      throw new IOException("shuffle map output trailer claims " + size + " bytes of " + (end - 4));
    }
    return decode(Arrays.copyOfRange(bytes, end - 4 - size, end - 4));
  }

  /**
   * Reads an index, checking its counts against its size and its offsets for order.
   *
   * @throws IOException when the bytes are not a well-formed index
   */
  private static ShuffleIndex decode(byte[] bytes) throws IOException {
    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
    int n = in.readInt();
    if (n < 0 || indexSize(n) != bytes.length) {
      throw new IOException(
          "shuffle index of " + bytes.length + " bytes claims " + n + " partitions");
    }
    long[] offsets = new long[n + 1];
    for (int i = 0; i <= n; i++) {
      offsets[i] = in.readLong();
      if ((i > 0 && offsets[i] < offsets[i - 1]) || offsets[i] < 0) {
        throw new IOException("shuffle index offsets out of order at partition " + i);
      }
    }
    long[] crc = new long[n];
    for (int i = 0; i < n; i++) {
      crc[i] = in.readLong();
    }
    return new ShuffleIndex(offsets, crc);
  }
}
