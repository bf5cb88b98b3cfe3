package io.ember.hadoop;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.Permissions;
import io.ember.protocol.StorageClass;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.AccessControlException;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.Progressable;

/**
 * Ember as a Hadoop {@link FileSystem}: {@code ember://namenode-host:port/path}, the port
 * defaulting to 9060. Registered through {@code META-INF/services}, so {@code fs.ember.impl} need
 * not be set.
 *
 * <p>Semantics, where Hadoop leaves a choice:
 *
 * <ul>
 *   <li>Files are written once. {@code append} and {@code concat} throw {@link
 *       UnsupportedOperationException}.
 *   <li>A file's length is published when its stream is closed; before that, readers see an empty
 *       file. {@code hflush()} and {@code hsync()} send every buffered byte to the data nodes and
 *       wait for them (so no data is lost if this process dies) but do not publish: the stream does
 *       not claim the {@code hflush}/{@code hsync} capabilities.
 *   <li>{@code rename} follows HDFS: it returns false when the source is missing, the destination
 *       exists as a file, its parent is missing, or a directory would move into itself; a
 *       destination that is a directory receives the source inside it.
 *   <li>Deleting the root directory is refused (returns false), as HDFS does.
 *   <li>Modes, owners and groups as HDFS has them ({@code setPermission}, {@code setOwner}, the
 *       umask {@code fs.permissions.umask-mode}), checked by the name node under {@code
 *       ember.security.tls}. Without TLS the name node cannot tell callers apart, so statuses
 *       report the current user as every entry's owner and group, as a single-user file system
 *       would (and as MapReduce's staging directory check expects). No access times or replication:
 *       statuses report the modification time and replication 1.
 *   <li>A multifile appears as a directory of its parts.
 * </ul>
 *
 * <p>Settings: every {@code ember.*} key of the Hadoop configuration is passed to the Ember client
 * ({@code ember.rpc.timeout}, {@code ember.client.buffer-size}...). {@value #STORAGE_CLASS_KEY}
 * (dram or nvmf) picks the storage class of new files, also per file through {@code
 * createFile(path).opt(STORAGE_CLASS_KEY, "nvmf")}.
 */
public class EmberFileSystem extends FileSystem {
  /** The URI scheme. */
  public static final String SCHEME = "ember";

  /** Storage class of new files: dram (default) or nvmf. */
  public static final String STORAGE_CLASS_KEY = "ember.hadoop.storage-class";

  private URI uri;

  /** The name node's "host:port", under which Hadoop files delegation tokens. */
  private String service;

  private Path workingDir;
  private EmberClient client;
  private StorageClass defaultStorageClass;
  private long blockSize;
  private String user;

