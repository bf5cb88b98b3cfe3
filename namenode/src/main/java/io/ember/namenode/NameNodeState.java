package io.ember.namenode;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.Messages.ListResponse;
import io.ember.protocol.Messages.OpenResponse;
import io.ember.protocol.Messages.RegisterResponse;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.Paths;
import io.ember.protocol.Permissions;
import io.ember.protocol.StorageClass;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * All the name node's metadata: the namespace tree, files' blocks, data nodes and their free
 * blocks. One read-write lock guards it, so every operation (rename included) is atomic.
 */
final class NameNodeState {
  private static final Logger LOG = LoggerFactory.getLogger(NameNodeState.class);

  private final int blockSize;
  private final List<StorageClass> spillOrder;
  private final long datanodeTimeoutNanos;

  /** See {@link NameNodeKeys#DEALLOCATION_RETRY}. */
  private long deallocationRetryNanos = Datanode.TRIM_RETRY_NANOS;

  private final LongSupplier clock;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private Inode.Dir root;
  private final Map<Long, Inode.File> files = new HashMap<>();
  private final RecentEvents events = new RecentEvents(100);
  private final Map<Integer, Datanode> datanodes = new LinkedHashMap<>();

  /** Live data nodes per class, in round-robin order for allocation. */
  private final Map<StorageClass, List<Datanode>> liveByClass =
      new TreeMap<>((a, b) -> Integer.compare(a.id(), b.id()));

  private final Map<StorageClass, Integer> nextNode = new HashMap<>();

  /**
   * Starts from the clock, so a restarted name node (which starts with an empty namespace) never
   * hands out an id an earlier incarnation did: clients cache block locations by file id.
   */
  private long nextInodeId = System.currentTimeMillis() << 20;

  private long nextBlockId = 1;

  /** Generation stamps only grow, so a slot's newest allocation has the largest. */
  private long nextGeneration = 1;

  /** How far past the numbers it restored a restarted name node starts numbering, at least. */
  static final long LOST_TAIL_MARGIN = 1L << 20;

  private int nextDatanodeId = 1;

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  static final int EDIT_CREATE = 1;
  static final int EDIT_DELETE = 2;
  static final int EDIT_RENAME = 3;
  static final int EDIT_ALLOCATE = 4;
  static final int EDIT_CLOSE = 5;
  static final int EDIT_REGISTER = 6;
  static final int EDIT_ABANDON = 7;
  static final int EDIT_RECOVER = 8;
  static final int EDIT_LENGTH = 9;
  static final int EDIT_SET_ATTRIBUTES = 10;
  static final int EDIT_TOKEN_KEY = 11;
  static final int EDIT_TOKEN_SET = 12;
  static final int EDIT_TOKEN_CANCEL = 13;

  /** Marks a checkpoint with owners, groups and modes; earlier ones start with the block size. */
  private static final int CHECKPOINT_WITH_PERMISSIONS = -2;

  /**
   * Marks a checkpoint with owners, groups and modes, and delegation tokens after the namespace.
   */
  private static final int CHECKPOINT_WITH_TOKENS = -3;

  /** Delegation tokens and their keys; guarded by the lock, journaled as they change. */
  private final DelegationTokens delegationTokens = new DelegationTokens();

  private static final long TOKEN_PURGE_MILLIS = 60_000;
  private long lastTokenPurgeMillis;

  /** Who owns what the name node makes, and who a caller is; see {@link #useIdentities}. */
  private Identities identities;

  /** A writer's lease: when it last renewed, and the files it has open. */
  private static final class Lease {
    long renewedNanos;
    final java.util.Set<Long> files = new java.util.LinkedHashSet<>();

    Lease(long now) {
      renewedNanos = now;
    }
  }

  /** Leases by holder. Guarded by the lock. */
  private final Map<String, Lease> leases = new HashMap<>();

  private long leaseTimeoutNanos = Duration.ofSeconds(60).toNanos();

  /** Where changes are recorded before they are acknowledged; null keeps them in memory only. */
  private Journal journal;

  /** True while the journal is replayed: changes are not recorded again. */
  private boolean replaying;

  /** The journal record of the change this thread made last; see {@link #takeLogged}. */
  private static final ThreadLocal<CompletableFuture<Void>> LOGGED = new ThreadLocal<>();

  NameNodeState(
      int blockSize,
      List<StorageClass> spillOrder,
      Duration datanodeTimeout,
      LongSupplier nanoClock) {
    this.blockSize = blockSize;
    this.spillOrder = List.copyOf(spillOrder);
    this.datanodeTimeoutNanos = datanodeTimeout.toNanos();
    this.clock = nanoClock;
    this.root =
        new Inode.Dir(nextInodeId++, "", StorageClass.DRAM, System.currentTimeMillis(), false);
    try {
      useIdentities(
          Identities.of(List.of(System.getProperty("user.name", "ember")), "supergroup", ""),
          Permissions.STICKY | 0777);
    } catch (EmberException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Sets who callers are, and gives the root directory of a namespace not yet restored the internal
   * caller as owner, the super-user group and {@code rootPermission}.
   */
  void useIdentities(Identities ids, int rootPermission) {
    lock.writeLock().lock();
    try {
      this.identities = ids;
      root.owner = ids.internal().name();
      root.group = ids.superGroup();
      root.permission = rootPermission;
    } finally {
      unlockChanges();
    }
  }

  /** The caller of a cluster without authentication: every check lets it through. */
  Caller internal() {
    return identities.internal();
  }

  /** The caller an authenticated identity is. */
  Caller caller(String identity) {
    return identities.caller(identity);
  }

  int blockSize() {
    return blockSize;
  }

  // ---- namespace -------------------------------------------------------------------------

  NodeStatus create(String path, NodeType type, StorageClass sc, boolean createParents)
      throws EmberException {
    return create(path, type, sc, createParents, "");
  }

  /**
   * Creates an entry; a file created with a {@code leaseHolder} is that writer's until it closes
   * it, and is recovered if the holder stops renewing its lease.
   */
  NodeStatus create(
      String path, NodeType type, StorageClass sc, boolean createParents, String leaseHolder)
      throws EmberException {
    return create(path, type, sc, createParents, leaseHolder, false).status();
  }

  /**
   * Creates an entry as {@link #create(String, NodeType, StorageClass, boolean, String)} does, and
   * with {@code firstBlock} gives a new file its first block too (none when no class has room: the
   * writer asks again when it writes).
   */
  io.ember.protocol.Messages.CreateResponse create(
      String path,
      NodeType type,
      StorageClass sc,
      boolean createParents,
      String leaseHolder,
      boolean firstBlock)
      throws EmberException {
    return create(path, type, sc, createParents, leaseHolder, firstBlock, false);
  }

  /**
   * Creates an entry as {@link #create(String, NodeType, StorageClass, boolean, String, boolean)}
   * does; with {@code overwrite}, a file already at the path is deleted first, in the same step (a
   * directory there is still refused). A writer's create then costs one round trip, not a lookup, a
   * delete and a create.
   */
  io.ember.protocol.Messages.CreateResponse create(
      String path,
      NodeType type,
      StorageClass sc,
      boolean createParents,
      String leaseHolder,
      boolean firstBlock,
      boolean overwrite)
      throws EmberException {
    return create(
        internal(),
        path,
        type,
        sc,
        createParents,
        leaseHolder,
        firstBlock,
        overwrite,
        Permissions.DEFAULT);
  }

  /**
   * Creates an entry for {@code caller}, who owns it, with mode {@code permission} ({@link
   * Permissions#DEFAULT}: rw-r--r-- for a file, rwxr-xr-x otherwise), as {@link #create(String,
   * NodeType, StorageClass, boolean, String, boolean, boolean)} does. The caller needs to pass
   * through every directory on the way, and to write the one that gets the entry; an overwrite
   * needs to write the old file and to be allowed to delete it.
   */
  io.ember.protocol.Messages.CreateResponse create(
      Caller caller,
      String path,
      NodeType type,
      StorageClass sc,
      boolean createParents,
      String leaseHolder,
      boolean firstBlock,
      boolean overwrite,
      int permission)
      throws EmberException {
    List<String> parts = Paths.components(path);
    String canonical = Paths.join(parts);
    if (parts.isEmpty()) {
      throw new EmberException(ErrorCode.ALREADY_EXISTS, "/ exists");
    }
    if (overwrite && type != NodeType.FILE) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT, "cannot create " + canonical + ": only a file overwrites");
    }
    lock.writeLock().lock();
    try {
      checkJournal();
      long now = System.currentTimeMillis();
      Inode existing = overwrite ? find(parts) : null;
      if (existing instanceof Inode.File old) {
        String what = "overwrite " + canonical;
        checkTraverse(caller, old, what);
        checkAccess(caller, old, Permissions.WRITE, what);
        checkUnlink(caller, old, what);
        // Journaled before the create, so a replay makes the same two steps. The create that
        // follows cannot fail: the old file's parent exists and is a directory, and its name is
        // free now.
        unlinkAndLog(old, canonical, now);
      }
      long firstId = nextInodeId;
      // Every check comes before the first inode is made, so a create that fails changes nothing.
      int mode = modeFor(type, permission);
      Inode made = createLocked(caller, parts, type, sc, createParents, now, mode);
      if (made instanceof Inode.File f && !leaseHolder.isEmpty()) {
        f.leaseHolder = leaseHolder;
        leases.computeIfAbsent(leaseHolder, h -> new Lease(clock.getAsLong())).files.add(f.id);
      }
      log(
          EDIT_CREATE,
          out -> {
            writeString(out, canonical);
            out.writeByte(type.code());
            out.writeInt(sc.id());
            out.writeBoolean(createParents);
            out.writeLong(firstId);
            out.writeLong(now);
            writeString(out, leaseHolder);
            writeString(out, caller.name());
            out.writeShort(mode);
          });
      BlockLocation first = null;
      if (firstBlock && made instanceof Inode.File f) {
        try {
          first = allocateLocked(f, 0, null);
        } catch (EmberException e) {
          if (e.code() != ErrorCode.NO_CAPACITY) {
            throw e;
          }
        }
      }
      return new io.ember.protocol.Messages.CreateResponse(status(made), first);
    } finally {
      unlockChanges();
    }
  }

  private static int modeFor(NodeType type, int permission) {
    if (permission != Permissions.DEFAULT) {
      return permission;
    }
    return type == NodeType.FILE ? Permissions.FILE_DEFAULT : Permissions.DIRECTORY_DEFAULT;
  }

  /**
   * The mode of a parent a create makes: a directory's own mode, which its creator can always enter
   * and write (as HDFS gives it); {@link Permissions#DIRECTORY_DEFAULT} for others.
   */
  private static int parentMode(NodeType type, int mode) {
    return type == NodeType.FILE
        ? Permissions.DIRECTORY_DEFAULT
        : (mode & 0777) | ((Permissions.WRITE | Permissions.EXECUTE) << 6);
  }

