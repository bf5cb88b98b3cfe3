package io.ember.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.minicluster.MiniCluster;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.EnumSet;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;
import org.apache.hadoop.fs.statistics.StreamStatisticNames;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The adapter as Hadoop's own tools use it: FsShell, FileContext, block locations, options. */
class EmberFileSystemTest {
  private static MiniCluster cluster;
  private static URI uri;
  private static Configuration conf;
  private static FileSystem fs;

  @BeforeAll
  static void start() throws Exception {
    cluster = io.ember.hadoop.contract.EmberContract.newCluster("64k", "32m");
    uri = URI.create("ember://" + cluster.namenodeAddress() + "/");
    conf = io.ember.hadoop.contract.EmberContract.configure(new Configuration());
    conf.set("fs.defaultFS", uri.toString());
    fs = FileSystem.newInstance(uri, conf);
  }

  @AfterAll
  static void stop() throws IOException {
    fs.close();
    cluster.close();
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** Standard output of the last {@link #shell} call, as bytes. */
  private static byte[] lastStdout;

  /** Exit code, standard output and error of one FsShell command, run in this process. */
  private static String[] shell(String... args) throws Exception {
    PrintStream savedOut = System.out;
    PrintStream savedErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code;
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      code = new FsShell(new Configuration(conf)).run(args);
    } finally {
      System.setOut(savedOut);
      System.setErr(savedErr);
    }
    lastStdout = out.toByteArray();
    return new String[] {
      Integer.toString(code),
      out.toString(StandardCharsets.UTF_8),
      err.toString(StandardCharsets.UTF_8)
    };
  }

  /**
   * An empty file's create and close through Hadoop cost two name node round trips (the create,
   * with its overwrite and parent checks, and the close), whether the file is new, replaces another
   * or is created without parents; and each check still refuses what it refused before.
   */
  @Test
  void createAndCloseOfAnEmptyFileCostTwoRoundTrips() throws Exception {
    EmberFileSystem efs = (EmberFileSystem) fs;
    fs.mkdirs(new Path("/trips"));
    // Lease renewals run on their own thread, whenever it gets the CPU: they are counted apart
    // (ClientMetrics.leaseRenewals), so a late one cannot land among these counts.
    Path file = new Path("/trips/f");
    long before = efs.client().metrics().metadataCalls();
    fs.create(file).close();
    assertEquals(2, efs.client().metrics().metadataCalls() - before, "new file");

    byte[] old = random(1000, 9);
    try (FSDataOutputStream out = fs.create(file, true)) {
      out.write(old);
    }
    before = efs.client().metrics().metadataCalls();
    fs.create(file, true).close();
    assertEquals(2, efs.client().metrics().metadataCalls() - before, "overwritten file");
    assertEquals(0, fs.getFileStatus(file).getLen(), "the new, empty file replaced the old");

    before = efs.client().metrics().metadataCalls();
    fs.createNonRecursive(file, true, 4096, (short) 1, 1 << 20, null).close();
    assertEquals(2, efs.client().metrics().metadataCalls() - before, "non-recursive create");

    assertThrows(
        org.apache.hadoop.fs.FileAlreadyExistsException.class, () -> fs.create(file, false));
    assertThrows(
        org.apache.hadoop.fs.FileAlreadyExistsException.class,
        () -> fs.create(new Path("/trips"), true));
    assertTrue(fs.getFileStatus(new Path("/trips")).isDirectory(), "a directory is never replaced");
    assertThrows(
        FileNotFoundException.class,
        () ->
            fs.createNonRecursive(new Path("/trips/none/f"), true, 4096, (short) 1, 1 << 20, null));
    assertThrows(
        org.apache.hadoop.fs.ParentNotDirectoryException.class,
        () -> fs.createNonRecursive(new Path("/trips/f/g"), true, 4096, (short) 1, 1 << 20, null));
    assertFalse(fs.exists(new Path("/trips/none")), "a non-recursive create makes no parent");
  }

  @Test
  void registeredThroughServiceLoader() throws Exception {
    assertEquals(
        EmberFileSystem.class, FileSystem.getFileSystemClass("ember", new Configuration()));
  }

  @Test
  void hadoopFsShellWorksWithHadoopsExitCodes(@TempDir java.nio.file.Path tmp) throws Exception {
    byte[] content = random(200_000, 3);
    java.nio.file.Path local = tmp.resolve("local.bin");
    Files.write(local, content);

    assertEquals("0", shell("-mkdir", "-p", "/shell/a/b")[0]);
    assertEquals("1", shell("-mkdir", "/shell/a/b")[0]); // exists, no -p
    assertEquals("0", shell("-put", local.toString(), "/shell/a/b/")[0]);
    assertEquals("1", shell("-put", local.toString(), "/shell/a/b/local.bin")[0]); // exists
    String[] ls = shell("-ls", "-R", "/shell");
    assertEquals("0", ls[0]);
    assertTrue(ls[1].contains("/shell/a/b/local.bin"), ls[1]);
    assertTrue(ls[1].contains("200000"), ls[1]);
    String[] cat = shell("-cat", "/shell/a/b/local.bin");
    assertEquals("0", cat[0]);
    assertArrayEquals(content, lastStdout);
    assertEquals("0", shell("-mv", "/shell/a/b/local.bin", "/shell/moved.bin")[0]);
    String[] du = shell("-du", "-s", "/shell");
    assertEquals("0", du[0]);
    assertTrue(du[1].startsWith("200000"), du[1]);
    String[] missing = shell("-cat", "/shell/nope");
    assertEquals("1", missing[0]);
    assertTrue(missing[2].contains("/shell/nope"), missing[2]);
    assertEquals("1", shell("-ls", "/shell/nope")[0]);
    assertEquals("1", shell("-rm", "/shell/a")[0]); // a directory without -r
    assertEquals("0", shell("-rm", "-r", "/shell")[0]);
    assertFalse(fs.exists(new Path("/shell")));
  }

  /**
   * Modes, owners and groups through Hadoop's API and shell: creates apply the umask, and set calls
   * reach the name node. Without TLS every caller is the super-user, so each change is allowed, and
   * statuses name the current user as owner (the name node cannot tell callers apart); the TLS
   * cluster's checks are PermissionsOverTlsTest's.
   */
  @Test
  void permissionsAndOwnersGoThroughHadoopsApiAndShell() throws Exception {
    Path dir = new Path("/perm");
    assertTrue(fs.mkdirs(dir, new org.apache.hadoop.fs.permission.FsPermission((short) 0777)));
    FileStatus st = fs.getFileStatus(dir);
    assertEquals(0755, st.getPermission().toShort()); // 0777 less the default umask, 022
    String me = org.apache.hadoop.security.UserGroupInformation.getCurrentUser().getShortUserName();
    assertEquals(me, st.getOwner());
    assertEquals(me, st.getGroup());
    Path file = new Path(dir, "f");
    fs.create(file).close();
    assertEquals(0644, fs.getFileStatus(file).getPermission().toShort());

    fs.setPermission(file, new org.apache.hadoop.fs.permission.FsPermission((short) 0640));
    fs.setOwner(file, "alice", "staff");
    assertEquals(0640, fs.getFileStatus(file).getPermission().toShort());
    assertEquals(me, fs.getFileStatus(file).getOwner());
    fs.setOwner(file, null, "eng");
    try (io.ember.client.EmberClient ember = cluster.newClient()) {
      io.ember.protocol.NodeStatus kept = ember.lookup("/perm/f");
      assertEquals("alice", kept.owner());
      assertEquals("eng", kept.group());
    }

    assertEquals("0", shell("-chmod", "1700", "/perm")[0]);
    assertEquals("0", shell("-chown", "bob:eng", "/perm")[0]);
    st = fs.getFileStatus(dir);
    assertEquals(01700, st.getPermission().toShort());
    assertTrue(st.getPermission().getStickyBit());
    String[] ls = shell("-ls", "/");
    assertTrue(
        java.util.regex.Pattern.compile("(?m)^drwx-----T +- .* /perm$").matcher(ls[1]).find(),
        ls[1]);

    assertThrows(
        FileNotFoundException.class,
        () ->
            fs.setPermission(
                new Path("/perm-none"),
                new org.apache.hadoop.fs.permission.FsPermission((short) 0700)));
    assertTrue(
        EmberFileSystem.translate(
                new io.ember.protocol.EmberException(
                    io.ember.protocol.ErrorCode.PERMISSION_DENIED, "cannot read /x"))
            instanceof org.apache.hadoop.security.AccessControlException);
    fs.delete(dir, true);
  }

  @Test
  void catThroughTheShellReturnsTheBytes(@TempDir java.nio.file.Path tmp) throws Exception {
    String text = "line one\nline two\n";
    try (FSDataOutputStream out = fs.create(new Path("/cat.txt"))) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
    String[] cat = shell("-cat", "/cat.txt");
    assertEquals("0", cat[0]);
    assertEquals(text, cat[1]);
    fs.delete(new Path("/cat.txt"), false);
  }

  @Test
  void fileContextWorksThroughTheAbstractFileSystem() throws Exception {
    Configuration c = new Configuration(conf);
    c.set("fs.AbstractFileSystem.ember.impl", EmberFs.class.getName());
    FileContext fc = FileContext.getFileContext(uri, c);
    Path p = new Path("/fc/file");
    byte[] data = random(100_000, 4);
    try (FSDataOutputStream out =
        fc.create(p, EnumSet.of(CreateFlag.CREATE), Options.CreateOpts.createParent())) {
      out.write(data);
    }
    try (FSDataInputStream in = fc.open(p)) {
      byte[] back = new byte[data.length];
      in.readFully(0, back);
      assertArrayEquals(data, back);
    }
    fc.rename(p, new Path("/fc/renamed"));
    assertEquals(data.length, fc.getFileStatus(new Path("/fc/renamed")).getLen());
    assertTrue(fc.delete(new Path("/fc"), true));
  }

  @Test
  void blockLocationsNameTheDataNodesHosts() throws Exception {
    Path p = new Path("/blocks.bin");
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(random(5 * 65536 + 100, 5));
    }
    FileStatus st = fs.getFileStatus(p);
    assertEquals(65536, st.getBlockSize());
    BlockLocation[] all = fs.getFileBlockLocations(st, 0, st.getLen());
    assertEquals(6, all.length);
    for (int i = 0; i < all.length; i++) {
      assertEquals((long) i * 65536, all[i].getOffset());
      assertEquals("127.0.0.1", all[i].getHosts()[0]);
      assertTrue(all[i].getNames()[0].contains("127.0.0.1:"), all[i].getNames()[0]);
    }
    assertEquals(100, all[5].getLength());
    BlockLocation[] middle = fs.getFileBlockLocations(st, 65536 + 10, 65536);
    assertEquals(2, middle.length);
    assertEquals(65536, middle[0].getOffset());
    assertEquals(0, fs.getFileBlockLocations(st, st.getLen(), 10).length);
    fs.delete(p, false);
  }

