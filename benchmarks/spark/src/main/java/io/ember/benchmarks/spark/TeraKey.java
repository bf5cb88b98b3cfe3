package io.ember.benchmarks.spark;

import java.io.Serializable;
import java.util.Comparator;

/**
 * A record's 10-byte key as two numbers, so sorting compares two longs rather than byte arrays; the
 * order is the keys' unsigned byte order.
 */
public final class TeraKey implements Comparable<TeraKey>, Serializable {
  private static final long serialVersionUID = 1L;

  /** The keys' order as a comparator Spark can ship to its tasks. */
  public static final Comparator<TeraKey> ORDER = new NaturalOrder();

  final long high;
  final short low;

  public TeraKey(long high, short low) {
    this.high = high;
    this.low = low;
  }

  /** The key at the front of the record at {@code offset}. */
  public static TeraKey of(byte[] record, int offset) {
    long high = 0;
    for (int i = 0; i < 8; i++) {
      high = (high << 8) | (record[offset + i] & 0xFF);
    }
    return new TeraKey(
        high, (short) (((record[offset + 8] & 0xFF) << 8) | (record[offset + 9] & 0xFF)));
  }

  /** Writes the key's 10 bytes at {@code offset}. */
  public void writeTo(byte[] out, int offset) {
    for (int i = 0; i < 8; i++) {
      out[offset + i] = (byte) (high >>> (56 - 8 * i));
    }
    out[offset + 8] = (byte) (low >>> 8);
    out[offset + 9] = (byte) low;
  }

  @Override
  public int compareTo(TeraKey o) {
    int c = Long.compareUnsigned(high, o.high);
    return c != 0 ? c : Integer.compare(low & 0xFFFF, o.low & 0xFFFF);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TeraKey k && k.high == high && k.low == low;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(high) * 31 + low;
  }

  @Override
  public String toString() {
    return String.format("%016x%04x", high, low & 0xFFFF);
  }

  private static final class NaturalOrder implements Comparator<TeraKey>, Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public int compare(TeraKey a, TeraKey b) {
      return a.compareTo(b);
    }
  }
}
