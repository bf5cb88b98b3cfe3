package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * The request and response bodies of every frame type. Each {@code decode} checks every length and
 * count against the bytes present and against its maximum before it allocates, and refuses trailing
 * bytes.
 */
public final class Messages {
  /** Most entries in one LIST answer; bigger directories are paged. */
  public static final int MAX_LIST_ENTRIES = 4096;

  /** Most locations in one GET_BLOCKS or OPEN answer. */
  public static final int MAX_BLOCKS_PER_CALL = 1024;

  /** Most storage classes in a DF answer. */
  public static final int MAX_CLASSES = 256;

  private Messages() {}

  /**
   * CREATE: make a file, directory or multifile. Answered by a {@link NodeStatus}, or by a {@link
   * CreateResponse} when {@code firstBlock} is asked for.
   *
   * @param overwrite for a file: delete a file already at the path in the same step (a directory
   *     there is still refused)
   */
  public record CreateRequest(
      String path,
      NodeType type,
      StorageClass storageClass,
      boolean createParents,
      String leaseHolder,
      boolean firstBlock,
      boolean overwrite,
      int permission)
      implements Message {
    /** A create whose file (if it is one) no lease covers, without a first block. */
    public CreateRequest(
        String path, NodeType type, StorageClass storageClass, boolean createParents) {
      this(path, type, storageClass, createParents, "", false, false);
    }

    /** A create with the name node's default mode for the entry's type. */
    public CreateRequest(
        String path,
        NodeType type,
        StorageClass storageClass,
        boolean createParents,
        String leaseHolder,
        boolean firstBlock,
        boolean overwrite) {
      this(
          path,
          type,
          storageClass,
          createParents,
          leaseHolder,
          firstBlock,
          overwrite,
          Permissions.DEFAULT);
    }

    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
      out.writeByte(type.code());
      out.writeByte(storageClass.id());
      out.writeBoolean(createParents);
      Wire.writeString(out, leaseHolder);
      out.writeBoolean(firstBlock);
      out.writeBoolean(overwrite);
      out.writeShort(permission);
    }