  @Test
  void storageClassOptionPutsTheBlocksThere() throws Exception {
    String other = EmberContractStorage.other();
    Path p = new Path("/" + other + ".bin");
    try (FSDataOutputStream out =
        (FSDataOutputStream)
            fs.createFile(p).opt(EmberFileSystem.STORAGE_CLASS_KEY, other).build()) {
      out.write(new byte[10]);
    }
    Path q = new Path("/default.bin");
    try (FSDataOutputStream out = fs.create(q)) {
      out.write(new byte[10]);
    }
    EmberFileSystem efs = (EmberFileSystem) fs;
    assertEquals(
        io.ember.protocol.StorageClass.parse(other),
        efs.client().blockLocations("/" + other + ".bin").get(0).storageClass());
    assertEquals(
        io.ember.protocol.StorageClass.parse(EmberContractStorage.current()),
        efs.client().blockLocations("/default.bin").get(0).storageClass());
    assertThrows(
        IllegalArgumentException.class,
        () -> fs.createFile(new Path("/x")).must("ember.unknown-option", "1").build());
    Configuration bad = new Configuration(conf);
    bad.set(EmberFileSystem.STORAGE_CLASS_KEY, "tape");
    IOException init = assertThrows(IOException.class, () -> FileSystem.newInstance(uri, bad));
    assertTrue(init.getMessage().contains("tape"), init.getMessage());
  }

