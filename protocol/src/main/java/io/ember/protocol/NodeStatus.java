package io.ember.protocol;

import io.netty.buffer.ByteBuf;

/**
 * What the name node knows of one namespace entry.
 *
 * @param id the entry's id, stable across renames
 * @param type file, directory or multifile
 * @param length published length in bytes (0 while a file is being written; for a multifile the sum
 *     of its closed children)
 * @param blockCount blocks held by a file
 * @param blockSize the cluster's block size, which fixes where each block of the file starts
 * @param storageClass the storage class the entry asked for at create
 * @param modificationTime milliseconds since the epoch of the last change
 * @param open true while a file is being written and its length is not yet published
 * @param leaseHolder for a file being written, the client whose lease covers it ("" otherwise)
 * @param acknowledgedLength for a file being written, the bytes its writer last reported its data
 *     nodes acknowledged: what lease recovery would keep (0 otherwise)
 * @param owner the identity that owns the entry
 * @param group the group the entry belongs to
 * @param permission the entry's mode bits, as {@link Permissions} reads them (owner, group and
 *     other read, write and execute, and the sticky bit)
 */
public record NodeStatus(
    long id,
    NodeType type,
    long length,
    int blockCount,
    int blockSize,
    StorageClass storageClass,
    long modificationTime,
    boolean open,
    String leaseHolder,
    long acknowledgedLength,
    String owner,
    String group,
    int permission)
    implements Message {

  /** The status of an entry without owner, group or mode (a test's, or a server's without them). */
  public NodeStatus(
      long id,
      NodeType type,
      long length,
      int blockCount,
      int blockSize,
      StorageClass storageClass,
      long modificationTime,
      boolean open,
      String leaseHolder,
      long acknowledgedLength) {
    this(
        id,
        type,
        length,
        blockCount,
        blockSize,
        storageClass,
        modificationTime,
        open,
        leaseHolder,
        acknowledgedLength,
        "",
        "",
        0);
  }

  /** The status of an entry no writer holds. */
  public NodeStatus(
      long id,
      NodeType type,
      long length,
      int blockCount,
      int blockSize,
      StorageClass storageClass,
      long modificationTime,
      boolean open) {
    this(id, type, length, blockCount, blockSize, storageClass, modificationTime, open, "", 0);
  }

  /** Encoded size in bytes, with an empty lease holder, owner and group. */
  public static final int BYTES = 8 + 1 + 8 + 4 + 4 + 1 + 8 + 1 + 4 + 8 + 4 + 4 + 2;

  @Override
  public void encode(ByteBuf out) {
    out.writeLong(id);
    out.writeByte(type.code());
    out.writeLong(length);
    out.writeInt(blockCount);
    out.writeInt(blockSize);
    out.writeByte(storageClass.id());
    out.writeLong(modificationTime);
    out.writeBoolean(open);
    Wire.writeString(out, leaseHolder);
    out.writeLong(acknowledgedLength);
    Wire.writeString(out, owner);
    Wire.writeString(out, group);
    out.writeShort(permission);
  }

  /** Reads a status written by {@link #encode}. */
  public static NodeStatus decode(ByteBuf in) throws MalformedFrameException {
    long id = Wire.readLong(in, "node id");
    NodeType type = NodeType.fromCode(Wire.readByte(in, "node type"));
    long length = Wire.readLong(in, "length", 0, Long.MAX_VALUE);
    int blocks = Wire.readInt(in, "block count", 0, Integer.MAX_VALUE);
    int blockSize = Wire.readInt(in, "block size", 1, Integer.MAX_VALUE);
    StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
    long mtime = Wire.readLong(in, "modification time");
    boolean open = Wire.readBoolean(in, "open");
    String holder = Wire.readString(in, "lease holder", Messages.MAX_HOLDER_BYTES);
    long acknowledged = Wire.readLong(in, "acknowledged length", 0, Long.MAX_VALUE);
    String owner = Wire.readString(in, "owner", Permissions.MAX_NAME_BYTES);
    String group = Wire.readString(in, "group", Permissions.MAX_NAME_BYTES);
    int permission = Permissions.read(in);
    if (permission == Permissions.DEFAULT) {
      throw new MalformedFrameException("a status must carry a mode");
    }
    return new NodeStatus(
        id,
        type,
        length,
        blocks,
        blockSize,
        sc,
        mtime,
        open,
        holder,
        acknowledged,
        owner,
        group,
        permission);
  }

  /** True for files. */
  public boolean isFile() {
    return type == NodeType.FILE;
  }

  /** True for directories and multifiles. */
  public boolean isContainer() {
    return type.isContainer();
  }
}