  /**
   * Makes an entry (and missing parents, with {@code createParents}) owned by {@code caller}, in
   * its parent's group; parents it makes get {@link #parentMode}.
   */
  private Inode createLocked(
      Caller caller,
      List<String> parts,
      NodeType type,
      StorageClass sc,
      boolean createParents,
      long now,
      int mode)
      throws EmberException {
    String canonical = Paths.join(parts);
    String what = "create " + canonical;
    Inode.Dir dir = root;
    for (int i = 0; i < parts.size() - 1; i++) {
      checkAccess(caller, dir, Permissions.EXECUTE, what);
      Inode child = dir.children.get(parts.get(i));
      String at = Paths.join(parts.subList(0, i + 1));
      if (child == null) {
        if (!createParents) {
          throw new EmberException(
              ErrorCode.PARENT_NOT_FOUND,
              "cannot create " + canonical + ": parent " + at + " does not exist");
        }
        if (dir.multifile) {
          throw new EmberException(
              ErrorCode.INVALID_ARGUMENT,
              "cannot create "
                  + at
                  + ": multifile "
                  + Paths.join(parts.subList(0, i))
                  + " holds only files");
        }
        checkAccess(caller, dir, Permissions.WRITE, what);
        Inode.Dir made = new Inode.Dir(nextInodeId++, parts.get(i), sc, now, false);
        own(made, caller, dir, parentMode(type, mode));
        attach(dir, made, now);
        child = made;
      }
      if (!(child instanceof Inode.Dir d)) {
        throw new EmberException(
            ErrorCode.NOT_A_DIRECTORY,
            "cannot create " + canonical + ": " + at + " is a file, not a directory");
      }
      dir = d;
    }
    checkAccess(caller, dir, Permissions.EXECUTE, what);
    String name = parts.get(parts.size() - 1);
    Inode there = dir.children.get(name);
    if (there != null) {
      throw new EmberException(
          ErrorCode.ALREADY_EXISTS,
          there instanceof Inode.Dir && type == NodeType.FILE
              ? "cannot create " + canonical + ": it is a directory"
              : canonical + " exists");
    }
    if (dir.multifile && type != NodeType.FILE) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot create " + canonical + ": a multifile holds only files");
    }
    checkAccess(caller, dir, Permissions.WRITE, what);
    Inode made =
        switch (type) {
          case FILE -> new Inode.File(nextInodeId++, name, sc, now);
          case DIRECTORY -> new Inode.Dir(nextInodeId++, name, sc, now, false);
          case MULTIFILE -> new Inode.Dir(nextInodeId++, name, sc, now, true);
        };
    own(made, caller, dir, mode);
    attach(dir, made, now);
    if (made instanceof Inode.File f) {
      files.put(f.id, f);
    }
    return made;
  }

  NodeStatus lookup(String path) throws EmberException {
    return lookup(internal(), path);
  }

  /** A path's status; the caller needs to pass through the directories on the way. */
  NodeStatus lookup(Caller caller, String path) throws EmberException {
    List<String> parts = Paths.components(path);
    lock.readLock().lock();
    try {
      return status(resolve(caller, parts));
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * A path's status and, for a closed file, its first {@code maxBlocks} block locations, read under
   * one lock so they agree. A file still being written has none: its blocks may yet be given back
   * at its close, and readers see none of its bytes until then.
   */
  OpenResponse open(String path, int maxBlocks) throws EmberException {
    return open(internal(), path, maxBlocks);
  }

  /** As {@link #open(String, int)}; a file's blocks need the caller to be allowed to read it. */
  OpenResponse open(Caller caller, String path, int maxBlocks) throws EmberException {
    List<String> parts = Paths.components(path);
    lock.readLock().lock();
    try {
      Inode node = resolve(caller, parts);
      if (node instanceof Inode.File) {
        checkAccess(caller, node, Permissions.READ, "open " + Paths.join(parts));
      }
      return new OpenResponse(
          status(node),
          node instanceof Inode.File file && !file.open
              ? locations(file, 0, maxBlocks)
              : List.of());
    } finally {
      lock.readLock().unlock();
    }
  }

  ListResponse list(String path, String startAfter, int limit) throws EmberException {
    return list(internal(), path, startAfter, limit);
  }

  /** A page of a directory's entries; the caller needs to read and pass through the directory. */
  ListResponse list(Caller caller, String path, String startAfter, int limit)
      throws EmberException {
    List<String> parts = Paths.components(path);
    lock.readLock().lock();
    try {
      Inode node = resolve(caller, parts);
      if (!(node instanceof Inode.Dir dir)) {
        throw new EmberException(
            ErrorCode.NOT_A_DIRECTORY, "cannot list " + Paths.join(parts) + ": it is a file");
      }
      checkAccess(caller, dir, Permissions.READ | Permissions.EXECUTE, "list " + Paths.join(parts));
      Map<String, Inode> tail =
          startAfter.isEmpty() ? dir.children : dir.children.tailMap(startAfter, false);
      List<DirEntry> entries = new ArrayList<>(Math.min(limit, tail.size()));
      boolean more = false;
      for (Inode child : tail.values()) {
        if (entries.size() == limit) {
          more = true;
          break;
        }
        entries.add(new DirEntry(child.name, status(child)));
      }
      return new ListResponse(entries, more);
    } finally {
      lock.readLock().unlock();
    }
  }

  void delete(String path, boolean recursive) throws EmberException {
    delete(internal(), path, recursive);
  }

  /**
   * Deletes an entry; the caller needs to write its directory (and, when that is sticky, to own the
   * entry or the directory), and to read, write and pass through every directory a recursive delete
   * empties, as HDFS asks.
   */
  void delete(Caller caller, String path, boolean recursive) throws EmberException {
    List<String> parts = Paths.components(path);
    if (parts.isEmpty()) {
      throw new EmberException(ErrorCode.INVALID_ARGUMENT, "the root directory cannot be deleted");
    }
    lock.writeLock().lock();
    try {
      checkJournal();
      Inode node = resolve(caller, parts);
      if (node instanceof Inode.Dir dir && !dir.children.isEmpty() && !recursive) {
        throw new EmberException(
            ErrorCode.DIRECTORY_NOT_EMPTY,
            "cannot delete " + Paths.join(parts) + ": directory not empty (delete recursively)");
      }
      String what = "delete " + Paths.join(parts);
      checkUnlink(caller, node, what);
      if (node instanceof Inode.Dir dir && !dir.children.isEmpty()) {
        checkSubtree(caller, dir, what);
      }
      unlinkAndLog(node, Paths.join(parts), System.currentTimeMillis());
    } finally {
      unlockChanges();
    }
  }

  /** Deletes {@code node}, found at {@code canonical}, and journals the delete. */
  private void unlinkAndLog(Inode node, String canonical, long now) {
    unlink(node, now);
    log(
        EDIT_DELETE,
        out -> {
          writeString(out, canonical);
          out.writeLong(now);
        });
  }

  private void unlink(Inode node, long now) {
    node.parent.children.remove(node.name);
    node.parent.modificationTime = now;
    release(node);
  }

  void rename(String source, String target) throws EmberException {
    rename(internal(), source, target);
  }

  /**
   * Renames; the caller needs to write both directories, and to own the entry or its directory when
   * that is sticky.
   */
  void rename(Caller caller, String source, String target) throws EmberException {
    List<String> src = Paths.components(source);
    List<String> dst = Paths.components(target);
    String srcPath = Paths.join(src);
    String dstPath = Paths.join(dst);
    if (src.isEmpty()) {
      throw new EmberException(ErrorCode.INVALID_ARGUMENT, "the root directory cannot be renamed");
    }
    if (dst.isEmpty()) {
      throw new EmberException(
          ErrorCode.ALREADY_EXISTS, "cannot rename " + srcPath + " to /: it exists");
    }
    lock.writeLock().lock();
    try {
      checkJournal();
      long now = System.currentTimeMillis();
      if (renameLocked(caller, src, dst, now)) {
        log(
            EDIT_RENAME,
            out -> {
              writeString(out, srcPath);
              writeString(out, dstPath);
              out.writeLong(now);
            });
      }
    } finally {
      unlockChanges();
    }
  }

  /**
   * Changes an entry's owner (unless {@code owner} is empty), group (unless empty) and mode (unless
   * {@link Permissions#DEFAULT}). Only the super-user gives an entry to another owner; the owner
   * changes the mode, and the group to one the owner is in.
   *
   * @return the entry's new status
   */
  NodeStatus setAttributes(Caller caller, String path, String owner, String group, int permission)
      throws EmberException {
    List<String> parts = Paths.components(path);
    String canonical = Paths.join(parts);
    lock.writeLock().lock();
    try {
      checkJournal();
      Inode node = resolve(caller, parts);
      if (owner.isEmpty() && group.isEmpty() && permission == Permissions.DEFAULT) {
        return status(node);
      }
      if (!caller.superuser()) {
        if (!owner.isEmpty() && !owner.equals(node.owner)) {
          throw denied(
              "give " + canonical + " to " + owner, "only the super-user changes an owner");
        }
        if (!caller.name().equals(node.owner)) {
          throw denied(
              "change " + canonical,
              caller
                  + " does not own it ("
                  + describe(node)
                  + "); its owner or the super-user"
                  + " may");
        }
        if (!group.isEmpty() && !group.equals(node.group) && !caller.groups().contains(group)) {
          throw denied(
              "give " + canonical + " to group " + group, caller + " is not in group " + group);
        }
      }
      if (!owner.isEmpty()) {
        node.owner = owner;
      }
      if (!group.isEmpty()) {
        node.group = group;
      }
      if (permission != Permissions.DEFAULT) {
        node.permission = permission;
      }
      log(
          EDIT_SET_ATTRIBUTES,
          out -> {
            writeString(out, canonical);
            writeString(out, node.owner);
            writeString(out, node.group);
            out.writeShort(node.permission);
          });
      return status(node);
    } finally {
      unlockChanges();
    }
  }

  /** Renames; false when source and target are the same path (nothing changes). */
  private boolean renameLocked(Caller caller, List<String> src, List<String> dst, long now)
      throws EmberException {
    String srcPath = Paths.join(src);
    String dstPath = Paths.join(dst);
    Inode node = resolve(caller, src);
    if (srcPath.equals(dstPath)) {
      return false;
    }
    if (dst.size() > src.size() && dst.subList(0, src.size()).equals(src)) {
      throw new EmberException(
          ErrorCode.RENAME_INTO_ITSELF,
          "cannot rename " + srcPath + " to " + dstPath + ": a directory cannot move into itself");
    }
    List<String> dstParentParts = dst.subList(0, dst.size() - 1);
    Inode parent = resolveForParent(dstParentParts, "rename " + srcPath + " to " + dstPath);
    Inode.Dir newParent = (Inode.Dir) parent;
    String what = "rename " + srcPath + " to " + dstPath;
    checkUnlink(caller, node, what);
    checkTraverse(caller, newParent, what);
    checkAccess(caller, newParent, Permissions.WRITE | Permissions.EXECUTE, what);
    String newName = dst.get(dst.size() - 1);
    if (newParent.children.containsKey(newName)) {
      throw new EmberException(
          ErrorCode.ALREADY_EXISTS, "cannot rename " + srcPath + " to " + dstPath + ": it exists");
    }
    if (newParent.multifile && node.type() != NodeType.FILE) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot rename " + srcPath + " to " + dstPath + ": a multifile holds only files");
    }
    node.parent.children.remove(node.name);
    node.parent.modificationTime = now;
    node.name = newName;
    attach(newParent, node, now);
    return true;
  }

  // ---- blocks ----------------------------------------------------------------------------

  BlockLocation allocateBlock(long fileId, int index) throws EmberException {
    return allocateBlock(internal(), fileId, index);
  }

  /** Gives a file its block {@code index}; only the file's owner (its writer) may. */
  BlockLocation allocateBlock(Caller caller, long fileId, int index) throws EmberException {
    return allocateBlocks(caller, fileId, index, 1).get(0);
  }

  List<BlockLocation> allocateBlocks(long fileId, int index, int count) throws EmberException {
    return allocateBlocks(internal(), fileId, index, count);
  }

  /**
   * Blocks {@code index} onward of a file, at least one and at most {@code count}: the ones it has,
   * then new ones. Block {@code index} itself is allocated if it is the next one, or refused as
   * {@link #allocateBlock} refuses it. The blocks after it, up to {@link #MAX_AHEAD_BYTES}, are
   * given ahead only from the file's own storage class (a run never takes another class's blocks
   * ahead of need) and only while that class has more than {@link #AHEAD_RESERVE_DIVISOR 1/8} of
   * its blocks free, so near a full tier each block is given as it is needed; what other writers
   * hold ahead can still fill a tier sooner. Blocks the writer does not fill go back at its close
   * or its lease's recovery. Only the file's owner (its writer) may ask.
   */
  List<BlockLocation> allocateBlocks(Caller caller, long fileId, int index, int count)
      throws EmberException {
    return allocate(caller, fileId, index, count, false);
  }

  List<BlockLocation> allocateAhead(long fileId, int index, int count) throws EmberException {
    return allocateAhead(internal(), fileId, index, count);
  }

  /**
   * Blocks {@code index} onward of a file that its writer asks for before any write needs them: as
   * {@link #allocateBlocks}, except that every block is given ahead, block {@code index} too. So
   * they all come from the file's own storage class and only while it has more than its reserve
   * free; the answer may be empty, and the writer then asks for the block when a write needs it.
   * Blocks the file already has are answered as they are.
   */
  List<BlockLocation> allocateAhead(Caller caller, long fileId, int index, int count)
      throws EmberException {
    return allocate(caller, fileId, index, count, true);
  }

  private List<BlockLocation> allocate(
      Caller caller, long fileId, int index, int count, boolean firstAhead) throws EmberException {
    lock.writeLock().lock();
    try {
      Inode.File file = file(fileId);
      checkWriter(caller, file, "write");
      if (index < file.blocks.size() && file.open) {
        return locations(file, index, count);
      }
      checkJournal();
      if (!file.open) {
        if (file.recovered) {
          throw leaseRecovered(file);
        }
        throw new EmberException(
            ErrorCode.FILE_CLOSED,
            pathOf(file) + " is closed: its length is published and it takes no more writes");
      }
      if (index > file.blocks.size()) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            "block "
                + index
                + " of "
                + pathOf(file)
                + " asked for, but the file has "
                + file.blocks.size()
                + " blocks: files grow one block at a time");
      }
      List<BlockLocation> out = new ArrayList<>();
      int next = index;
      if (!firstAhead) {
        out.add(allocateLocked(file, next++, null));
        if (!file.blocks.get(index).datanode().storageClass.equals(file.storageClass)) {
          // A run never takes another class's blocks ahead of need.
          return out;
        }
      }
      long most = Math.max(1, MAX_AHEAD_BYTES / blockSize);
      long wanted = Math.min(count - out.size(), most);
      long ahead = wanted > 0 ? Math.min(wanted, spareForAhead(file.storageClass)) : 0;
      for (int i = 0; i < ahead; i++) {
        BlockLocation given = allocateLocked(file, next++, file.storageClass);
        if (given == null) {
          break;
        }
        out.add(given);
      }
      return out;
    } finally {
      unlockChanges();
    }
  }

  /**
   * A storage class keeps this share of its blocks (1/n) for blocks asked as they are needed: below
   * it, none are given ahead.
   */
  static final int AHEAD_RESERVE_DIVISOR = 8;

  /**
   * The most one request is given ahead of the block it needs (clients ask for 16 MiB), so a writer
   * cannot hold a tier's space far ahead of its data.
   */
  static final long MAX_AHEAD_BYTES = 64L << 20;

  /** How many of a class's free blocks may be given ahead of need; call under the lock. */
  private long spareForAhead(StorageClass sc) {
    long now = clock.getAsLong();
    long free = 0;
    long total = 0;
    for (Datanode dn : liveByClass.getOrDefault(sc, List.of())) {
      free += dn.freeBlocks(now);
      total += dn.blockCount;
    }
    return Math.max(0, free - (total + AHEAD_RESERVE_DIVISOR - 1) / AHEAD_RESERVE_DIVISOR);
  }

  /**
   * Gives an open file its next block, {@code index}; call under the write lock. With {@code
   * onlyFrom}, the block comes from that class alone, and null is returned when it has none free;
   * without, the class order is followed and a refusal thrown when every class is full.
   */
  private BlockLocation allocateLocked(Inode.File file, int index, StorageClass onlyFrom)
      throws EmberException {
    long fileId = file.id;
    Block b;
    if (onlyFrom == null) {
      b = takeBlock(file.storageClass, pathOf(file), index);
    } else {
      b = takeFrom(onlyFrom);
      if (b == null) {
        return null;
      }
    }
    file.blocks.add(b);
    long now = System.currentTimeMillis();
    file.modificationTime = now;
    log(
        EDIT_ALLOCATE,
        out -> {
          out.writeLong(fileId);
          out.writeInt(index);
          out.writeLong(b.blockId());
          out.writeLong(b.generation());
          out.writeInt(b.datanode().id);
          out.writeLong(b.slot());
          out.writeLong(now);
        });
    return location(file, index);
  }

  List<BlockLocation> getBlocks(long fileId, int start, int maxCount) throws EmberException {
    return getBlocks(internal(), fileId, start, maxCount);
  }

  /** A file's block locations; the caller needs to be allowed to read the file. */
  List<BlockLocation> getBlocks(Caller caller, long fileId, int start, int maxCount)
      throws EmberException {
    lock.readLock().lock();
    try {
      Inode.File file = file(fileId);
      String what = "read " + pathOf(file);
      checkTraverse(caller, file, what);
      checkAccess(caller, file, Permissions.READ, what);
      return locations(file, start, maxCount);
    } finally {
      lock.readLock().unlock();
    }
  }

  private List<BlockLocation> locations(Inode.File file, int start, int maxCount) {
    int end = (int) Math.min(file.blocks.size(), (long) start + maxCount);
    List<BlockLocation> out = new ArrayList<>(Math.max(0, end - start));
    for (int i = start; i < end; i++) {
      out.add(location(file, i));
    }
    return out;
  }

  NodeStatus closeFile(long fileId, long length) throws EmberException {
    return closeFile(internal(), fileId, length);
  }

  /** Publishes a file's length; only the file's owner (its writer) may. */
  NodeStatus closeFile(Caller caller, long fileId, long length) throws EmberException {
    lock.writeLock().lock();
    try {
      Inode.File file = file(fileId);
      checkWriter(caller, file, "close");
      if (!file.open) {
        if (file.recovered && file.length != length) {
          throw leaseRecovered(file);
        }
        if (file.length == length) {
          // A retried close after a lost answer: answered once the first close is durable.
          LOGGED.set(journal == null ? DONE : journal.barrier());
          return status(file);
        }
        throw new EmberException(ErrorCode.FILE_CLOSED, pathOf(file) + " is already closed");
      }
      long capacity = (long) file.blocks.size() * blockSize;
      if (length > capacity) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            "length "
                + length
                + " of "
                + pathOf(file)
                + " does not match its "
                + file.blocks.size()
                + " blocks of "
                + blockSize
                + " bytes");
      }
      checkJournal();
      long now = System.currentTimeMillis();
      closeLocked(file, length, now);
      log(
          EDIT_CLOSE,
          out -> {
            out.writeLong(fileId);
            out.writeLong(length);
            out.writeLong(now);
          });
      return status(file);
    } finally {
      unlockChanges();
    }
  }

  private void closeLocked(Inode.File file, long length, long now) {
    dropLease(file);
    // Writers ask for a block before their first write; one that wrote less leaves blocks it
    // never filled, and they go back to their data nodes now.
    long used = (length + blockSize - 1) / blockSize;
    while (file.blocks.size() > used) {
      giveBack(file.blocks.remove(file.blocks.size() - 1));
    }
    file.length = length;
    file.open = false;
    file.modificationTime = now;
  }

  /** A free block of class {@code sc}, taken from its live nodes in turn, or null when none. */
  private Block takeFrom(StorageClass sc) {
    List<Datanode> nodes = liveByClass.getOrDefault(sc, List.of());
    int n = nodes.size();
    int startAt = nextNode.getOrDefault(sc, 0);
    for (int k = 0; k < n; k++) {
      Datanode dn = nodes.get((startAt + k) % n);
      long slot = dn.take(clock.getAsLong());
      if (slot >= 0) {
        nextNode.put(sc, (startAt + k + 1) % n);
        return new Block(nextBlockId++, nextGeneration++, dn, slot);
      }
    }
    return null;
  }

  private Block takeBlock(StorageClass preferred, String path, int index) throws EmberException {
    int from = spillOrder.indexOf(preferred);
    List<StorageClass> tried = new ArrayList<>();
    if (from < 0) {
      tried.add(preferred);
    } else {
      tried.addAll(spillOrder.subList(from, spillOrder.size()));
    }
    for (StorageClass sc : tried) {
      Block b = takeFrom(sc);
      if (b != null) {
        return b;
      }
    }
    StringBuilder names = new StringBuilder();
    long returning = 0;
    long failed = 0;
    long now = clock.getAsLong();
    for (int i = 0; i < tried.size(); i++) {
      names
          .append(i == 0 ? "" : i == tried.size() - 1 ? " or " : ", ")
          .append(tried.get(i).displayName());
      for (Datanode dn : liveByClass.getOrDefault(tried.get(i), List.of())) {
        returning += dn.returningBlocks(now);
        failed += dn.retryingCount();
      }
    }
    returning -= failed;
    // Blocks of deleted files on storage that is deallocated first come back only after the data
    // node has done it: say so, or a user who just deleted files sees a full tier and no reason.
    throw new EmberException(
        ErrorCode.NO_CAPACITY,
        "no "
            + names
            + " capacity left for "
            + formatBytes(blockSize)
            + " (block "
            + index
            + " of "
            + path
            + ")"
            + (returning == 0
                ? ""
                : "; "
                    + returning
                    + (returning == 1 ? " freed block is" : " freed blocks are")
                    + " still being deallocated and will be free within seconds")
            // Not "within seconds": these wait for the retry, and a target that keeps failing
            // keeps them out of use for as long, which its data node's log says.
            + (failed == 0
                ? ""
                : "; "
                    + failed
                    + (failed == 1
                        ? " freed block was not confirmed deallocated by its data node and is"
                        : " freed blocks were not confirmed deallocated by their data node and"
                            + " are")
                    + " sent again every "
                    + (deallocationRetryNanos + 999_999_999) / 1_000_000_000
                    + " s (a failure shows in the data node's log)"));
  }

  private BlockLocation location(Inode.File file, int index) {
    Block b = file.blocks.get(index);
    Datanode dn = b.datanode();
    return new BlockLocation(
        index,
        b.blockId(),
        b.generation(),
        dn.id,
        dn.incarnation,
        dn.storageClass,
        dn.tier,
        dn.endpoint,
        b.address(),
        dn.blockSize,
        dn.lost || dn.isOverwritten(b.slot()));
  }

  // ---- data nodes ------------------------------------------------------------------------

  RegisterResponse register(StorageClass sc, String tier, String endpoint, long capacityBytes)
      throws EmberException {
    return register(sc, tier, endpoint, capacityBytes, false);
  }

  RegisterResponse register(
      StorageClass sc, String tier, String endpoint, long capacityBytes, boolean trimOnFree)
      throws EmberException {
    return register(sc, tier, endpoint, capacityBytes, trimOnFree, 0, false);
  }

  RegisterResponse register(
      StorageClass sc,
      String tier,
      String endpoint,
      long capacityBytes,
      boolean trimOnFree,
      long incarnation)
      throws EmberException {
    return register(sc, tier, endpoint, capacityBytes, trimOnFree, incarnation, false);
  }

  /**
   * Registers a data node. One that registers again with the incarnation it had (it was marked lost
   * because its heartbeats were late, or the answer to its registration was lost) keeps its id, and
   * its blocks are available again; anything else is a new node, unless {@code reviveOnly}, which
   * is refused instead.
   *
   * @throws EmberException {@link ErrorCode#UNKNOWN_DATANODE} for {@code reviveOnly} when no node
   *     of that incarnation can come back at this endpoint
   */
  RegisterResponse register(
      StorageClass sc,
      String tier,
      String endpoint,
      long capacityBytes,
      boolean trimOnFree,
      long incarnation,
      boolean reviveOnly)
      throws EmberException {
    if (tier.isBlank() || endpoint.isBlank()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT, "a data node must name its tier and endpoint");
    }
    // They are shown on status pages and in terminals: no control character may ride along.
    if ((tier + endpoint).chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "a data node's tier and endpoint must not hold control characters: "
              + io.ember.protocol.Paths.escape(tier)
              + " "
              + io.ember.protocol.Paths.escape(endpoint));
    }
    long blocks = capacityBytes / blockSize;
    lock.writeLock().lock();
    try {
      checkJournal();
      if (incarnation != 0) {
        for (Datanode known : datanodes.values()) {
          // A superseded node's addresses may hold a newer node's files by now.
          if (known.incarnation == incarnation
              && known.endpoint.equals(endpoint)
              && known.storageClass.equals(sc)
              && known.blockCount == blocks
              && !known.superseded) {
            if (known.lost) {
              known.revive(clock.getAsLong());
              liveByClass.computeIfAbsent(sc, k -> new ArrayList<>()).add(known);
              warn(
                  "{} is back with the same contents; its blocks are available again",
                  known.describe());
            } else if (!known.reported) {
              // Known from the journal: its contents are what the namespace says they are.
              known.reported = true;
              known.lastHeartbeatNanos = clock.getAsLong();
              known.resendTrims();
              liveByClass.computeIfAbsent(sc, k -> new ArrayList<>()).add(known);
              LOG.info(
                  "{} reported its contents after the name node restarted; it takes new blocks"
                      + " again",
                  known.describe());
            } else {
              // Registered again while live (its link lost an answer): it forgot the
              // deallocations it was sent, so they are sent again.
              known.resendTrims();
            }
            return new RegisterResponse(known.id, blockSize, blocks);
          }
        }
      }
      if (reviveOnly) {
        throw new EmberException(
            ErrorCode.UNKNOWN_DATANODE,
            "no data node of these contents can "
                + "come back at "
                + endpoint
                + ": register as a new node");
      }
      int id = nextDatanodeId++;
      Datanode dn = registerNewLocked(id, sc, tier, endpoint, blocks, trimOnFree, incarnation);
      log(EDIT_REGISTER, out -> writeIdentity(out, dn));
      LOG.info(
          "registered {}: {} blocks of {} ({})", dn.describe(), blocks, sc.displayName(), tier);
      return new RegisterResponse(id, blockSize, blocks);
    } finally {
      unlockChanges();
    }
  }

  private Datanode registerNewLocked(
      int id,
      StorageClass sc,
      String tier,
      String endpoint,
      long blocks,
      boolean trimOnFree,
      long incarnation) {
    // Whatever served this endpoint before is gone (a restarted process, a target that came
    // back empty): its blocks must read as lost now, not when its heartbeats time out, or the
    // new node's blocks at the same addresses would be handed out while the old ones look live.
    for (Datanode known : datanodes.values()) {
      if (known.endpoint.equals(endpoint) && !known.superseded) {
        known.superseded = true;
        if (!known.lost) {
          markLost(known, "a new data node registered at its endpoint");
        }
      }
    }
    Datanode dn =
        new Datanode(
            id, sc, tier, endpoint, blockSize, blocks, trimOnFree, incarnation, clock.getAsLong());
    datanodes.put(id, dn);
    liveByClass.computeIfAbsent(sc, k -> new ArrayList<>()).add(dn);
    return dn;
  }

  void heartbeat(int datanodeId) throws EmberException {
    heartbeat(datanodeId, List.of());
  }

  /**
   * Takes part of a data node's block report: a block of the namespace whose slot the node says
   * holds a newer generation was overwritten by an allocation this name node does not know (one a
   * journal that was not forced lost), and is marked lost, so its file's readers get the lost
   * block's error instead of the node's refusal. Numbering moves past every generation reported.
   *
   * @return how many blocks it marked lost
   * @throws EmberException {@link ErrorCode#UNKNOWN_DATANODE} when the node is not live under
   *     {@code incarnation}
   */
  int blockReport(int datanodeId, long incarnation, List<io.ember.protocol.Messages.HeldBlock> held)
      throws EmberException {
    lock.writeLock().lock();
    try {
      Datanode dn = live(datanodeId);
      if (dn.incarnation != incarnation) {
        throw new EmberException(
            ErrorCode.UNKNOWN_DATANODE,
            "data node " + datanodeId + " does not serve those contents: register again");
      }
      record Owned(Inode.File file, int index) {
        Block block() {
          return file.blocks.get(index);
        }
      }
      Map<Long, Owned> bySlot = new HashMap<>();
      for (Inode.File f : files.values()) {
        for (int i = 0; i < f.blocks.size(); i++) {
          if (f.blocks.get(i).datanode() == dn) {
            bySlot.put(f.blocks.get(i).slot(), new Owned(f, i));
          }
        }
      }
      // A report is a sign of life: a long one must not let the node expire meanwhile.
      dn.lastHeartbeatNanos = clock.getAsLong();
      for (io.ember.protocol.Messages.HeldBlock h : held) {
        if (h.address() % dn.blockSize != 0
            || h.address() / dn.blockSize >= dn.blockCount
            || h.generation() >= Long.MAX_VALUE / 2) {
          throw new EmberException(
              ErrorCode.INVALID_ARGUMENT,
              "block report of data node "
                  + datanodeId
                  + ": no block of generation "
                  + h.generation()
                  + " at address "
                  + h.address());
        }
      }
      int marked = 0;
      for (io.ember.protocol.Messages.HeldBlock h : held) {
        nextGeneration = Math.max(nextGeneration, h.generation() + 1);
        long slot = h.address() / dn.blockSize;
        Owned owned = bySlot.get(slot);
        if (owned != null
            && h.generation() > owned.block().generation()
            && dn.markOverwritten(slot)) {
          marked++;
          warn(
              "{}: block {} of {} was overwritten by an allocation the name node lost with its"
                  + " journal's tail (generation {} there, {} expected); the block is lost",
              dn.describe(),
              owned.index(),
              pathOf(owned.file()),
              h.generation(),
              owned.block().generation());
        }
      }
      return marked;
    } finally {
      unlockChanges();
    }
  }

  /**
   * Records a heartbeat; blocks the data node reports deallocated become free.
   *
   * @return block slots the data node must deallocate next
   */
  List<Long> heartbeat(int datanodeId, List<Long> trimmed) throws EmberException {
    if (trimmed.isEmpty()) {
      // A node with nothing to trim changes nothing but its (volatile) heartbeat time, so it
      // needs only the read lock and never waits for, or holds up, creates and allocations.
      // Marking a node lost re-reads that time under the write lock.
      lock.readLock().lock();
      try {
        Datanode dn = live(datanodeId);
        if (!dn.trimOnFree) {
          dn.lastHeartbeatNanos = clock.getAsLong();
          return List.of();
        }
      } finally {
        lock.readLock().unlock();
      }
    }
    lock.writeLock().lock();
    try {
      Datanode dn = live(datanodeId);
      dn.lastHeartbeatNanos = clock.getAsLong();
      return dn.trimmed(
          trimmed,
          io.ember.protocol.Messages.MAX_TRIM_SLOTS,
          dn.lastHeartbeatNanos,
          deallocationRetryNanos);
    } finally {
      unlockChanges();
    }
  }

  /** A registered data node not marked lost; call under the lock. */
  private Datanode live(int datanodeId) throws EmberException {
    Datanode dn = datanodes.get(datanodeId);
    if (dn == null || dn.lost) {
      throw new EmberException(
          ErrorCode.UNKNOWN_DATANODE,
          "data node " + datanodeId + " is not registered (or was marked lost): register again");
    }
    if (!dn.reported) {
      throw new EmberException(
          ErrorCode.UNKNOWN_DATANODE,
          "the name node restarted: data node " + datanodeId + " must register again");
    }
    return dn;
  }

  /**
   * Marks data nodes whose heartbeats stopped as lost.
   *
   * @return how many it marked lost: a suspect that heartbeat, or was marked lost otherwise,
   *     between the scan and the marking is not counted
   */
  int expireDatanodes() {
    long now = clock.getAsLong();
    List<Datanode> expired = new ArrayList<>();
    lock.readLock().lock();
    try {
      for (Datanode dn : datanodes.values()) {
        if (!dn.lost && now - dn.lastHeartbeatNanos > datanodeTimeoutNanos) {
          expired.add(dn);
        }
      }
    } finally {
      lock.readLock().unlock();
    }
    if (expired.isEmpty()) {
      return 0;
    }
    int marked = 0;
    lock.writeLock().lock();
    try {
      for (Datanode dn : expired) {
        if (dn.lost || clock.getAsLong() - dn.lastHeartbeatNanos <= datanodeTimeoutNanos) {
          continue;
        }
        markLost(dn, "no heartbeat for " + datanodeTimeoutNanos / 1_000_000 + " ms");
        marked++;
      }
    } finally {
      unlockChanges();
    }
    return marked;
  }

  /** Takes a node out of allocation; its blocks read as lost. Call under the write lock. */
  private void markLost(Datanode dn, String why) {
    dn.lost = true;
    List<Datanode> live = liveByClass.get(dn.storageClass);
    if (live != null) {
      live.remove(dn);
    }
    nextNode.put(dn.storageClass, 0);
    if (!replaying) {
      warn("{} lost: {}; its blocks are unavailable", dn.describe(), why);
    }
  }

  /** The cluster as the name node sees it now. */
  ClusterReport report() {
    lock.readLock().lock();
    try {
      long now = clock.getAsLong();
      Map<String, long[]> byClass = new java.util.TreeMap<>();
      List<io.ember.protocol.Messages.DatanodeInfo> rows = new ArrayList<>();
      for (Datanode dn : datanodes.values()) {
        String state =
            dn.superseded ? "replaced" : dn.lost ? "lost" : !dn.reported ? "unreported" : "live";
        long capacity = dn.blockCount * dn.blockSize;
        long free = state.equals("live") ? dn.freeBlocks(now) * dn.blockSize : 0;
        long used = state.equals("live") ? capacity - free : 0;
        rows.add(
            new io.ember.protocol.Messages.DatanodeInfo(
                dn.id,
                dn.storageClass,
                dn.tier,
                dn.endpoint,
                state,
                dn.incarnation,
                dn.blockSize,
                capacity,
                used,
                free,
                Math.max(0, (now - dn.lastHeartbeatNanos) / 1_000_000),
                dn.trimmingCount(),
                dn.overwrittenCount()));
        long[] c = byClass.computeIfAbsent(dn.storageClass.displayName(), k -> new long[5]);
        if (state.equals("live")) {
          c[0]++;
          c[2] += capacity;
          c[3] += used;
          c[4] += free;
        } else if (state.equals("lost")) {
          c[1]++;
        }
      }
      List<ClusterReport.ClassRow> classes = new ArrayList<>();
      byClass.forEach(
          (name, c) ->
              classes.add(
                  new ClusterReport.ClassRow(name, (int) c[0], (int) c[1], c[2], c[3], c[4])));
      long open = 0;
      for (Lease lease : leases.values()) {
        open += lease.files.size();
      }
      return new ClusterReport(files.size(), open, leases.size(), classes, rows);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The latest warnings, newest last, for the status page. */
  List<RecentEvents.Event> recentEvents() {
    return events.list();
  }

  /** Logs a warning and keeps it for the status page. */
  private void warn(String format, Object... args) {
    String message = org.slf4j.helpers.MessageFormatter.arrayFormat(format, args).getMessage();
    LOG.warn(message);
    events.add(message);
  }

  List<ClassUsage> usage() {
    lock.readLock().lock();
    try {
      Map<StorageClass, long[]> acc = new TreeMap<>((a, b) -> Integer.compare(a.id(), b.id()));
      for (Datanode dn : datanodes.values()) {
        long[] a = acc.computeIfAbsent(dn.storageClass, k -> new long[4]);
        if (dn.lost) {
          a[3]++;
        } else {
          a[0] += dn.blockCount;
          a[1] += dn.freeBlocks(clock.getAsLong());
          a[2]++;
        }
      }
      List<ClassUsage> out = new ArrayList<>();
      acc.forEach(
          (sc, a) -> out.add(new ClassUsage(sc, blockSize, a[0], a[1], (int) a[2], (int) a[3])));
      return out;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Sets {@link NameNodeKeys#DEALLOCATION_RETRY}. */
  void deallocationRetry(Duration retry) {
    deallocationRetryNanos = retry.toNanos();
  }

  // ---- leases ------------------------------------------------------------------------------

  /** How long a writer's lease lasts without renewal. */
  void leaseTimeout(Duration timeout) {
    leaseTimeoutNanos = timeout.toNanos();
  }

  long leaseTimeoutMillis() {
    return leaseTimeoutNanos / 1_000_000;
  }

  private void dropLease(Inode.File f) {
    if (f.leaseHolder.isEmpty()) {
      return;
    }
    Lease lease = leases.get(f.leaseHolder);
    if (lease != null) {
      lease.files.remove(f.id);
      if (lease.files.isEmpty()) {
        leases.remove(f.leaseHolder);
      }
    }
  }

  private EmberException leaseRecovered(Inode.File file) {
    return new EmberException(
        ErrorCode.LEASE_RECOVERED,
        "the lease of "
            + file.leaseHolder
            + " on "
            + pathOf(file)
            + " expired (not renewed for "
            + leaseTimeoutNanos / 1_000_000_000.0
            + " s), and the name node closed the file at "
            + file.length
            + " bytes, what its data nodes had acknowledged");
  }

  /**
   * Renews a writer's lease and records how much of each open file its data nodes acknowledged.
   *
   * @return the files of {@code written} the holder no longer has open
   */
  List<Long> renewLease(String holder, List<io.ember.protocol.Messages.WrittenLength> written) {
    try {
      return renewLease(internal(), holder, written);
    } catch (EmberException e) {
      throw new IllegalStateException("the internal caller is refused nothing", e);
    }
  }

  /**
   * Renews {@code holder}'s lease, as {@link #renewLease(String, List)} does, for a caller that
   * wrote every file the lease covers; a length reported for a file the caller did not write is
   * answered as lost.
   *
   * @throws EmberException PERMISSION_DENIED when the lease covers a file the caller did not write
   */
  List<Long> renewLease(
      Caller caller, String holder, List<io.ember.protocol.Messages.WrittenLength> written)
      throws EmberException {
    lock.writeLock().lock();
    try {
      Lease lease = leases.get(holder);
      if (lease != null && !caller.superuser()) {
        for (long id : lease.files) {
          Inode.File f = files.get(id);
          if (f != null) {
            checkWriter(caller, f, "renew the lease on");
          }
        }
      }
      if (lease != null) {
        lease.renewedNanos = clock.getAsLong();
      }
      List<Long> lost = new ArrayList<>();
      for (io.ember.protocol.Messages.WrittenLength w : written) {
        Inode.File f = files.get(w.fileId());
        if (f == null
            || !f.open
            || !f.leaseHolder.equals(holder)
            || !(caller.superuser() || caller.name().equals(f.owner))) {
          lost.add(w.fileId());
        } else {
          long length = Math.min(w.length(), (long) f.blocks.size() * blockSize);
          if (length > f.reportedLength) {
            // Journaled, so a restarted name node recovers a dead writer's file at what it had.
            f.reportedLength = length;
            long fileId = f.id;
            log(
                EDIT_LENGTH,
                out -> {
                  out.writeLong(fileId);
                  out.writeLong(length);
                });
          }
        }
      }
      return lost;
    } finally {
      unlockChanges();
    }
  }

  /**
   * Closes the open files of writers whose leases expired, each at the length its writer last
   * reported its data nodes acknowledged (blocks past it are freed).
   *
   * @return how many files it closed
   */
  int expireLeases() {
    return expireLeases(block -> CompletableFuture.completedFuture(OptionalLong.empty()));
  }

  /**
   * What a data node holds of a block: the bytes written from its start without a gap; empty when
   * its tier cannot say; failed when its data node did not answer.
   */
  interface HeldLengths {
    CompletableFuture<OptionalLong> of(BlockLocation block);
  }

  /** How long one round of lease recovery waits for data nodes to say what they hold. */
  static final Duration HELD_LENGTH_WAIT = Duration.ofSeconds(10);

  /**
   * Closes the open files of writers whose leases expired, each at the length its data nodes hold:
   * from the block where the length its writer last reported ends, the bytes {@code held} says each
   * block holds, block after block while they are full. A file is never closed short of the length
   * its writer reported. A data node that does not answer (and is not lost) holds its files open
   * until the next round, for up to one more lease timeout; after that, or where a tier cannot say,
   * the count ends at that block. Blocks past the length are freed.
   *
   * @return how many files it closed
   */
  int expireLeases(HeldLengths held) {
    long now = clock.getAsLong();
    List<String> expired = new ArrayList<>();
    Map<Long, List<BlockLocation>> toAsk = new HashMap<>();
    lock.readLock().lock();
    try {
      leases.forEach(
          (holder, lease) -> {
            if (now - lease.renewedNanos > leaseTimeoutNanos) {
              expired.add(holder);
              for (long id : lease.files) {
                Inode.File f = files.get(id);
                if (f != null && f.open) {
                  List<BlockLocation> tail = new ArrayList<>();
                  for (int i = (int) (f.reportedLength / blockSize); i < f.blocks.size(); i++) {
                    tail.add(location(f, i));
                  }
                  toAsk.put(id, tail);
                }
              }
            }
          });
    } finally {
      lock.readLock().unlock();
    }
    if (expired.isEmpty()) {
      return 0;
    }
    // Every question goes out at once, and all share one wait, without the lock.
    Map<Long, List<CompletableFuture<OptionalLong>>> asked = new HashMap<>();
    toAsk.forEach((id, tail) -> asked.put(id, ask(tail, held)));
    long deadline = System.nanoTime() + HELD_LENGTH_WAIT.toNanos();
    Map<Long, Held> heldLength = new HashMap<>();
    try {
      for (Map.Entry<Long, List<CompletableFuture<OptionalLong>>> e : asked.entrySet()) {
        heldLength.put(e.getKey(), heldFrom(toAsk.get(e.getKey()), e.getValue(), deadline));
      }
    } catch (InterruptedException e) {
      // The name node is closing: nothing is closed on half an answer.
      Thread.currentThread().interrupt();
      return 0;
    } finally {
      asked.values().forEach(fs -> fs.forEach(f -> f.cancel(false)));
    }
    int closed = 0;
    lock.writeLock().lock();
    try {
      if (journal != null && !journalWritable()) {
        return 0; // tried again once the journal can be written
      }
      long at = clock.getAsLong();
      for (String holder : expired) {
        Lease lease = leases.get(holder);
        if (lease == null || at - lease.renewedNanos <= leaseTimeoutNanos) {
          continue;
        }
        boolean waitsForAnswers = false;
        for (Long id : new ArrayList<>(lease.files)) {
          Inode.File f = files.get(id);
          if (f == null || !f.open) {
            continue;
          }
          Held fromDataNodes = heldLength.get(id);
          if (fromDataNodes != null
              && !fromDataNodes.answered()
              && at - lease.renewedNanos <= 2 * leaseTimeoutNanos) {
            waitsForAnswers = true;
            continue;
          }
          long length =
              Math.min(
                  Math.max(f.reportedLength, fromDataNodes == null ? 0 : fromDataNodes.length()),
                  (long) f.blocks.size() * blockSize);
          long when = System.currentTimeMillis();
          long reportedLength = f.reportedLength;
          closeLocked(f, length, when);
          f.recovered = true;
          log(
              EDIT_RECOVER,
              out -> {
                out.writeLong(id);
                out.writeLong(length);
                out.writeLong(when);
              });
          closed++;
          warn(
              "lease of {} expired (not renewed for {} s): {} closed at {} bytes ({})",
              holder,
              leaseTimeoutNanos / 1_000_000_000.0,
              pathOf(f),
              length,
              fromDataNodes == null || fromDataNodes.length() <= reportedLength
                  ? "what its writer reported"
                      + (fromDataNodes != null && !fromDataNodes.answered()
                          ? "; a data node did not answer"
                          : "")
                  : "its writer had reported " + reportedLength + "; the rest its data nodes held");
        }
        if (!waitsForAnswers) {
          leases.remove(holder);
        }
      }
    } finally {
      var unused = takeLogged();
      unlockChanges();
    }
    return closed;
  }

  /** Asks what each block of {@code tail} holds; a lost data node cannot say. */
  private static List<CompletableFuture<OptionalLong>> ask(
      List<BlockLocation> tail, HeldLengths held) {
    List<CompletableFuture<OptionalLong>> answers = new ArrayList<>();
    for (BlockLocation b : tail) {
      CompletableFuture<OptionalLong> answer;
      if (b.lost()) {
        answer = CompletableFuture.completedFuture(OptionalLong.empty());
      } else {
        try {
          answer = held.of(b);
        } catch (RuntimeException e) {
          answer = CompletableFuture.failedFuture(e);
        }
      }
      answers.add(answer);
    }
    return answers;
  }

  /**
   * Bytes counted from the data nodes' answers; {@code answered} is false when the count stopped at
   * a data node that did not answer.
   */
  private record Held(long length, boolean answered) {}

  /**
   * The bytes {@code tail}'s blocks hold from the first one's start, counted while each is full and
   * up to the first block whose data node did not answer by {@code deadline}.
   */
  private Held heldFrom(
      List<BlockLocation> tail, List<CompletableFuture<OptionalLong>> answers, long deadline)
      throws InterruptedException {
    if (tail.isEmpty()) {
      return new Held(0, true);
    }
    long length = (long) tail.get(0).index() * blockSize;
    for (CompletableFuture<OptionalLong> answer : answers) {
      OptionalLong h;
      try {
        h = answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (TimeoutException
          | ExecutionException
          | java.util.concurrent.CancellationException e) {
        return new Held(length, false);
      }
      if (h.isEmpty()) {
        break;
      }
      length += Math.min(h.getAsLong(), blockSize);
      if (h.getAsLong() < blockSize) {
        break;
      }
    }
    return new Held(length, true);
  }

  private boolean journalWritable() {
    try {
      journal.checkWritable();
      return true;
    } catch (EmberException e) {
      return false;
    }
  }

  /**
   * A failed writer gives its file up: deleted if still being written, so its blocks are free.
   *
   * @throws EmberException {@link ErrorCode#FILE_CLOSED} when the file was closed meanwhile
   */
  void abandon(long fileId) throws EmberException {
    abandon(internal(), fileId);
  }

  /** As {@link #abandon(long)}; only the file's owner (its writer) may. */
  void abandon(Caller caller, long fileId) throws EmberException {
    lock.writeLock().lock();
    try {
      Inode.File f = files.get(fileId);
      if (f == null) {
        return;
      }
      checkWriter(caller, f, "abandon");
      if (!f.open) {
        throw new EmberException(
            ErrorCode.FILE_CLOSED, pathOf(f) + " is closed: delete it to free its blocks");
      }
      checkJournal();
      long now = System.currentTimeMillis();
      unlink(f, now);
      log(
          EDIT_ABANDON,
          out -> {
            out.writeLong(fileId);
            out.writeLong(now);
          });
    } finally {
      unlockChanges();
    }
  }

  // ---- delegation tokens -------------------------------------------------------------------

  /** Sets how long delegation tokens hold, at most, and how often their key changes. */
  void configureDelegationTokens(
      Duration renewInterval, Duration maxLifetime, Duration keyUpdateInterval) {
    lock.writeLock().lock();
    try {
      delegationTokens.configure(renewInterval, maxLifetime, keyUpdateInterval);
    } finally {
      unlockChanges();
    }
  }

  /**
   * Issues a delegation token that acts as {@code caller}, renewable by {@code renewer} (empty: the
   * caller), signed with the current key (a new one when it is due, journaled first).
   *
   * @throws EmberException {@link ErrorCode#PERMISSION_DENIED} for a caller without an identity;
   *     {@link ErrorCode#JOURNAL_FAILED} when the change cannot be recorded
   */
  DelegationToken issueDelegationToken(Caller caller, String renewer) throws EmberException {
    if (caller.name().isEmpty()) {
      throw new EmberException(
          ErrorCode.PERMISSION_DENIED, "a caller without an identity gets no delegation token");
    }
    lock.writeLock().lock();
    try {
      checkJournal();
      long now = System.currentTimeMillis();
      if (now - lastTokenPurgeMillis > TOKEN_PURGE_MILLIS) {
        // Expired tokens are let go now and then, so that asking for tokens in a loop cannot
        // grow the table past what the renew interval holds.
        delegationTokens.purge(now);
        lastTokenPurgeMillis = now;
      }
      DelegationTokens.Key key = delegationTokens.current(now);
      if (key == null) {
        DelegationTokens.Key fresh = delegationTokens.newKey(now);
        delegationTokens.addKey(fresh, now);
        log(
            EDIT_TOKEN_KEY,
            out -> {
              out.writeInt(fresh.id());
              out.writeLong(fresh.createdMillis());
              out.write(fresh.secret());
            });
        key = fresh;
      }
      DelegationToken.Identifier id =
          delegationTokens.nextIdentifier(caller.name(), renewer, now, key);
      setTokenExpiry(id.sequence(), delegationTokens.expiryFrom(id, now));
      return delegationTokens.sign(id);
    } finally {
      unlockChanges();
    }
  }

  private void setTokenExpiry(long sequence, long expiresMillis) {
    delegationTokens.put(sequence, expiresMillis);
    log(
        EDIT_TOKEN_SET,
        out -> {
          out.writeLong(sequence);
          out.writeLong(expiresMillis);
        });
  }

  /**
   * Extends a live delegation token by the renew interval, up to its maximum life.
   *
   * @return when it now expires, milliseconds since the epoch
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} for a token that is not good (see
   *     {@link #authenticate}); {@link ErrorCode#PERMISSION_DENIED} for a caller that is not its
   *     renewer
   */
  long renewDelegationToken(Caller caller, DelegationToken token) throws EmberException {
    lock.writeLock().lock();
    try {
      long now = System.currentTimeMillis();
      delegationTokens.check(token, now);
      DelegationToken.Identifier id = token.identifier();
      if (!caller.name().equals(id.effectiveRenewer())) {
        throw new EmberException(
            ErrorCode.PERMISSION_DENIED,
            caller + " may not renew " + id + ": only " + id.effectiveRenewer() + " may");
      }
      checkJournal();
      long expires = delegationTokens.expiryFrom(id, now);
      setTokenExpiry(id.sequence(), expires);
      return expires;
    } finally {
      unlockChanges();
    }
  }

  /**
   * Ends a live delegation token: connections it authenticated keep their identity until they
   * close, and no new one takes it.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} for a token that is not good; {@link
   *     ErrorCode#PERMISSION_DENIED} for a caller that is neither its owner, its renewer nor a
   *     super-user
   */
  void cancelDelegationToken(Caller caller, DelegationToken token) throws EmberException {
    lock.writeLock().lock();
    try {
      delegationTokens.check(token, System.currentTimeMillis());
      DelegationToken.Identifier id = token.identifier();
      if (!caller.superuser()
          && !caller.name().equals(id.owner())
          && !caller.name().equals(id.effectiveRenewer())) {
        throw new EmberException(
            ErrorCode.PERMISSION_DENIED,
            caller + " may not cancel " + id + ": only its owner or renewer may");
      }
      checkJournal();
      delegationTokens.remove(id.sequence());
      log(EDIT_TOKEN_CANCEL, out -> out.writeLong(id.sequence()));
    } finally {
      unlockChanges();
    }
  }

  /**
   * The caller a delegation token acts as.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} saying why the token is not good:
   *     altered, not issued by this name node, cancelled or expired
   */
  Caller authenticate(DelegationToken token) throws EmberException {
    lock.readLock().lock();
    try {
      delegationTokens.check(token, System.currentTimeMillis());
      return identities.caller(token.identifier().owner());
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Checks that {@code token}, which authenticated a connection, is still live.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} once it is cancelled or expired
   */
  void checkDelegationToken(DelegationToken token) throws EmberException {
    lock.readLock().lock();
    try {
      delegationTokens.checkLive(token.identifier(), System.currentTimeMillis());
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Live delegation tokens (for tests). */
  int delegationTokenCount() {
    lock.writeLock().lock();
    try {
      delegationTokens.purge(System.currentTimeMillis());
      return delegationTokens.size();
    } finally {
      unlockChanges();
    }
  }

  // ---- durability --------------------------------------------------------------------------

  /**
   * Releases the write lock; when it was the outermost hold, the change it guarded is whole, and
   * the journal writes its records together.
   */
  private void unlockChanges() {
    Journal j = journal;
    boolean outermost = lock.getWriteHoldCount() == 1;
    lock.writeLock().unlock();
    if (outermost && j != null) {
      j.announce();
    }
  }

  /** Records every change from now on in {@code journal} before it is acknowledged. */
  void attachJournal(Journal journal) {
    lock.writeLock().lock();
    try {
      this.journal = journal;
    } finally {
      unlockChanges();
    }
  }

  /**
   * Completes when the change this thread made last (if any, since the last call) is as durable as
   * the journal promises; a caller answers its request only then.
   */
  CompletableFuture<Void> takeLogged() {
    CompletableFuture<Void> f = LOGGED.get();
    LOGGED.remove();
    return f == null ? DONE : f;
  }

  private void checkJournal() throws EmberException {
    if (journal != null && !replaying) {
      journal.checkWritable();
    }
  }

  /** Writes one edit's fields. */
  private interface EditBody {
    void write(DataOutputStream out) throws IOException;
  }

  private void log(int op, EditBody body) {
    if (journal == null || replaying) {
      return;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    DataOutputStream out = new DataOutputStream(bytes);
    try {
      out.writeByte(op);
      body.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    LOGGED.set(journal.queue(bytes.toByteArray()));
  }

  /**
   * What a registration says of a data node, as the journal's registration record and the
   * checkpoint's data node entries both hold it.
   */
  private static void writeIdentity(DataOutputStream out, Datanode dn) throws IOException {
    out.writeInt(dn.id);
    out.writeInt(dn.storageClass.id());
    writeString(out, dn.tier);
    writeString(out, dn.endpoint);
    out.writeLong(dn.blockCount);
    out.writeBoolean(dn.trimOnFree);
    out.writeLong(dn.incarnation);
  }

  /** A data node as {@link #writeIdentity} wrote it, last heard from at {@code nowNanos}. */
  private Datanode readIdentity(DataInputStream in, long nowNanos) throws IOException {
    int id = in.readInt();
    StorageClass sc = new StorageClass(in.readInt());
    String tier = readString(in);
    String endpoint = readString(in);
    long blocks = in.readLong();
    boolean trimOnFree = in.readBoolean();
    long incarnation = in.readLong();
    return new Datanode(
        id, sc, tier, endpoint, blockSize, blocks, trimOnFree, incarnation, nowNanos);
  }

  static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  static String readString(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > Journal.MAX_RECORD) {
      throw new IOException("a string of " + n + " bytes");
    }
    byte[] b = new byte[n];
    in.readFully(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  /**
   * Applies one journal record, as the change it records did when it was made.
   *
   * @throws IOException when the record cannot be read or does not fit the namespace
   */
  void replay(ByteBuffer payload) throws IOException {
    DataInputStream in =
        new DataInputStream(
            new ByteArrayInputStream(
                payload.array(), payload.arrayOffset() + payload.position(), payload.remaining()));
    lock.writeLock().lock();
    replaying = true;
    try {
      int op = in.readByte();
      switch (op) {
        case EDIT_CREATE -> {
          List<String> parts = Paths.components(readString(in));
          NodeType type = NodeType.fromCode(in.readByte());
          StorageClass sc = new StorageClass(in.readInt());
          boolean createParents = in.readBoolean();
          nextInodeId = in.readLong();
          long now = in.readLong();
          String holder = readString(in);
          // Records from before owners and modes were kept give what the name node made then.
          String owner = in.available() > 0 ? readString(in) : internal().name();
          int mode =
              in.available() > 0 ? in.readUnsignedShort() : modeFor(type, Permissions.DEFAULT);
          Caller as = new Caller(owner, java.util.Set.of(), true);
          if (createLocked(as, parts, type, sc, createParents, now, mode) instanceof Inode.File f) {
            f.leaseHolder = holder;
          }
        }
        case EDIT_SET_ATTRIBUTES -> {
          Inode node = resolve(Paths.components(readString(in)));
          node.owner = readString(in);
          node.group = readString(in);
          node.permission = in.readUnsignedShort();
        }
        case EDIT_DELETE -> {
          Inode node = resolve(Paths.components(readString(in)));
          unlink(node, in.readLong());
        }
        case EDIT_RENAME -> {
          List<String> src = Paths.components(readString(in));
          List<String> dst = Paths.components(readString(in));
          renameLocked(internal(), src, dst, in.readLong());
        }
        case EDIT_ALLOCATE -> {
          Inode.File file = file(in.readLong());
          int index = in.readInt();
          long blockId = in.readLong();
          long generation = in.readLong();
          Datanode dn = datanode(in.readInt());
          long slot = in.readLong();
          if (index != file.blocks.size()) {
            throw new IOException("block " + index + " of a file of " + file.blocks.size());
          }
          file.blocks.add(new Block(blockId, generation, dn, slot));
          dn.restoreTaken(slot);
          file.modificationTime = in.readLong();
          nextBlockId = Math.max(nextBlockId, blockId + 1);
          nextGeneration = Math.max(nextGeneration, generation + 1);
        }
        case EDIT_CLOSE -> {
          Inode.File file = file(in.readLong());
          long length = in.readLong();
          closeLocked(file, length, in.readLong());
        }
        case EDIT_RECOVER -> {
          Inode.File file = file(in.readLong());
          long length = in.readLong();
          closeLocked(file, length, in.readLong());
          file.recovered = true;
        }
        case EDIT_LENGTH -> {
          Inode.File file = file(in.readLong());
          file.reportedLength = Math.max(file.reportedLength, in.readLong());
        }
        case EDIT_ABANDON -> {
          Inode.File file = file(in.readLong());
          unlink(file, in.readLong());
        }
        case EDIT_REGISTER -> {
          Datanode read = readIdentity(in, clock.getAsLong());
          registerNewLocked(
              read.id,
              read.storageClass,
              read.tier,
              read.endpoint,
              read.blockCount,
              read.trimOnFree,
              read.incarnation);
          nextDatanodeId = Math.max(nextDatanodeId, read.id + 1);
        }
        case EDIT_TOKEN_KEY -> {
          int id = in.readInt();
          long created = in.readLong();
          byte[] secret = new byte[DelegationTokens.KEY_BYTES];
          in.readFully(secret);
          delegationTokens.addKey(
              new DelegationTokens.Key(id, created, secret), System.currentTimeMillis());
        }
        case EDIT_TOKEN_SET -> delegationTokens.put(in.readLong(), in.readLong());
        case EDIT_TOKEN_CANCEL -> delegationTokens.remove(in.readLong());
        default -> throw new IOException("unknown edit " + op);
      }
      if (in.available() != 0) {
        throw new IOException(in.available() + " bytes after edit " + op);
      }
    } catch (EmberException e) {
      throw new IOException(e.getMessage(), e);
    } finally {
      replaying = false;
      unlockChanges();
    }
  }

  private Datanode datanode(int id) throws IOException {
    Datanode dn = datanodes.get(id);
    if (dn == null) {
      throw new IOException("data node " + id + " was never registered");
    }
    return dn;
  }

  /**
   * After a checkpoint is loaded and the journal replayed: every data node's free blocks are the
   * ones no file holds (NVMf ones are deallocated again first, as a crash may have come before a
   * deallocation), and each is taken at its word for what it holds until it registers again or its
   * heartbeat timeout passes.
   */
  void finishRestore() {
    lock.writeLock().lock();
    try {
      Map<Integer, java.util.BitSet> owned = new HashMap<>();
      for (Inode.File f : files.values()) {
        for (Block b : f.blocks) {
          owned
              .computeIfAbsent(b.datanode().id, k -> new java.util.BitSet())
              .set(Math.toIntExact(b.slot()));
        }
      }
      liveByClass.clear();
      nextNode.clear();
      long now = clock.getAsLong();
      for (Datanode dn : datanodes.values()) {
        dn.restoreFree(owned.getOrDefault(dn.id, new java.util.BitSet()));
        dn.lost = dn.superseded;
        dn.reported = false;
        dn.lastHeartbeatNanos = now;
      }
      // A journal that was not forced (sync=batch, none) can lose its last changes, though
      // clients and data nodes saw them: numbers handed out again would name another file's
      // inode, and a DRAM data node refuses a block whose generation is older than one it held.
      // The clock (numbers are never reused while it moves forward) and a margin of a million
      // past the last number kept (so a clock stepped back, or a restart within a millisecond,
      // still clears as many lost allocations as that).
      long fresh = System.currentTimeMillis() << 20;
      nextInodeId = Math.max(nextInodeId + LOST_TAIL_MARGIN, fresh);
      nextBlockId = Math.max(nextBlockId + LOST_TAIL_MARGIN, fresh);
      nextGeneration = Math.max(nextGeneration + LOST_TAIL_MARGIN, fresh);
      delegationTokens.skipSequences(fresh, LOST_TAIL_MARGIN);
      // Writers of files open at the crash get a whole lease timeout to renew.
      leases.clear();
      for (Inode.File f : files.values()) {
        if (f.open && !f.leaseHolder.isEmpty()) {
          leases.computeIfAbsent(f.leaseHolder, h -> new Lease(now)).files.add(f.id);
        }
      }
    } finally {
      unlockChanges();
    }
  }

  /** Files in the namespace (for logs and tests). */
  int fileCount() {
    lock.readLock().lock();
    try {
      return files.size();
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Writes a checkpoint of the namespace as of the journal's last record, then starts a new journal
   * segment; changes wait meanwhile, reads do not.
   *
   * @return the sequence number the checkpoint is of
   */
  long checkpoint(Path dir) throws IOException {
    lock.readLock().lock();
    try {
      long seq = journal.roll();
      Checkpoints.write(dir, seq, this::save);
      return seq;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Writes the namespace; call under the lock. */
  void save(DataOutputStream out) throws IOException {
    out.writeInt(CHECKPOINT_WITH_TOKENS);
    out.writeInt(blockSize);
    out.writeLong(nextInodeId);
    out.writeLong(nextBlockId);
    out.writeLong(nextGeneration);
    out.writeInt(nextDatanodeId);
    out.writeInt(datanodes.size());
    for (Datanode dn : datanodes.values()) {
      writeIdentity(out, dn);
      out.writeBoolean(dn.superseded);
      out.writeLong(dn.highWater());
    }
    out.writeLong(root.id);
    out.writeLong(root.modificationTime);
    saveOwnership(out, root);
    saveChildren(out, root);
    delegationTokens.save(out);
  }

  private void saveChildren(DataOutputStream out, Inode.Dir dir) throws IOException {
    out.writeInt(dir.children.size());
    for (Inode child : dir.children.values()) {
      out.writeByte(child.type().code());
      out.writeLong(child.id);
      writeString(out, child.name);
      out.writeInt(child.storageClass.id());
      out.writeLong(child.modificationTime);
      saveOwnership(out, child);
      if (child instanceof Inode.File f) {
        out.writeBoolean(f.open);
        out.writeLong(f.length);
        writeString(out, f.leaseHolder);
        out.writeBoolean(f.recovered);
        out.writeLong(f.reportedLength);
        out.writeInt(f.blocks.size());
        for (Block b : f.blocks) {
          out.writeLong(b.blockId());
          out.writeLong(b.generation());
          out.writeInt(b.datanode().id);
          out.writeLong(b.slot());
        }
      } else {
        saveChildren(out, (Inode.Dir) child);
      }
    }
  }

  private static void saveOwnership(DataOutputStream out, Inode node) throws IOException {
    writeString(out, node.owner);
    writeString(out, node.group);
    out.writeShort(node.permission);
  }

  /** Reads what {@link #saveOwnership} wrote, or gives what a name node made before it kept it. */
  private void loadOwnership(DataInputStream in, Inode node, boolean kept) throws IOException {
    if (kept) {
      node.owner = readString(in);
      node.group = readString(in);
      node.permission = in.readUnsignedShort();
    } else {
      node.owner = internal().name();
      node.group = identities.superGroup();
      node.permission = modeFor(node.type(), Permissions.DEFAULT);
    }
  }

  /**
   * Replaces this (empty) state with a checkpoint's.
   *
   * @throws IOException when it cannot be read, or was written with another block size
   */
  void load(DataInputStream in) throws IOException {
    lock.writeLock().lock();
    try {
      int first = in.readInt();
      boolean withTokens = first == CHECKPOINT_WITH_TOKENS;
      boolean kept = first == CHECKPOINT_WITH_PERMISSIONS || withTokens;
      int savedBlockSize = kept ? in.readInt() : first;
      if (savedBlockSize != blockSize) {
        throw new IOException(
            "the namespace was made with blocks of "
                + formatBytes(savedBlockSize)
                + ", but ember.block-size is "
                + formatBytes(blockSize)
                + ": start with the block size it was made with");
      }
      nextInodeId = in.readLong();
      nextBlockId = in.readLong();
      nextGeneration = in.readLong();
      nextDatanodeId = in.readInt();
      int nodes = in.readInt();
      long now = clock.getAsLong();
      for (int i = 0; i < nodes; i++) {
        Datanode dn = readIdentity(in, now);
        dn.superseded = in.readBoolean();
        dn.restoreTaken(in.readLong() - 1);
        datanodes.put(dn.id, dn);
      }
      long rootId = in.readLong();
      Inode.Dir oldRoot = root;
      root = new Inode.Dir(rootId, "", StorageClass.DRAM, in.readLong(), false);
      if (kept) {
        loadOwnership(in, root, true);
      } else {
        root.owner = oldRoot.owner;
        root.group = oldRoot.group;
        root.permission = oldRoot.permission;
      }
      loadChildren(in, root, kept);
      if (withTokens) {
        delegationTokens.load(in);
      }
    } catch (EmberException e) {
      throw new IOException(e.getMessage(), e);
    } finally {
      unlockChanges();
    }
  }

  private void loadChildren(DataInputStream in, Inode.Dir dir, boolean kept)
      throws IOException, EmberException {
    int n = in.readInt();
    for (int i = 0; i < n; i++) {
      NodeType type = NodeType.fromCode(in.readByte());
      long id = in.readLong();
      String name = readString(in);
      StorageClass sc = new StorageClass(in.readInt());
      long mtime = in.readLong();
      Inode child;
      if (type == NodeType.FILE) {
        Inode.File f = new Inode.File(id, name, sc, mtime);
        loadOwnership(in, f, kept);
        f.open = in.readBoolean();
        f.length = in.readLong();
        f.leaseHolder = readString(in);
        f.recovered = in.readBoolean();
        f.reportedLength = in.readLong();
        int blocks = in.readInt();
        for (int b = 0; b < blocks; b++) {
          long blockId = in.readLong();
          long generation = in.readLong();
          Datanode dn = datanode(in.readInt());
          long slot = in.readLong();
          f.blocks.add(new Block(blockId, generation, dn, slot));
        }
        files.put(id, f);
        child = f;
      } else {
        Inode.Dir d = new Inode.Dir(id, name, sc, mtime, type == NodeType.MULTIFILE);
        loadOwnership(in, d, kept);
        loadChildren(in, d, kept);
        child = d;
      }
      dir.children.put(name, child);
      child.parent = dir;
    }
  }

  // ---- helpers (callers hold the lock) -----------------------------------------------------

  /** Gives a new entry its owner, its directory's group (as HDFS does) and its mode. */
  private static void own(Inode made, Caller caller, Inode.Dir dir, int mode) {
    made.owner = caller.name();
    made.group = dir.group;
    made.permission = mode;
  }

  /**
   * The mode bits that apply to {@code caller} on {@code node}: the owner's, group's or others'.
   */
  private static int bitsFor(Caller caller, Inode node) {
    if (caller.name().equals(node.owner)) {
      return (node.permission >> 6) & 7;
    }
    if (caller.groups().contains(node.group)) {
      return (node.permission >> 3) & 7;
    }
    return node.permission & 7;
  }

  /** Refuses {@code what} unless {@code caller} has every bit of {@code access} on {@code node}. */
  private void checkAccess(Caller caller, Inode node, int access, String what)
      throws EmberException {
    if (caller.superuser() || (bitsFor(caller, node) & access) == access) {
      return;
    }
    throw denied(
        what,
        caller
            + " may not "
            + accessWords(access, node instanceof Inode.Dir)
            + " "
            + pathOf(node)
            + " ("
            + describe(node)
            + ")");
  }

  /**
   * Refuses {@code what} unless {@code caller} may pass through every directory above {@code node}.
   */
  private void checkTraverse(Caller caller, Inode node, String what) throws EmberException {
    if (caller.superuser()) {
      return;
    }
    List<Inode.Dir> above = new ArrayList<>();
    for (Inode.Dir d = node.parent; d != null; d = d.parent) {
      above.add(0, d);
    }
    for (Inode.Dir d : above) {
      checkAccess(caller, d, Permissions.EXECUTE, what);
    }
  }

  /**
   * Refuses taking {@code node} out of its directory unless {@code caller} may write that directory
   * and, when it is sticky, owns the entry or the directory.
   */
  private void checkUnlink(Caller caller, Inode node, String what) throws EmberException {
    Inode.Dir dir = node.parent;
    checkAccess(caller, dir, Permissions.WRITE | Permissions.EXECUTE, what);
    if (!caller.superuser()
        && (dir.permission & Permissions.STICKY) != 0
        && !caller.name().equals(node.owner)
        && !caller.name().equals(dir.owner)) {
      throw denied(
          what,
          pathOf(dir)
              + " is sticky ("
              + describe(dir)
              + "): only the owner of an entry or of the directory moves or deletes it, and "
              + caller
              + " owns neither "
              + pathOf(node)
              + " ("
              + node.owner
              + ") nor "
              + pathOf(dir));
    }
  }

  /** Refuses a recursive delete unless {@code caller} may read, write and enter every directory. */
  private void checkSubtree(Caller caller, Inode.Dir dir, String what) throws EmberException {
    if (caller.superuser()) {
      return;
    }
    checkAccess(caller, dir, Permissions.READ | Permissions.WRITE | Permissions.EXECUTE, what);
    for (Inode child : dir.children.values()) {
      // As HDFS: an empty directory below needs nothing, as an empty one deleted alone does not.
      if (child instanceof Inode.Dir d && !d.children.isEmpty()) {
        checkSubtree(caller, d, what);
      }
    }
  }

  /** Refuses a writer's step on {@code file} by anyone but its owner (who created it). */
  private void checkWriter(Caller caller, Inode.File file, String step) throws EmberException {
    if (!caller.superuser() && !caller.name().equals(file.owner)) {
      throw denied(
          step + " " + pathOf(file),
          caller + " is not its writer: " + pathOf(file) + " was created by " + file.owner);
    }
  }

  private static EmberException denied(String what, String why) {
    return new EmberException(ErrorCode.PERMISSION_DENIED, "cannot " + what + ": " + why);
  }

  private static String accessWords(int access, boolean directory) {
    List<String> words = new ArrayList<>(3);
    if ((access & Permissions.READ) != 0) {
      words.add("read");
    }
    if ((access & Permissions.WRITE) != 0) {
      words.add("write");
    }
    if ((access & Permissions.EXECUTE) != 0) {
      words.add(directory ? "pass through (x)" : "execute");
    }
    return String.join(" and ", words);
  }

  /** "alice:staff rwxr-x---", for error messages. */
  private static String describe(Inode node) {
    return node.owner + ":" + node.group + " " + Permissions.symbolic(node.permission);
  }

  /**
   * The entry at {@code parts}, which {@code caller} must be allowed to reach: it needs to pass
   * through every directory on the way.
   */
  private Inode resolve(Caller caller, List<String> parts) throws EmberException {
    if (caller.superuser()) {
      return resolve(parts);
    }
    Inode node = root;
    for (int i = 0; i < parts.size(); i++) {
      if (node instanceof Inode.Dir dir) {
        checkAccess(caller, dir, Permissions.EXECUTE, "reach " + Paths.join(parts));
      }
      node = step(node, parts, i);
    }
    return node;
  }

  private void attach(Inode.Dir dir, Inode child, long now) {
    dir.children.put(child.name, child);
    child.parent = dir;
    dir.modificationTime = now;
  }

  private Inode resolve(List<String> parts) throws EmberException {
    Inode node = root;
    for (int i = 0; i < parts.size(); i++) {
      node = step(node, parts, i);
    }
    return node;
  }

  /** The child {@code parts[i]} of {@code node}, which {@code parts[0..i)} reached. */
  private static Inode step(Inode node, List<String> parts, int i) throws EmberException {
    if (!(node instanceof Inode.Dir dir)) {
      throw new EmberException(
          ErrorCode.NOT_FOUND,
          Paths.join(parts) + " does not exist: " + Paths.join(parts.subList(0, i)) + " is a file");
    }
    Inode child = dir.children.get(parts.get(i));
    if (child == null) {
      throw new EmberException(ErrorCode.NOT_FOUND, Paths.join(parts) + " does not exist");
    }
    return child;
  }

  /** The entry at a path, or null where there is none (or a file stands in the way). */
  private Inode find(List<String> parts) {
    Inode node = root;
    for (String part : parts) {
      if (!(node instanceof Inode.Dir dir)) {
        return null;
      }
      node = dir.children.get(part);
      if (node == null) {
        return null;
      }
    }
    return node;
  }

  private Inode resolveForParent(List<String> parts, String what) throws EmberException {
    Inode node = root;
    for (int i = 0; i < parts.size(); i++) {
      if (!(node instanceof Inode.Dir dir)) {
        throw new EmberException(
            ErrorCode.NOT_A_DIRECTORY,
            "cannot " + what + ": " + Paths.join(parts.subList(0, i)) + " is a file");
      }
      node = dir.children.get(parts.get(i));
      if (node == null) {
        throw new EmberException(
            ErrorCode.PARENT_NOT_FOUND,
            "cannot " + what + ": " + Paths.join(parts.subList(0, i + 1)) + " does not exist");
      }
    }
    if (!(node instanceof Inode.Dir)) {
      throw new EmberException(
          ErrorCode.NOT_A_DIRECTORY, "cannot " + what + ": " + Paths.join(parts) + " is a file");
    }
    return node;
  }

  private Inode.File file(long fileId) throws EmberException {
    Inode.File f = files.get(fileId);
    if (f == null) {
      throw new EmberException(
          ErrorCode.NOT_FOUND, "file id " + fileId + " does not exist (deleted?)");
    }
    return f;
  }

  private void release(Inode node) {
    if (node instanceof Inode.File f) {
      dropLease(f);
      files.remove(f.id);
      f.blocks.forEach(this::giveBack);
      f.blocks.clear();
    } else if (node instanceof Inode.Dir d) {
      for (Inode child : d.children.values()) {
        release(child);
      }
      d.children.clear();
    }
  }

  /** Frees a block's slot; a lost data node's slots went with its registration. */
  private void giveBack(Block b) {
    if (!b.datanode().lost) {
      b.datanode().giveBack(b.slot());
    }
  }

  private String pathOf(Inode node) {
    List<String> names = new ArrayList<>();
    for (Inode n = node; n != null && n != root; n = n.parent) {
      names.add(0, n.name);
    }
    return Paths.join(names);
  }

  private NodeStatus status(Inode node) {
    long length = 0;
    int blocks = 0;
    boolean open = false;
    if (node instanceof Inode.File f) {
      length = f.open ? 0 : f.length;
      blocks = f.blocks.size();
      open = f.open;
    } else if (node instanceof Inode.Dir d && d.multifile) {
      for (Inode child : d.children.values()) {
        if (child instanceof Inode.File f && !f.open) {
          length += f.length;
        }
      }
    }
    return new NodeStatus(
        node.id,
        node.type(),
        length,
        blocks,
        blockSize,
        node.storageClass,
        node.modificationTime,
        open,
        open ? ((Inode.File) node).leaseHolder : "",
        open ? ((Inode.File) node).reportedLength : 0,
        node.owner,
        node.group,
        node.permission);
  }

  static String formatBytes(long bytes) {
    if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
      return (bytes >> 30) + " GiB";
    }
    if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
      return (bytes >> 20) + " MiB";
    }
    if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
      return (bytes >> 10) + " KiB";
    }
    return bytes + " bytes";
  }
}