  /** The storage class under test and the other one. */
  static final class EmberContractStorage {
    static String current() {
      return io.ember.hadoop.contract.EmberContract.storageClass();
    }

    static String other() {
      return current().equals("nvmf") ? "dram" : "nvmf";
    }
  }

  @Test
  void hflushSendsButDoesNotPublishAndAppendIsRefused() throws Exception {
    Path p = new Path("/flushed.bin");
    FSDataOutputStream out = fs.create(p);
    out.write(random(1000, 6));
    assertFalse(out.hasCapability(StreamCapabilities.HFLUSH));
    out.hflush();
    assertEquals(0, fs.getFileStatus(p).getLen());
    out.close();
    assertEquals(1000, fs.getFileStatus(p).getLen());
    assertThrows(UnsupportedOperationException.class, () -> fs.append(p));
  }

  @Test
  void statisticsCountBytesAndOperations() throws Exception {
    FileSystem.Statistics stats = FileSystem.getStatistics("ember", EmberFileSystem.class);
    long written = stats.getBytesWritten();
    long read = stats.getBytesRead();
    Path p = new Path("/stats.bin");
    byte[] data = random(70_000, 7);
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(data);
    }
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(new byte[data.length]);
      assertEquals(
          data.length,
          IOStatisticsSupport.retrieveIOStatistics(in)
              .counters()
              .get(StreamStatisticNames.STREAM_READ_BYTES));
    }
    assertEquals(data.length, stats.getBytesWritten() - written);
    assertEquals(data.length, stats.getBytesRead() - read);
  }

  @Test
  void missingPathsAndDirectoriesGiveHadoopsExceptions() throws Exception {
    assertThrows(FileNotFoundException.class, () -> fs.getFileStatus(new Path("/none")));
    assertThrows(FileNotFoundException.class, () -> fs.open(new Path("/none")));
    fs.mkdirs(new Path("/adir"));
    assertThrows(FileNotFoundException.class, () -> fs.open(new Path("/adir")));
    assertThrows(
        org.apache.hadoop.fs.FileAlreadyExistsException.class,
        () -> fs.create(new Path("/adir"), false));
  }

  @Test
  void unreachableNameNodeFailsInitializeWithItsAddress() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Configuration c = new Configuration();
    c.set("ember.rpc.connect-timeout", "1s");
    URI nowhere = URI.create("ember://127.0.0.1:" + port + "/");
    IOException e = assertThrows(IOException.class, () -> FileSystem.newInstance(nowhere, c));
    assertTrue(e.getMessage().contains("name node at 127.0.0.1:" + port), e.getMessage());
  }
}
