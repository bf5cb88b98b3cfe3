package io.ember.nvmf.spec;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A 64-byte NVMe submission queue entry, little endian, with accessors for the fields fabrics use.
 * Mutable; not thread-safe. The host builds one per command, the target parses one per capsule.
 */
public final class Sqe {
  /** Size of a submission queue entry in bytes. */
  public static final int SIZE = 64;

  private final ByteBuffer b;

  /** An all-zero entry. */
  public Sqe() {
    this.b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Wraps {@code bytes}, which must be 64 long; the entry aliases the array. */
  public Sqe(byte[] bytes) {
    if (bytes.length != SIZE) {
      throw new IllegalArgumentException("an SQE is 64 bytes, got " + bytes.length);
    }
    this.b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The backing array (64 bytes). */
  public byte[] array() {
    return b.array();
  }

  public int opcode() {
    return b.get(0) & 0xFF;
  }

  public Sqe opcode(int v) {
    b.put(0, (byte) v);
    return this;
  }

  /** CDW0 byte 1 (FUSE bits 1:0, PSDT bits 7:6). */
  public int flags() {
    return b.get(1) & 0xFF;
  }

  public Sqe flags(int v) {
    b.put(1, (byte) v);
    return this;
  }

  /** PSDT, CDW0 bits 15:14. */
  public int psdt() {
    return (flags() >> 6) & 3;
  }

  public int cid() {
    return b.getShort(2) & 0xFFFF;
  }

  public Sqe cid(int v) {
    b.putShort(2, (short) v);
    return this;
  }

  /** Fabrics command type (byte 4, only for opcode 7Fh). */
  public int fctype() {
    return b.get(4) & 0xFF;
  }

  public Sqe fctype(int v) {
    b.put(4, (byte) v);
    return this;
  }

  public int nsid() {
    return b.getInt(4);
  }

  public Sqe nsid(int v) {
    b.putInt(4, v);
    return this;
  }

  /** Command dword {@code n} (0..15). */
  public int cdw(int n) {
    return b.getInt(n * 4);
  }

  public Sqe cdw(int n, int v) {
    b.putInt(n * 4, v);
    return this;
  }

  public byte byteAt(int off) {
    return b.get(off);
  }

  public Sqe byteAt(int off, int v) {
    b.put(off, (byte) v);
    return this;
  }

  public int shortAt(int off) {
    return b.getShort(off) & 0xFFFF;
  }

  public Sqe shortAt(int off, int v) {
    b.putShort(off, (short) v);
    return this;
  }

  public int intAt(int off) {
    return b.getInt(off);
  }

  public Sqe intAt(int off, int v) {
    b.putInt(off, v);
    return this;
  }

  public long longAt(int off) {
    return b.getLong(off);
  }

  public Sqe longAt(int off, long v) {
    b.putLong(off, v);
    return this;
  }

  /** SGL1 address (bytes 24..31). */
  public long sglAddress() {
    return b.getLong(24);
  }

  /** SGL1 length (bytes 32..35), unsigned. */
  public long sglLength() {
    return b.getInt(32) & 0xFFFFFFFFL;
  }

  /** SGL1 identifier (byte 39): type bits 7:4, sub type bits 3:0. */
  public int sglId() {
    return b.get(39) & 0xFF;
  }

  /** Sets SGL1 to the given address, length and identifier. */
  public Sqe sgl(long address, int length, int id) {
    b.putLong(24, address);
    b.putInt(32, length);
    b.put(36, (byte) 0).put(37, (byte) 0).put(38, (byte) 0);
    b.put(39, (byte) id);
    return this;
  }
}