    /** Reads the body. */
    public static CreateRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      NodeType type = NodeType.fromCode(Wire.readByte(in, "node type"));
      StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
      boolean parents = Wire.readBoolean(in, "create parents");
      String holder = Wire.readString(in, "lease holder", MAX_HOLDER_BYTES);
      boolean firstBlock = Wire.readBoolean(in, "first block");
      boolean overwrite = Wire.readBoolean(in, "overwrite");
      int permission = Permissions.read(in);
      Wire.expectEnd(in, "CREATE");
      return new CreateRequest(path, type, sc, parents, holder, firstBlock, overwrite, permission);
    }
  }

  /**
   * The answer to a CREATE that asked for its file's first block: the new entry's status, then the
   * block's location, or none when no class had room (the writer asks again when it writes). It
   * saves the writer a round trip, and the name node a journal force.
   */
  public record CreateResponse(NodeStatus status, BlockLocation firstBlock) implements Message {
    @Override
    public void encode(ByteBuf out) {
      status.encode(out);
      out.writeBoolean(firstBlock != null);
      if (firstBlock != null) {
        firstBlock.encode(out);
      }
    }

    /** Reads the body. */
    public static CreateResponse decode(ByteBuf in) throws MalformedFrameException {
      NodeStatus status = NodeStatus.decode(in);
      BlockLocation block =
          Wire.readBoolean(in, "has first block") ? BlockLocation.decode(in) : null;
      Wire.expectEnd(in, "CREATE answer");
      return new CreateResponse(status, block);
    }
  }

  /** The longest lease holder name, in UTF-8 bytes. */
  public static final int MAX_HOLDER_BYTES = 256;

  /** The most open files one lease renewal reports. */
  public static final int MAX_LEASE_FILES = 1 << 20;

  /** The length a writer's data nodes acknowledged for a file it has open. */
  public record WrittenLength(long fileId, long length) {}

  /**
   * RENEW_LEASE: a writer is alive, and how many bytes of each file it has open its data nodes
   * acknowledged. Answered by a {@link RenewLeaseResponse}.
   */
  public record RenewLeaseRequest(String holder, List<WrittenLength> files) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, holder);
      out.writeInt(files.size());
      for (WrittenLength f : files) {
        out.writeLong(f.fileId());
        out.writeLong(f.length());
      }
    }

    /** Reads the body. */
    public static RenewLeaseRequest decode(ByteBuf in) throws MalformedFrameException {
      String holder = Wire.readString(in, "lease holder", MAX_HOLDER_BYTES);
      int n = Wire.readCount(in, "open files", MAX_LEASE_FILES, 16);
      List<WrittenLength> files = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        files.add(
            new WrittenLength(
                Wire.readLong(in, "file id"), Wire.readLong(in, "length", 0, Long.MAX_VALUE)));
      }
      Wire.expectEnd(in, "RENEW_LEASE");
      return new RenewLeaseRequest(holder, files);
    }
  }

  /**
   * The answer to RENEW_LEASE: the name node's lease timeout (renew well within it), and the files
   * of the request the holder no longer has open (its lease was recovered, or they were deleted).
   */
  public record RenewLeaseResponse(long leaseTimeoutMillis, List<Long> lostFiles)
      implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(leaseTimeoutMillis);
      out.writeInt(lostFiles.size());
      for (long id : lostFiles) {
        out.writeLong(id);
      }
    }

    /** Reads the body. */
    public static RenewLeaseResponse decode(ByteBuf in) throws MalformedFrameException {
      long timeout = Wire.readLong(in, "lease timeout", 1, Long.MAX_VALUE);
      int n = Wire.readCount(in, "lost files", MAX_LEASE_FILES, 8);
      List<Long> lost = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        lost.add(Wire.readLong(in, "file id"));
      }
      Wire.expectEnd(in, "RENEW_LEASE answer");
      return new RenewLeaseResponse(timeout, lost);
    }
  }

  /**
   * ABANDON_FILE: a writer that failed gives its file up: the name node deletes it if it is still
   * being written, freeing its blocks. Answered by an empty body.
   */
  public record AbandonFileRequest(long fileId) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(fileId);
    }

    /** Reads the body. */
    public static AbandonFileRequest decode(ByteBuf in) throws MalformedFrameException {
      long id = Wire.readLong(in, "file id");
      Wire.expectEnd(in, "ABANDON_FILE");
      return new AbandonFileRequest(id);
    }
  }

  /**
   * SET_ATTRIBUTES: changes an entry's owner (unless empty), group (unless empty) and mode (unless
   * {@link Permissions#DEFAULT}), in one step. Answered by the entry's new {@link NodeStatus}. Only
   * the super-user changes an owner; an entry's owner changes its mode, and its group to a group
   * the owner belongs to.
   */
  public record SetAttributesRequest(String path, String owner, String group, int permission)
      implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
      Wire.writeString(out, owner);
      Wire.writeString(out, group);
      out.writeShort(permission);
    }

    /** Reads the body. */
    public static SetAttributesRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      String owner = Wire.readString(in, "owner", Permissions.MAX_NAME_BYTES);
      String group = Wire.readString(in, "group", Permissions.MAX_NAME_BYTES);
      int permission = Permissions.read(in);
      Wire.expectEnd(in, "SET_ATTRIBUTES");
      return new SetAttributesRequest(path, owner, group, permission);
    }
  }

  /** LOOKUP: one path. Answered by a {@link NodeStatus}. */
  public record PathRequest(String path) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
    }

    /** Reads the body. */
    public static PathRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      Wire.expectEnd(in, "path request");
      return new PathRequest(path);
    }
  }

  /**
   * LIST: a page of a directory's entries in name order, starting after {@code startAfter} (empty
   * for the first page). Answered by a {@link ListResponse}.
   */
  public record ListRequest(String path, String startAfter, int limit) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
      Wire.writeString(out, startAfter);
      out.writeInt(limit);
    }

    /** Reads the body. */
    public static ListRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      String after = Wire.readString(in, "start after", Paths.MAX_NAME_BYTES);
      int limit = Wire.readInt(in, "limit", 1, MAX_LIST_ENTRIES);
      Wire.expectEnd(in, "LIST");
      return new ListRequest(path, after, limit);
    }
  }

  /** One directory entry. */
  public record DirEntry(String name, NodeStatus status) {}

  /** A page of directory entries; {@code more} when entries remain after the last one. */
  public record ListResponse(List<DirEntry> entries, boolean more) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(entries.size());
      for (DirEntry e : entries) {
        Wire.writeString(out, e.name());
        e.status().encode(out);
      }
      out.writeBoolean(more);
    }

    /** Reads the body. */
    public static ListResponse decode(ByteBuf in) throws MalformedFrameException {
      int n = Wire.readCount(in, "entry count", MAX_LIST_ENTRIES, 4 + NodeStatus.BYTES);
      List<DirEntry> entries = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        String name = Wire.readString(in, "name", Paths.MAX_NAME_BYTES);
        entries.add(new DirEntry(name, NodeStatus.decode(in)));
      }
      boolean more = Wire.readBoolean(in, "more");
      Wire.expectEnd(in, "LIST answer");
      return new ListResponse(entries, more);
    }
  }

  /** DELETE: remove a path; a non-empty directory needs {@code recursive}. */
  public record DeleteRequest(String path, boolean recursive) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
      out.writeBoolean(recursive);
    }

    /** Reads the body. */
    public static DeleteRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      boolean recursive = Wire.readBoolean(in, "recursive");
      Wire.expectEnd(in, "DELETE");
      return new DeleteRequest(path, recursive);
    }
  }

  /** RENAME: move {@code source} to {@code target}, which must not exist. */
  public record RenameRequest(String source, String target) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, source);
      Wire.writeString(out, target);
    }

    /** Reads the body. */
    public static RenameRequest decode(ByteBuf in) throws MalformedFrameException {
      String src = Wire.readString(in, "source", Paths.MAX_PATH_BYTES);
      String dst = Wire.readString(in, "target", Paths.MAX_PATH_BYTES);
      Wire.expectEnd(in, "RENAME");
      return new RenameRequest(src, dst);
    }
  }

  /**
   * ALLOCATE_BLOCK: the block at {@code index} of an open file, allocated if it is the next one.
   * Answered by a {@link BlockLocation}.
   */
  public record AllocateBlockRequest(long fileId, int index) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(fileId);
      out.writeInt(index);
    }

    /** Reads the body. */
    public static AllocateBlockRequest decode(ByteBuf in) throws MalformedFrameException {
      long id = Wire.readLong(in, "file id");
      int index = Wire.readInt(in, "block index", 0, Integer.MAX_VALUE);
      Wire.expectEnd(in, "ALLOCATE_BLOCK");
      return new AllocateBlockRequest(id, index);
    }
  }

  /**
   * ALLOCATE_BLOCKS: blocks {@code index} onward of an open file, at least one and at most {@code
   * count}, the first allocated if it is the next one and the others given ahead where the name
   * node has room to spare. Answered by a {@link BlocksResponse}.
   */
  public record AllocateBlocksRequest(long fileId, int index, int count) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(fileId);
      out.writeInt(index);
      out.writeInt(count);
    }

    /** Reads the body. */
    public static AllocateBlocksRequest decode(ByteBuf in) throws MalformedFrameException {
      long id = Wire.readLong(in, "file id");
      int index = Wire.readInt(in, "block index", 0, Integer.MAX_VALUE);
      int count = Wire.readInt(in, "block count", 1, MAX_BLOCKS_PER_CALL);
      Wire.expectEnd(in, "ALLOCATE_BLOCKS");
      return new AllocateBlocksRequest(id, index, count);
    }
  }

  /** GET_BLOCKS: up to {@code maxCount} locations from {@code startIndex} of a file. */
  public record GetBlocksRequest(long fileId, int startIndex, int maxCount) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(fileId);
      out.writeInt(startIndex);
      out.writeInt(maxCount);
    }

    /** Reads the body. */
    public static GetBlocksRequest decode(ByteBuf in) throws MalformedFrameException {
      long id = Wire.readLong(in, "file id");
      int start = Wire.readInt(in, "start index", 0, Integer.MAX_VALUE);
      int max = Wire.readInt(in, "max count", 1, MAX_BLOCKS_PER_CALL);
      Wire.expectEnd(in, "GET_BLOCKS");
      return new GetBlocksRequest(id, start, max);
    }
  }

  /** A list of block locations. */
  public record BlocksResponse(List<BlockLocation> blocks) implements Message {
    @Override
    public void encode(ByteBuf out) {
      encodeBlocks(out, blocks);
    }

    /** Reads the body. */
    public static BlocksResponse decode(ByteBuf in) throws MalformedFrameException {
      List<BlockLocation> blocks = decodeBlocks(in);
      Wire.expectEnd(in, "GET_BLOCKS answer");
      return new BlocksResponse(blocks);
    }
  }

  /**
   * OPEN: a path's status and, for a closed file, the locations of up to {@code maxBlocks} of its
   * first blocks, so a reader starts reading after one round trip rather than two.
   */
  public record OpenRequest(String path, int maxBlocks) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, path);
      out.writeInt(maxBlocks);
    }

    /** Reads the body. */
    public static OpenRequest decode(ByteBuf in) throws MalformedFrameException {
      String path = Wire.readString(in, "path", Paths.MAX_PATH_BYTES);
      int max = Wire.readInt(in, "max blocks", 0, MAX_BLOCKS_PER_CALL);
      Wire.expectEnd(in, "OPEN");
      return new OpenRequest(path, max);
    }
  }

  /**
   * The answer to OPEN: the entry's status, and its first block locations (none for a directory, a
   * multifile or a file still being written).
   */
  public record OpenResponse(NodeStatus status, List<BlockLocation> blocks) implements Message {
    @Override
    public void encode(ByteBuf out) {
      status.encode(out);
      encodeBlocks(out, blocks);
    }

    /** Reads the body. */
    public static OpenResponse decode(ByteBuf in) throws MalformedFrameException {
      NodeStatus status = NodeStatus.decode(in);
      List<BlockLocation> blocks = decodeBlocks(in);
      Wire.expectEnd(in, "OPEN answer");
      return new OpenResponse(status, blocks);
    }
  }

  private static void encodeBlocks(ByteBuf out, List<BlockLocation> blocks) {
    out.writeInt(blocks.size());
    for (BlockLocation b : blocks) {
      b.encode(out);
    }
  }

  private static List<BlockLocation> decodeBlocks(ByteBuf in) throws MalformedFrameException {
    int n = Wire.readCount(in, "block count", MAX_BLOCKS_PER_CALL, BlockLocation.MIN_BYTES);
    List<BlockLocation> blocks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      blocks.add(BlockLocation.decode(in));
    }
    return blocks;
  }

  /** CLOSE_FILE: publish a file's length; the file takes no more writes. */
  public record CloseFileRequest(long fileId, long length) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(fileId);
      out.writeLong(length);
    }

    /** Reads the body. */
    public static CloseFileRequest decode(ByteBuf in) throws MalformedFrameException {
      long id = Wire.readLong(in, "file id");
      long length = Wire.readLong(in, "length", 0, Long.MAX_VALUE);
      Wire.expectEnd(in, "CLOSE_FILE");
      return new CloseFileRequest(id, length);
    }
  }

  /** Capacity and use of one storage class. */
  public record ClassUsage(
      StorageClass storageClass,
      int blockSize,
      long totalBlocks,
      long freeBlocks,
      int liveNodes,
      int lostNodes) {
    /** Bytes registered by live data nodes. */
    public long capacityBytes() {
      return totalBlocks * blockSize;
    }

    /** Bytes free for allocation. */
    public long freeBytes() {
      return freeBlocks * blockSize;
    }

    /** Bytes allocated to files. */
    public long usedBytes() {
      return (totalBlocks - freeBlocks) * blockSize;
    }
  }

  /** DF answer: use per storage class. */
  public record DfResponse(List<ClassUsage> classes) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(classes.size());
      for (ClassUsage c : classes) {
        out.writeByte(c.storageClass().id());
        out.writeInt(c.blockSize());
        out.writeLong(c.totalBlocks());
        out.writeLong(c.freeBlocks());
        out.writeInt(c.liveNodes());
        out.writeInt(c.lostNodes());
      }
    }

    /** Reads the body. */
    public static DfResponse decode(ByteBuf in) throws MalformedFrameException {
      int n = Wire.readCount(in, "class count", MAX_CLASSES, 1 + 4 + 8 + 8 + 4 + 4);
      List<ClassUsage> classes = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
        int bs = Wire.readInt(in, "block size", 1, Integer.MAX_VALUE);
        long total = Wire.readLong(in, "total blocks", 0, Long.MAX_VALUE);
        long free = Wire.readLong(in, "free blocks", 0, total);
        int live = Wire.readInt(in, "live nodes", 0, Integer.MAX_VALUE);
        int lost = Wire.readInt(in, "lost nodes", 0, Integer.MAX_VALUE);
        classes.add(new ClassUsage(sc, bs, total, free, live, lost));
      }
      Wire.expectEnd(in, "DF answer");
      return new DfResponse(classes);
    }
  }

  /** Data nodes one DATANODES answer lists at most. */
  public static final int MAX_DATANODES = 1 << 16;

  /**
   * One data node as the name node sees it.
   *
   * @param state {@code live}; {@code lost} (no heartbeat within the timeout); {@code unreported}
   *     (known from the journal, not registered since the name node started); or {@code replaced}
   *     (a newer node took its address)
   * @param lastHeartbeatMillisAgo since its last heartbeat or registration
   * @param trimmingBlocks freed blocks whose deallocation is not yet confirmed
   * @param overwrittenBlocks blocks a block report found overwritten by allocations the name node
   *     lost
   */
  public record DatanodeInfo(
      int id,
      StorageClass storageClass,
      String tier,
      String endpoint,
      String state,
      long incarnation,
      int blockSize,
      long capacityBytes,
      long usedBytes,
      long freeBytes,
      long lastHeartbeatMillisAgo,
      int trimmingBlocks,
      int overwrittenBlocks) {
    static final int MIN_BYTES = 4 + 1 + 4 + 4 + 4 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 4;
  }

  /** DATANODES answer: every data node the name node knows, lost ones too. */
  public record DatanodesResponse(List<DatanodeInfo> datanodes) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(datanodes.size());
      for (DatanodeInfo d : datanodes) {
        out.writeInt(d.id());
        out.writeByte(d.storageClass().id());
        Wire.writeString(out, d.tier());
        Wire.writeString(out, d.endpoint());
        Wire.writeString(out, d.state());
        out.writeLong(d.incarnation());
        out.writeInt(d.blockSize());
        out.writeLong(d.capacityBytes());
        out.writeLong(d.usedBytes());
        out.writeLong(d.freeBytes());
        out.writeLong(d.lastHeartbeatMillisAgo());
        out.writeInt(d.trimmingBlocks());
        out.writeInt(d.overwrittenBlocks());
      }
    }

    /** Reads the body. */
    public static DatanodesResponse decode(ByteBuf in) throws MalformedFrameException {
      int n = Wire.readCount(in, "data node count", MAX_DATANODES, DatanodeInfo.MIN_BYTES);
      List<DatanodeInfo> nodes = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int id = Wire.readInt(in, "data node id", 0, Integer.MAX_VALUE);
        StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
        String tier = Wire.readString(in, "tier", 64);
        String endpoint = Wire.readString(in, "endpoint", 1024);
        String state = Wire.readString(in, "state", 32);
        long incarnation = Wire.readLong(in, "incarnation");
        int blockSize = Wire.readInt(in, "block size", 1, Integer.MAX_VALUE);
        long capacity = Wire.readLong(in, "capacity", 0, Long.MAX_VALUE);
        long used = Wire.readLong(in, "used bytes", 0, capacity);
        long free = Wire.readLong(in, "free bytes", 0, capacity);
        long ago = Wire.readLong(in, "heartbeat age", 0, Long.MAX_VALUE);
        int trimming = Wire.readInt(in, "trimming blocks", 0, Integer.MAX_VALUE);
        int overwritten = Wire.readInt(in, "overwritten blocks", 0, Integer.MAX_VALUE);
        nodes.add(
            new DatanodeInfo(
                id,
                sc,
                tier,
                endpoint,
                state,
                incarnation,
                blockSize,
                capacity,
                used,
                free,
                ago,
                trimming,
                overwritten));
      }
      Wire.expectEnd(in, "DATANODES answer");
      return new DatanodesResponse(nodes);
    }
  }

  /**
   * REGISTER_DATANODE: a data node offers {@code capacityBytes} of storage class {@code
   * storageClass}, reachable by clients of tier {@code tier} at {@code endpoint}. With {@code
   * trimOnFree}, freed blocks go back to the data node to be deallocated (through heartbeats)
   * before they are reused. {@code incarnation} names the storage's contents: a node that registers
   * again with the incarnation it had (its heartbeats were late, not its data gone) gets its id and
   * its blocks back; 0 claims nothing. With {@code reviveOnly} the node offers only that: a name
   * node that does not know the incarnation refuses with {@code UNKNOWN_DATANODE} rather than take
   * the contents under a new id, and the node registers again under a new incarnation. Answered by
   * a {@link RegisterResponse}.
   */
  public record RegisterRequest(
      StorageClass storageClass,
      String tier,
      String endpoint,
      long capacityBytes,
      boolean trimOnFree,
      long incarnation,
      boolean reviveOnly)
      implements Message {
    /** A registration that claims no earlier contents. */
    public RegisterRequest(
        StorageClass storageClass,
        String tier,
        String endpoint,
        long capacityBytes,
        boolean trimOnFree) {
      this(storageClass, tier, endpoint, capacityBytes, trimOnFree, 0, false);
    }

    /** The same registration as a new node whose storage's contents are {@code incarnation}. */
    public RegisterRequest withIncarnation(long incarnation) {
      return new RegisterRequest(
          storageClass, tier, endpoint, capacityBytes, trimOnFree, incarnation, false);
    }

    /** The same registration, asking only to be the known node of {@code incarnation} again. */
    public RegisterRequest reviving(long incarnation) {
      return new RegisterRequest(
          storageClass, tier, endpoint, capacityBytes, trimOnFree, incarnation, true);
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeByte(storageClass.id());
      Wire.writeString(out, tier);
      Wire.writeString(out, endpoint);
      out.writeLong(capacityBytes);
      out.writeBoolean(trimOnFree);
      out.writeLong(incarnation);
      out.writeBoolean(reviveOnly);
    }

    /** Reads the body. */
    public static RegisterRequest decode(ByteBuf in) throws MalformedFrameException {
      StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
      String tier = Wire.readString(in, "tier", 64);
      String endpoint = Wire.readString(in, "endpoint", 1024);
      long capacity = Wire.readLong(in, "capacity", 0, Long.MAX_VALUE);
      boolean trim = Wire.readBoolean(in, "trim on free");
      long incarnation = Wire.readLong(in, "incarnation", Long.MIN_VALUE, Long.MAX_VALUE);
      boolean reviveOnly = Wire.readBoolean(in, "revive only");
      Wire.expectEnd(in, "REGISTER_DATANODE");
      return new RegisterRequest(sc, tier, endpoint, capacity, trim, incarnation, reviveOnly);
    }
  }

  /** The id given to a registered data node and the blocks carved from its capacity. */
  public record RegisterResponse(
      int datanodeId, int blockSize, long blockCount, List<BlockKey> blockKeys) implements Message {
    /** An answer without block keys. */
    public RegisterResponse(int datanodeId, int blockSize, long blockCount) {
      this(datanodeId, blockSize, blockCount, List.of());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeInt(datanodeId);
      out.writeInt(blockSize);
      out.writeLong(blockCount);
      BlockKey.encode(out, blockKeys);
    }

    /** Reads the body. */
    public static RegisterResponse decode(ByteBuf in) throws MalformedFrameException {
      int id = Wire.readInt(in, "data node id");
      int bs = Wire.readInt(in, "block size", 1, Integer.MAX_VALUE);
      long count = Wire.readLong(in, "block count", 0, Long.MAX_VALUE);
      List<BlockKey> keys = BlockKey.decode(in);
      Wire.expectEnd(in, "REGISTER_DATANODE answer");
      return new RegisterResponse(id, bs, count, keys);
    }
  }

  /** Most block slots in one heartbeat's trim list. */
  public static final int MAX_TRIM_SLOTS = 4096;

  /**
   * HEARTBEAT: a data node is alive; {@code trimmed} lists the block slots of the last answer's
   * trim list that it deallocated, before this heartbeat (a heartbeat whose answer was lost sends
   * the same list again). A slot of that list left out counts as not deallocated, and the name node
   * sends it again later. Answered by a {@link HeartbeatResponse}.
   */
  public record HeartbeatRequest(int datanodeId, List<Long> trimmed) implements Message {
    /** A heartbeat that reports no trims. */
    public HeartbeatRequest(int datanodeId) {
      this(datanodeId, List.of());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeInt(datanodeId);
      writeSlots(out, trimmed);
    }

    /** Reads the body. */
    public static HeartbeatRequest decode(ByteBuf in) throws MalformedFrameException {
      int id = Wire.readInt(in, "data node id");
      List<Long> trimmed = readSlots(in, "trimmed");
      Wire.expectEnd(in, "HEARTBEAT");
      return new HeartbeatRequest(id, trimmed);
    }
  }

  /** Block slots (indexes in the data node's region) the data node must deallocate. */
  public record HeartbeatResponse(List<Long> toTrim, List<BlockKey> blockKeys) implements Message {
    /** An answer without block keys. */
    public HeartbeatResponse(List<Long> toTrim) {
      this(toTrim, List.of());
    }

    @Override
    public void encode(ByteBuf out) {
      writeSlots(out, toTrim);
      BlockKey.encode(out, blockKeys);
    }

    /** Reads the body. */
    public static HeartbeatResponse decode(ByteBuf in) throws MalformedFrameException {
      List<Long> slots = readSlots(in, "to trim");
      List<BlockKey> keys = BlockKey.decode(in);
      Wire.expectEnd(in, "HEARTBEAT answer");
      return new HeartbeatResponse(slots, keys);
    }
  }

  private static void writeSlots(ByteBuf out, List<Long> slots) {
    out.writeInt(slots.size());
    for (long s : slots) {
      out.writeLong(s);
    }
  }

  private static List<Long> readSlots(ByteBuf in, String field) throws MalformedFrameException {
    int n = Wire.readCount(in, field + " count", MAX_TRIM_SLOTS, 8);
    List<Long> slots = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      slots.add(Wire.readLong(in, field + " slot", 0, Long.MAX_VALUE));
    }
    return slots;
  }

  /** A block a data node holds: its slot's address and the generation last written there. */
  public record HeldBlock(long address, long generation) {}

  /**
   * BLOCK_REPORT: part of what data node {@code datanodeId}, serving contents {@code incarnation},
   * holds: for each slot written since those contents began, the generation its last writes named.
   * Sent after the node registers again with contents the name node knew (it restarted, or the node
   * was lost for a while), in parts of at most {@link #MAX_REPORTED} blocks. The name node marks
   * lost a block of its namespace whose slot holds a newer generation: an allocation it forgot (a
   * journal tail that was never forced) reused the slot.
   */
  public record BlockReportRequest(int datanodeId, long incarnation, List<HeldBlock> blocks)
      implements Message {
    /** Most blocks in one report frame: 16 bytes each, well inside the smallest frame limit. */
    public static final int MAX_REPORTED = 3000;

    @Override
    public void encode(ByteBuf out) {
      out.writeInt(datanodeId);
      out.writeLong(incarnation);
      out.writeInt(blocks.size());
      for (HeldBlock b : blocks) {
        out.writeLong(b.address());
        out.writeLong(b.generation());
      }
    }

    /** Reads the body. */
    public static BlockReportRequest decode(ByteBuf in) throws MalformedFrameException {
      int id = Wire.readInt(in, "data node id", 0, Integer.MAX_VALUE);
      long incarnation = Wire.readLong(in, "incarnation");
      int n = Wire.readCount(in, "block count", MAX_REPORTED, 16);
      List<HeldBlock> blocks = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        long address = Wire.readLong(in, "address", 0, Long.MAX_VALUE);
        long generation = Wire.readLong(in, "generation", 0, Long.MAX_VALUE);
        blocks.add(new HeldBlock(address, generation));
      }
      Wire.expectEnd(in, "BLOCK_REPORT");
      return new BlockReportRequest(id, incarnation, blocks);
    }
  }

  /**
   * BLOCK_WRITE: {@code data} goes to the data node's region at {@code address}, inside block
   * {@code blockId} of generation {@code generation}. The message owns one reference to {@code
   * data}, handed to the frame writer on send. {@code incarnation} is the one the block's location
   * names: a data node serving other contents (restarted at the same address, or registered anew
   * after a name node restart) refuses the write, and so does one whose block at that address
   * belongs to a newer generation (the file was deleted and the block given to another).
   */
  public record BlockWriteRequest(
      long incarnation, long blockId, long generation, long address, ByteBuf data, BlockToken token)
      implements Message {
    /** Bytes of the fields before the data. */
    public static final int FIELD_BYTES = 8 + 8 + 8 + 8 + 4 + BlockToken.BYTES;

    /** A write without a block token. */
    public BlockWriteRequest(
        long incarnation, long blockId, long generation, long address, ByteBuf data) {
      this(incarnation, blockId, generation, address, data, BlockToken.NONE);
    }

    /** A write of {@code data} at {@code offset} in {@code block}, with the block's token. */
    public static BlockWriteRequest of(BlockLocation block, int offset, ByteBuf data) {
      return new BlockWriteRequest(
          block.incarnation(),
          block.blockId(),
          block.generation(),
          block.address() + offset,
          data,
          block.token());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeLong(incarnation);
      out.writeLong(blockId);
      out.writeLong(generation);
      out.writeLong(address);
      out.writeInt(data.readableBytes());
      token.encode(out);
    }

    @Override
    public ByteBuf data() {
      return data;
    }

    /**
     * Reads the header; the returned data is a retained slice of {@code in} that the caller must
     * release.
     */
    public static BlockWriteRequest decode(ByteBuf in) throws MalformedFrameException {
      long incarnation = Wire.readLong(in, "incarnation");
      long blockId = Wire.readLong(in, "block id");
      long generation = Wire.readLong(in, "generation");
      long address = Wire.readLong(in, "address", 0, Long.MAX_VALUE);
      int length = Wire.readInt(in, "data length", 0, Integer.MAX_VALUE);
      BlockToken token = BlockToken.decode(in);
      if (length != in.readableBytes()) {
        throw new MalformedFrameException(
            "BLOCK_WRITE says " + length + " data bytes, frame holds " + in.readableBytes());
      }
      return new BlockWriteRequest(
          incarnation, blockId, generation, address, in.readRetainedSlice(length), token);
    }
  }

  /**
   * BLOCK_READ: {@code length} bytes from {@code address}, inside block {@code blockId} of
   * generation {@code generation}; the answer is the raw bytes. Refused, like {@link
   * BlockWriteRequest}, by a data node whose contents are not {@code incarnation} or whose block
   * there is of another generation.
   */
  public record BlockReadRequest(
      long incarnation, long blockId, long generation, long address, int length, BlockToken token)
      implements Message {
    /** A read without a block token. */
    public BlockReadRequest(
        long incarnation, long blockId, long generation, long address, int length) {
      this(incarnation, blockId, generation, address, length, BlockToken.NONE);
    }

    /** A read of {@code length} bytes at {@code offset} in {@code block}, with its token. */
    public static BlockReadRequest of(BlockLocation block, int offset, int length) {
      return new BlockReadRequest(
          block.incarnation(),
          block.blockId(),
          block.generation(),
          block.address() + offset,
          length,
          block.token());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeLong(incarnation);
      out.writeLong(blockId);
      out.writeLong(generation);
      out.writeLong(address);
      out.writeInt(length);
      token.encode(out);
    }

    /** Reads the body. */
    public static BlockReadRequest decode(ByteBuf in) throws MalformedFrameException {
      long incarnation = Wire.readLong(in, "incarnation");
      long blockId = Wire.readLong(in, "block id");
      long generation = Wire.readLong(in, "generation");
      long address = Wire.readLong(in, "address", 0, Long.MAX_VALUE);
      int length = Wire.readInt(in, "length", 0, Integer.MAX_VALUE);
      BlockToken token = BlockToken.decode(in);
      Wire.expectEnd(in, "BLOCK_READ");
      return new BlockReadRequest(incarnation, blockId, generation, address, length, token);
    }
  }

  /**
   * BLOCK_LENGTH: how many bytes from its start block {@code blockId} of generation {@code
   * generation}, at {@code address}, holds without a gap. The name node asks when it closes a file
   * whose writer's lease expired. Refused, like {@link BlockReadRequest}, by a data node whose
   * contents are not {@code incarnation}, or whose block there is of a newer generation.
   */
  public record BlockLengthRequest(
      long incarnation, long blockId, long generation, long address, BlockToken token)
      implements Message {
    /**
     * The length of {@code block}, shown with its token: on a cluster of password users, where the
     * name node shows a data node no certificate, the token is what says the name node asks.
     */
    public static BlockLengthRequest of(BlockLocation block) {
      return new BlockLengthRequest(
          block.incarnation(), block.blockId(), block.generation(), block.address(), block.token());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeLong(incarnation);
      out.writeLong(blockId);
      out.writeLong(generation);
      out.writeLong(address);
      token.encode(out);
    }

    /** Reads the body. */
    public static BlockLengthRequest decode(ByteBuf in) throws MalformedFrameException {
      long incarnation = Wire.readLong(in, "incarnation");
      long blockId = Wire.readLong(in, "block id");
      long generation = Wire.readLong(in, "generation");
      long address = Wire.readLong(in, "address", 0, Long.MAX_VALUE);
      BlockToken token = BlockToken.decode(in);
      Wire.expectEnd(in, "BLOCK_LENGTH");
      return new BlockLengthRequest(incarnation, blockId, generation, address, token);
    }
  }

  /**
   * BLOCK_GRANT: the RDMA address and key of block {@code blockId} of generation {@code
   * generation}, whose slot starts at {@code address}, on a DRAM data node that serves one-sided
   * RDMA. Checked as a read or write of the whole block would be ({@code forWrite}: a write, which
   * makes the generation the slot's when it is newer). The key stays valid until the slot moves to
   * another generation or the node's contents change; accesses with it fail after that.
   */
  public record BlockGrantRequest(
      long incarnation,
      long blockId,
      long generation,
      long address,
      boolean forWrite,
      BlockToken token)
      implements Message {
    /** A grant without a block token. */
    public BlockGrantRequest(
        long incarnation, long blockId, long generation, long address, boolean forWrite) {
      this(incarnation, blockId, generation, address, forWrite, BlockToken.NONE);
    }

    /** A grant for {@code block}, with its token. */
    public static BlockGrantRequest of(BlockLocation block, boolean forWrite) {
      return new BlockGrantRequest(
          block.incarnation(),
          block.blockId(),
          block.generation(),
          block.address(),
          forWrite,
          block.token());
    }

    @Override
    public void encode(ByteBuf out) {
      out.writeLong(incarnation);
      out.writeLong(blockId);
      out.writeLong(generation);
      out.writeLong(address);
      out.writeBoolean(forWrite);
      token.encode(out);
    }

    /** Reads the body. */
    public static BlockGrantRequest decode(ByteBuf in) throws MalformedFrameException {
      long incarnation = Wire.readLong(in, "incarnation");
      long blockId = Wire.readLong(in, "block id");
      long generation = Wire.readLong(in, "generation");
      long address = Wire.readLong(in, "address", 0, Long.MAX_VALUE);
      boolean forWrite = Wire.readBoolean(in, "for write");
      BlockToken token = BlockToken.decode(in);
      Wire.expectEnd(in, "BLOCK_GRANT");
      return new BlockGrantRequest(incarnation, blockId, generation, address, forWrite, token);
    }
  }

  /**
   * The answer to BLOCK_GRANT: the RDMA connection manager's port to connect to (on the data node's
   * host), and the block's first byte as a remote virtual address with its key.
   */
  public record BlockGrantResponse(int rdmaPort, long remoteAddress, int rkey) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(rdmaPort);
      out.writeLong(remoteAddress);
      out.writeInt(rkey);
    }

    /** Reads the body. */
    public static BlockGrantResponse decode(ByteBuf in) throws MalformedFrameException {
      int port = Wire.readInt(in, "RDMA port", 1, 65535);
      long remoteAddress = Wire.readLong(in, "remote address");
      int rkey = Wire.readInt(in, "key");
      Wire.expectEnd(in, "BLOCK_GRANT response");
      return new BlockGrantResponse(port, remoteAddress, rkey);
    }
  }

  /** The answer to BLOCK_LENGTH: bytes held from the block's start. */
  public record BlockLengthResponse(long length) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(length);
    }

    /** Reads the body. */
    public static BlockLengthResponse decode(ByteBuf in) throws MalformedFrameException {
      long length = Wire.readLong(in, "length", 0, Long.MAX_VALUE);
      Wire.expectEnd(in, "BLOCK_LENGTH response");
      return new BlockLengthResponse(length);
    }
  }

  /** A body that is only bytes, sent without a copy; the frame writer releases it. */
  public record DataResponse(ByteBuf data) implements Message {
    @Override
    public void encode(ByteBuf out) {}

    @Override
    public ByteBuf data() {
      return data;
    }
  }

  /** The body of an error frame: a stable code and a message for a person. */
  public record ErrorReply(ErrorCode code, String message) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(code.code());
      Wire.writeString(out, message);
    }

    /** Reads the body. */
    public static ErrorReply decode(ByteBuf in) throws MalformedFrameException {
      int code = Wire.readInt(in, "error code");
      String message = Wire.readString(in, "error message", Wire.MAX_STRING_BYTES);
      return new ErrorReply(ErrorCode.fromCode(code), ErrorCode.messageFor(code, message));
    }

    /** The exception this reply stands for. */
    public EmberException toException() {
      return new EmberException(code, message);
    }
  }

  /**
   * GET_DELEGATION_TOKEN: a token for the caller, renewable by {@code renewer} (empty: the caller).
   */
  public record DelegationTokenRequest(String renewer) implements Message {
    @Override
    public void encode(ByteBuf out) {
      Wire.writeString(out, renewer);
    }

    /** Reads the body. */
    public static DelegationTokenRequest decode(ByteBuf in) throws MalformedFrameException {
      String renewer = Wire.readString(in, "renewer", Permissions.MAX_NAME_BYTES);
      Wire.expectEnd(in, "GET_DELEGATION_TOKEN request");
      return new DelegationTokenRequest(renewer);
    }
  }

  /**
   * A delegation token's bytes ({@link DelegationToken#encode}): RENEW_DELEGATION_TOKEN,
   * CANCEL_DELEGATION_TOKEN and AUTHENTICATE carry one, and GET_DELEGATION_TOKEN answers with one.
   */
  @SuppressWarnings("ArrayRecordComponent") // handed straight to DelegationToken.decode
  public record TokenMessage(byte[] token) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeInt(token.length);
      out.writeBytes(token);
    }

    /** Reads the body. */
    public static TokenMessage decode(ByteBuf in) throws MalformedFrameException {
      int n = Wire.readInt(in, "token length", 0, DelegationToken.MAX_BYTES);
      if (n > in.readableBytes()) {
        throw new MalformedFrameException(
            "a delegation token of " + n + " bytes, " + in.readableBytes() + " left in the frame");
      }
      byte[] token = new byte[n];
      in.readBytes(token);
      Wire.expectEnd(in, "delegation token");
      return new TokenMessage(token);
    }
  }

  /** RENEW_DELEGATION_TOKEN's answer: when the token now expires, milliseconds since the epoch. */
  public record TokenExpiryResponse(long expiresMillis) implements Message {
    @Override
    public void encode(ByteBuf out) {
      out.writeLong(expiresMillis);
    }

    /** Reads the body. */
    public static TokenExpiryResponse decode(ByteBuf in) throws MalformedFrameException {
      long expires = Wire.readLong(in, "expiry");
      Wire.expectEnd(in, "RENEW_DELEGATION_TOKEN answer");
      return new TokenExpiryResponse(expires);
    }
  }
}