  /** True under TLS: the name node knows who owns each entry, and statuses say so. */
  private boolean ownersKnown;

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    String host = name.getHost();
    if (host == null) {
      throw new IOException(
          "an ember URI needs the name node's host: ember://host:port/, got " + name);
    }
    int port = name.getPort() < 0 ? EmberKeys.DEFAULT_NAMENODE_PORT : name.getPort();
    uri = URI.create(SCHEME + "://" + host + ":" + port);
    // Host names are case-blind: a driver and its executors must file the token under one name.
    service = host.toLowerCase(java.util.Locale.ROOT) + ":" + port;
    EmberConfig config = emberConfig(conf, service);
    try {
      defaultStorageClass = StorageClass.parse(conf.get(STORAGE_CLASS_KEY, "dram"));
    } catch (IllegalArgumentException e) {
      throw new IOException("bad Ember setting: " + e.getMessage(), e);
    }
    if (EmberKeys.authenticates(config)
        && !EmberKeys.hasOwnIdentity(config)
        && config.get(EmberKeys.DELEGATION_TOKEN).isEmpty()) {
      // A process without a certificate or password (a Spark executor, a task) acts as whoever
      // handed it a delegation token for this name node in its credentials.
      Token<?> token =
          UserGroupInformation.getCurrentUser().getCredentials().getToken(new Text(service));
      if (token != null && EmberTokenIdentifier.KIND.equals(token.getKind())) {
        config =
            config.with(
                EmberKeys.DELEGATION_TOKEN,
                EmberTokenIdentifier.fromHadoop(token).encodeToString());
      }
    }
    try {
      client = EmberClient.connect(config);
      user = UserGroupInformation.getCurrentUser().getShortUserName();
      ownersKnown = EmberKeys.authenticates(config);
      workingDir = makeQualified(new Path("/user", user));
      blockSize = client.lookup("/").blockSize();
    } catch (EmberException e) {
      if (client != null) {
        client.close(); // refused after it connected (no certificate, a refused token)
        client = null;
      }
      throw translate(e);
    }
  }

  /** The Ember client under this file system, for callers that want its own API. */
  public EmberClient client() {
    return client;
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  protected int getDefaultPort() {
    return EmberKeys.DEFAULT_NAMENODE_PORT;
  }

  /**
   * The name node's "host:port": Hadoop files this file system's delegation tokens under it, and
   * {@link #initialize} looks for one there.
   */
  @Override
  public String getCanonicalServiceName() {
    return service;
  }

  /**
   * A delegation token for this file system's identity, renewable by {@code renewer}'s short name
   * (null or empty: this identity), or null on a cluster without TLS, which needs none.
   *
   * @throws AccessControlException when this file system itself authenticated with a token
   */
  @Override
  public Token<EmberTokenIdentifier> getDelegationToken(String renewer) throws IOException {
    if (!ownersKnown) {
      return null;
    }
    String renewedBy = renewer == null ? "" : renewer;
    if (!renewedBy.isEmpty()) {
      try {
        // "yarn/host@REALM" renews as yarn, as Hadoop maps principals to users.
        renewedBy = UserGroupInformation.createRemoteUser(renewedBy).getShortUserName();
      } catch (RuntimeException e) {
        // No rule maps it: the name as given.
      }
    }
    try {
      return EmberTokenIdentifier.toHadoop(client.getDelegationToken(renewedBy), service);
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  /**
   * The {@code ember.*} settings of {@code conf} (but {@code ember.hadoop.*}), for the name node at
   * {@code namenode}.
   *
   * @throws IOException for a bad setting
   */
  static EmberConfig emberConfig(Configuration conf, String namenode) throws IOException {
    Map<String, String> settings = new TreeMap<>();
    for (Map.Entry<String, String> e : conf) {
      if (e.getKey().startsWith("ember.") && !e.getKey().startsWith("ember.hadoop.")) {
        settings.put(e.getKey(), e.getValue());
      }
    }
    try {
      return EmberConfig.of(settings).with(EmberKeys.NAMENODE_ADDRESS, namenode);
    } catch (IllegalArgumentException e) {
      throw new IOException("bad Ember setting: " + e.getMessage(), e);
    }
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDir;
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDir = makeQualified(dir);
  }

  @Override
  public long getDefaultBlockSize() {
    return blockSize;
  }

  @Override
  public long getDefaultBlockSize(Path f) {
    return blockSize;
  }

  @Override
  public short getDefaultReplication() {
    return 1;
  }

  /** The Ember path of a Hadoop path of this file system. */
  String emberPath(Path p) {
    Path q = makeQualified(p);
    checkPath(q);
    String path = q.toUri().getPath();
    return path.isEmpty() ? "/" : path;
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    String path = emberPath(f);
    try {
      return new FSDataInputStream(new EmberFsInputStream(client.open(path), statistics));
    } catch (EmberException e) {
      if (e.code() == ErrorCode.NOT_A_FILE) {
        FileNotFoundException dir =
            new FileNotFoundException("cannot open " + path + ": it is a directory");
        dir.initCause(e);
        throw dir;
      }
      throw translate(e);
    }
  }

  @Override
  public FSDataOutputStream create(
      Path f,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    return create(f, overwrite, true, defaultStorageClass, permission);
  }

  @Override
  public FSDataOutputStream createNonRecursive(
      Path f,
      FsPermission permission,
      java.util.EnumSet<CreateFlag> flags,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    return create(f, flags.contains(CreateFlag.OVERWRITE), false, defaultStorageClass, permission);
  }

  /**
   * The mode bits a create asks for: {@code permission} (the default for its kind when null) less
   * the configured umask ({@code fs.permissions.umask-mode}), as HDFS's client gives them.
   */
  private int modeOf(FsPermission permission, boolean directory) {
    FsPermission asked =
        permission != null
            ? permission
            : directory ? FsPermission.getDirDefault() : FsPermission.getFileDefault();
    return asked.applyUMask(FsPermission.getUMask(getConf())).toShort() & Permissions.MAX;
  }

  FSDataOutputStream create(
      Path f,
      boolean overwrite,
      boolean createParents,
      StorageClass storageClass,
      FsPermission permission)
      throws IOException {
    String path = emberPath(f);
    if (path.equals("/")) {
      throw new FileAlreadyExistsException("cannot create /: it is the root directory");
    }
    try {
      // One request: the name node checks the parent (when parents are not made), refuses a
      // directory at the path and replaces a file there when asked to.
      EmberOutputStream out =
          client.createBuffered(
              path,
              new CreateOptions(storageClass, createParents, overwrite)
                  .withPermission(modeOf(permission, false)));
      statistics.incrementWriteOps(1);
      return new FSDataOutputStream(new EmberFsOutputStream(out), statistics);
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) {
    throw new UnsupportedOperationException(
        "Ember does not support append: files are written once (" + f + ")");
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    String from = emberPath(src);
    String to = emberPath(dst);
    if (from.equals("/")) {
      return false;
    }
    try {
      NodeStatus source = lookupOrNull(from);
      if (source == null) {
        return false;
      }
      if (from.equals(to)) {
        return source.isFile();
      }
      NodeStatus target = lookupOrNull(to);
      if (target != null) {
        if (target.isFile()) {
          return false;
        }
        to = io.ember.protocol.Paths.child(to, io.ember.protocol.Paths.name(from));
        if (to.equals(from)) {
          return true; // already in that directory
        }
      }
      client.rename(from, to);
      statistics.incrementWriteOps(1);
      return true;
    } catch (EmberException e) {
      switch (e.code()) {
        case NOT_FOUND,
        ALREADY_EXISTS,
        PARENT_NOT_FOUND,
        NOT_A_DIRECTORY,
        RENAME_INTO_ITSELF,
        INVALID_ARGUMENT:
          return false;
        default:
          throw translate(e);
      }
    }
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    String path = emberPath(f);
    try {
      if (path.equals("/")) {
        // As HDFS: the root stays. A non-recursive delete of a non-empty root says why.
        if (!recursive && !client.list("/").isEmpty()) {
          throw new PathIsNotEmptyDirectoryException("/ is not empty");
        }
        return false;
      }
      // One round trip: a missing path comes back as NOT_FOUND, answered below with false.
      client.delete(path, recursive);
      statistics.incrementWriteOps(1);
      return true;
    } catch (EmberException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return false;
      }
      throw translate(e);
    }
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    String path = emberPath(f);
    try {
      NodeStatus st = client.lookup(path);
      statistics.incrementReadOps(1);
      if (st.isFile()) {
        return new FileStatus[] {toStatus(st, makeQualified(f))};
      }
      List<DirEntry> entries = client.list(path);
      FileStatus[] out = new FileStatus[entries.size()];
      Path dir = makeQualified(f);
      for (int i = 0; i < out.length; i++) {
        DirEntry e = entries.get(i);
        out[i] = toStatus(e.status(), new Path(dir, e.name()));
      }
      return out;
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    String path = emberPath(f);
    try {
      NodeStatus st = lookupOrNull(path);
      if (st != null) {
        if (st.isFile()) {
          throw new FileAlreadyExistsException("cannot make directory " + path + ": it is a file");
        }
        return true;
      }
      client.createDirectory(
          path,
          CreateOptions.DEFAULT.withCreateParents(true).withPermission(modeOf(permission, true)));
      statistics.incrementWriteOps(1);
      return true;
    } catch (EmberException e) {
      if (e.code() == ErrorCode.ALREADY_EXISTS) {
        NodeStatus st = lookupOrNull(path); // a concurrent mkdirs won: fine if it is a directory
        if (st != null && st.isContainer()) {
          return true;
        }
      }
      throw translate(e);
    }
  }

  /**
   * Sets a path's mode bits (the sticky bit included); only its owner or the super-user may.
   *
   * @throws FileNotFoundException when there is nothing at {@code p}
   * @throws AccessControlException when the caller may not
   */
  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    try {
      client.setAttributes(emberPath(p), "", "", permission.toShort() & Permissions.MAX);
      statistics.incrementWriteOps(1);
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  /**
   * Sets a path's owner and group; a null one is left as it is. Only the super-user changes an
   * owner; the owner changes the group to one of its own.
   *
   * @throws FileNotFoundException when there is nothing at {@code p}
   * @throws AccessControlException when the caller may not
   */
  @Override
  public void setOwner(Path p, String username, String groupname) throws IOException {
    if (username == null && groupname == null) {
      throw new IllegalArgumentException("setOwner of " + p + " names neither user nor group");
    }
    try {
      client.setAttributes(
          emberPath(p),
          username == null ? "" : username,
          groupname == null ? "" : groupname,
          Permissions.DEFAULT);
      statistics.incrementWriteOps(1);
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    try {
      statistics.incrementReadOps(1);
      return toStatus(client.lookup(emberPath(f)), makeQualified(f));
    } catch (EmberException e) {
      throw translate(e);
    }
  }

  @Override
  public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
      throws IOException {
    if (file == null) {
      return null;
    }
    if (start < 0 || len < 0) {
      throw new IllegalArgumentException("negative start or length: " + start + ", " + len);
    }
    if (file.isDirectory() || file.getLen() <= start) {
      return new BlockLocation[0];
    }
    String path = emberPath(file.getPath());
    try {
      List<io.ember.protocol.BlockLocation> blocks = client.blockLocations(path);
      long bs = file.getBlockSize();
      long end = Math.min(file.getLen(), start + len);
      List<BlockLocation> out = new ArrayList<>();
      for (io.ember.protocol.BlockLocation b : blocks) {
        long offset = (long) b.index() * bs;
        long length = Math.min(bs, file.getLen() - offset);
        if (length <= 0 || offset >= end || offset + length <= start) {
          continue;
        }
        out.add(
            new BlockLocation(
                new String[] {b.endpoint()}, new String[] {b.host()}, offset, length, b.lost()));
      }
      return out.toArray(new BlockLocation[0]);
    } catch (EmberException e) {
      throw translate(e);
    } catch (IllegalArgumentException e) {
      throw new IOException("a block of " + path + " has an endpoint without a host", e);
    }
  }

  @Override
  public FSDataOutputStreamBuilder<FSDataOutputStream, ?> createFile(Path path) {
    return new EmberOutputStreamBuilder(this, path).create().overwrite(true);
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  StorageClass defaultStorageClass() {
    return defaultStorageClass;
  }

  private NodeStatus lookupOrNull(String path) throws EmberException {
    try {
      return client.lookup(path);
    } catch (EmberException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  private FileStatus toStatus(NodeStatus st, Path qualified) {
    boolean dir = st.isContainer();
    return new FileStatus(
        st.length(),
        dir,
        1,
        st.blockSize(),
        st.modificationTime(),
        st.modificationTime(),
        new FsPermission((short) st.permission()),
        ownersKnown && !st.owner().isEmpty() ? st.owner() : user,
        ownersKnown && !st.group().isEmpty() ? st.group() : user,
        qualified);
  }

  /** Hadoop's exception types for Ember's codes, so callers can catch what they expect. */
  static IOException translate(EmberException e) {
    IOException out =
        switch (e.code()) {
          case NOT_FOUND, PARENT_NOT_FOUND -> new FileNotFoundException(e.getMessage());
          case ALREADY_EXISTS -> new FileAlreadyExistsException(e.getMessage());
          case NOT_A_DIRECTORY -> new ParentNotDirectoryException(e.getMessage());
          case DIRECTORY_NOT_EMPTY -> new PathIsNotEmptyDirectoryException(e.getMessage());
          case PERMISSION_DENIED, UNAUTHENTICATED -> new AccessControlException(e.getMessage());
          default -> null;
        };
    if (out == null) {
      return e;
    }
    out.initCause(e);
    return out;
  }
}
