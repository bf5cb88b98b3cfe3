package io.ember.namenode;

import io.ember.protocol.NodeType;
import io.ember.protocol.StorageClass;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/** A namespace entry. Guarded by the name node's state lock. */
abstract class Inode {
  final long id;
  final StorageClass storageClass;
  String name;
  Dir parent;
  long modificationTime;

  /** The identity that owns the entry. */
  String owner = "";

  /** The entry's group. */
  String group = "";

  /** Mode bits, as {@link io.ember.protocol.Permissions} reads them. */
  int permission;

  Inode(long id, String name, StorageClass storageClass, long now) {
    this.id = id;
    this.name = name;
    this.storageClass = storageClass;
    this.modificationTime = now;
  }

  abstract NodeType type();

  /** A directory or multifile. */
  static final class Dir extends Inode {
    final boolean multifile;

    /** Sorted by name so LIST pages are stable. */
    final TreeMap<String, Inode> children = new TreeMap<>();

    Dir(long id, String name, StorageClass storageClass, long now, boolean multifile) {
      super(id, name, storageClass, now);
      this.multifile = multifile;
    }

    @Override
    NodeType type() {
      return multifile ? NodeType.MULTIFILE : NodeType.DIRECTORY;
    }
  }

  /** A file: blocks in order, and its length once published. */
  static final class File extends Inode {
    final List<Block> blocks = new ArrayList<>();
    long length;
    boolean open = true;

    /** The writer whose lease covers this open file ("" for none). */
    String leaseHolder = "";

    /** Bytes the writer last reported its data nodes acknowledged. */
    long reportedLength;

    /** Closed by lease recovery, not by its writer. */
    boolean recovered;

    File(long id, String name, StorageClass storageClass, long now) {
      super(id, name, storageClass, now);
    }

    @Override
    NodeType type() {
      return NodeType.FILE;
    }
  }
}
