package io.ember.spark;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * Where each partition of one map output starts in its data file, and the CRC32C of each
 * partition's bytes. Stored beside the data as {@code <mapTaskId>.index}: {@code int n | long
 * offsets[n + 1] | long crc[n]}.
 *
 * @param offsets n + 1 offsets; partition p is [offsets[p], offsets[p + 1])
 * @param checksums the CRC32C of each partition
 */
record ShuffleIndex(long[] offsets, long[] checksums) {
  static final String DATA = ".data";
  static final String INDEX = ".index";

  int partitions() {
    return checksums.length;
  }

  byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(4 + 16 * checksums.length + 8);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(checksums.length);
      for (long o : offsets) {
        out.writeLong(o);
      }
      for (long c : checksums) {
        out.writeLong(c);
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Reads an index, checking its counts against its size and its offsets for order.
   *
   * @throws IOException when the bytes are not a well-formed index
   */
  static ShuffleIndex decode(byte[] bytes) throws IOException {
    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
    int n = in.readInt();
    if (n < 0 || 4L + 8L * (n + 1) + 8L * n != bytes.length) {
      throw new IOException("shuffle index of " + bytes.length + " bytes claims " + n
          + " partitions");
    }
    long[] offsets = new long[n + 1];
    for (int i = 0; i <= n; i++) {
      offsets[i] = in.readLong();
      if (i > 0 && offsets[i] < offsets[i - 1] || offsets[i] < 0) {
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
