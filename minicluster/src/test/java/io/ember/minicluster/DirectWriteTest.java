package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static io.ember.minicluster.TestFiles.readAll;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNode;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Frame;
import io.ember.protocol.HostPort;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.netty.channel.epoll.Epoll;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A DRAM data node lands the bytes of large writes in their blocks straight from the socket,
 * whatever pieces they arrive in, and a writer that stops or vanishes in the middle of one neither
 * counts nor lets its late bytes overwrite the file that reused the block.
 */
class DirectWriteTest {
  private static final Duration DEADLINE = Duration.ofMinutes(2);
  private static final int BLOCK = 1 << 20;

  private MiniCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private DramDataNode datanode() {
    return cluster.datanodes().get(0);
  }

  private Socket connect() throws IOException {
    HostPort hp = HostPort.parse(datanode().endpoint(), 0);
    Socket s = new Socket(hp.host(), hp.port());
    s.setSoTimeout((int) DEADLINE.toMillis());
    return s;
  }

  /** Writes a small file and returns its one block's location, for raw frames to name. */
  private static BlockLocation smallFile(EmberClient client, String path) throws Exception {
    try (EmberOutputStream out = client.create(path, CreateOptions.DEFAULT)) {
      out.write(data(100, 1));
    }
    return client.blockLocations(path).get(0);
  }

  @ParameterizedTest
  @ValueSource(strings = {"epoll", "nio"})
  void largeWritesLandInTheBlockWhateverPiecesTheyArriveIn(String transport) throws Exception {
    cluster = directWrites().set(EmberKeys.RPC_TRANSPORT, transport).build();
    EmberClient client = cluster.newClient();
    BlockLocation b = smallFile(client, "/f");
    byte[] first = data(300_000, 2);
    byte[] second = data(200_000, 3);
    long directBefore = datanode().bytesWrittenDirectly();
    // Two writes and a read of both in one stream, cut at random places: the second write's
    // header follows the first's last byte, so a socket read into the block must stop there.
    ByteArrayOutputStream stream = new ByteArrayOutputStream();
    stream.write(writeFrame(1, b, 0, first, b.incarnation()));
    stream.write(writeFrame(2, b, first.length, second, b.incarnation()));
    stream.write(readFrame(3, b, 0, first.length + second.length));
    byte[] all = stream.toByteArray();
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      Random cuts = new Random(7);
      for (int at = 0; at < all.length; ) {
        int n = Math.min(all.length - at, 1 + cuts.nextInt(cuts.nextBoolean() ? 64 : 150_000));
        out.write(all, at, n);
        out.flush();
        at += n;
      }
      Map<Long, Reply> replies = replies(s, 3);
      assertEquals(0, replies.get(1L).errorCode(), () -> replies.get(1L).toString());
      assertEquals(0, replies.get(2L).errorCode(), () -> replies.get(2L).toString());
      byte[] expected = new byte[first.length + second.length];
      System.arraycopy(first, 0, expected, 0, first.length);
      System.arraycopy(second, 0, expected, first.length, second.length);
      assertArrayEquals(expected, replies.get(3L).body());
    }
    assertEquals(first.length + second.length, datanode().bytesWrittenDirectly() - directBefore);
    // And through the client, in the transport's own pieces.
    byte[] big = data(3 * BLOCK + 12_345, 4);
    try (EmberOutputStream out = client.create("/big", CreateOptions.DEFAULT)) {
      out.write(big);
    }
    assertArrayEquals(big, readAll(client, "/big"));
    assertTrue(
        datanode().bytesWrittenDirectly() - directBefore >= 3L * BLOCK,
        "the client's 1 MiB writes took the direct path");
  }

  @ParameterizedTest
  @ValueSource(strings = {"auto", "FALSE", "auto over nio"})
  void byDefaultLargeWritesLandDirectlyWhereTheNodeCanSetItsSocketsLowWaterMark(String setting)
      throws Exception {
    MiniCluster.Builder builder = MiniCluster.builder();
    if (setting.equals("auto over nio")) {
      // NIO cannot set the mark.
      builder.set(EmberKeys.RPC_TRANSPORT, "nio");
    } else if (!setting.equals("auto")) {
      builder.set(DramDataNodeKeys.DIRECT_WRITES, setting);
    }
    cluster = builder.build();
    EmberClient client = cluster.newClient();
    byte[] big = data(3 * BLOCK + 12_345, 12);
    try (EmberOutputStream out = client.create("/big", CreateOptions.DEFAULT)) {
      out.write(big);
    }
    assertArrayEquals(big, readAll(client, "/big"));
    long direct = datanode().bytesWrittenDirectly();
    if (datanode().writesDirectly()) {
      assertTrue(direct >= 3L * BLOCK, "only " + direct + " bytes landed directly");
    } else {
      assertEquals(0, direct);
    }
    if (!setting.equals("auto")) {
      assertFalse(datanode().writesDirectly());
    } else if (Epoll.isAvailable() && linux510OrLater()) {
      // As on this project's CI machines: the mark can be set, so auto lands writes directly.
      assertTrue(datanode().writesDirectly(), "auto did not land writes directly");
    }
  }

  private static boolean linux510OrLater() {
    Matcher v = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(System.getProperty("os.version"));
    if (!Set.of("amd64", "aarch64").contains(System.getProperty("os.arch")) || !v.find()) {
      return false;
    }
    int major = Integer.parseInt(v.group(1));
    return major > 5 || (major == 5 && Integer.parseInt(v.group(2)) >= 10);
  }

  @Test
  void aLargeWriteThatIsRefusedIsAnsweredAndTheConnectionGoesOn() throws Exception {
    cluster = directWrites().build();
    EmberClient client = cluster.newClient();
    BlockLocation b = smallFile(client, "/f");
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      out.write(writeFrame(1, b, 0, data(400_000, 5), b.incarnation() + 1));
      out.write(readFrame(2, b, 0, 100));
      out.flush();
      Map<Long, Reply> replies = replies(s, 2);
      assertEquals(ErrorCode.STALE_LOCATION.code(), replies.get(1L).errorCode());
      assertArrayEquals(data(100, 1), replies.get(2L).body());
    }
    assertEquals(0, datanode().directWritesArriving());
    assertEquals(0, datanode().bytesWrittenDirectly(), "a refused write landed bytes");
  }

  @Test
  void aWriterThatVanishesMidWriteCountsForNothingAndHoldsNothingBack() throws Exception {
    cluster = oneBlockCluster("20s");
    EmberClient client = cluster.newClient();
    BlockLocation old = smallFile(client, "/old");
    try (Socket s = connect()) {
      // After the file's 100 bytes, where its writer would go on.
      byte[] frame = writeFrame(1, old, 100, data(600_000, 6), old.incarnation());
      s.getOutputStream().write(frame, 0, frame.length / 2);
      s.getOutputStream().flush();
      awaitTrue(() -> datanode().directWritesArriving() == 1, "the write to begin arriving");
    }
    awaitTrue(() -> datanode().directWritesArriving() == 0, "the vanished write to end");
    // The block's length counts only what was written whole.
    assertArrayEquals(data(100, 1), readAll(client, "/old"));
    client.delete("/old", false);
    // The block goes to a new file at once; its first write must not wait for the vanished one.
    byte[] fresh = data(700_000, 7);
    try (EmberOutputStream out = client.create("/new", CreateOptions.DEFAULT)) {
      out.write(fresh);
    }
    assertEquals(old.address(), client.blockLocations("/new").get(0).address());
    assertArrayEquals(fresh, readAll(client, "/new"));
  }

  @Test
  void aNewFilesWriteWaitsForAnOldWriteStillArrivingAndLandsOverIt() throws Exception {
    cluster = oneBlockCluster("20s");
    EmberClient client = cluster.newClient();
    BlockLocation old = smallFile(client, "/old");
    byte[] stale = new byte[600_000];
    Arrays.fill(stale, (byte) 0x5a);
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      byte[] frame = writeFrame(1, old, 0, stale, old.incarnation());
      int sent = frame.length / 2;
      out.write(frame, 0, sent);
      sent = trickle(out, frame, sent, () -> datanode().directWritesArriving() == 1, "arriving");

      client.delete("/old", false);
      byte[] fresh = data(500_000, 8);
      CompletableFuture<Void> written = writeInBackground(client, "/new", fresh);
      sent = trickle(out, frame, sent, () -> datanode().writesWaiting() > 0, "the new write");
      assertFalse(written.isDone(), "the new write went ahead of bytes still arriving");

      out.write(frame, sent, frame.length - sent);
      out.flush();
      // The old write was allowed when it began, so it is answered; then the new one lands over it.
      assertEquals(0, replies(s, 1).get(1L).errorCode());
      written.get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
      assertEquals(old.address(), client.blockLocations("/new").get(0).address());
      assertArrayEquals(fresh, readAll(client, "/new"));

      // From now on the old file's writes are refused.
      out.write(writeFrame(2, old, 0, stale, old.incarnation()));
      out.flush();
      assertEquals(ErrorCode.STALE_LOCATION.code(), replies(s, 1).get(2L).errorCode());
    }
    assertArrayEquals(data(500_000, 8), readAll(client, "/new"));
  }

  @Test
  void aWriterThatStallsMidWriteIsCutOffAndTheWriteWaitingForItLands() throws Exception {
    cluster = oneBlockCluster("10s");
    // The client waits far longer than the data node lets a stalled write hold its block.
    EmberClient client =
        cluster.newClient(EmberConfig.defaults().with(EmberKeys.RPC_TIMEOUT, "2m"));
    BlockLocation old = smallFile(client, "/old");
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      byte[] frame = writeFrame(1, old, 0, data(600_000, 9), old.incarnation());
      int sent = frame.length / 3;
      out.write(frame, 0, sent);
      sent = trickle(out, frame, sent, () -> datanode().directWritesArriving() == 1, "arriving");

      client.delete("/old", false);
      byte[] fresh = data(300_000, 10);
      CompletableFuture<Void> written = writeInBackground(client, "/new", fresh);
      trickle(out, frame, sent, () -> datanode().writesWaiting() > 0, "the new write");

      // Now it stops: its connection is closed without an answer.
      assertClosedWithoutAnswer(s);
      written.get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
      assertArrayEquals(fresh, readAll(client, "/new"));
    }
  }

  @Test
  void aWriterSendingSlowerThanTheNodeWakesForIsNotCutOff() throws Exception {
    // Looks for stalls every 2 s. The node asks its socket to wake it only once the rest of a
    // write has arrived, so bytes that trickle in wait there unread: the stall check must look at
    // them before it takes the writer for stalled.
    cluster = oneBlockCluster("4s");
    EmberClient client = cluster.newClient();
    BlockLocation b = smallFile(client, "/f");
    byte[] bytes = data(600_000, 11);
    byte[] frame = writeFrame(1, b, 0, bytes, b.incarnation());
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      int sent = frame.length / 3;
      out.write(frame, 0, sent);
      sent = trickle(out, frame, sent, () -> datanode().directWritesArriving() == 1, "arriving");
      // Three looks and more of a byte every 20 ms.
      long trickleUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(7);
      sent = trickle(out, frame, sent, () -> System.nanoTime() > trickleUntil, "7 s of trickle");
      out.write(frame, sent, frame.length - sent);
      out.flush();
      Reply reply = replies(s, 1).get(1L);
      assertEquals(0, reply.errorCode(), reply::toString);
      out.write(readFrame(2, b, 0, bytes.length));
      out.flush();
      assertArrayEquals(bytes, replies(s, 1).get(2L).body());
    }
  }

  @Test
  void aWriteStillArrivingWhenTheNodeRegistersAnewIsCutOffAndHoldsTheNewContentsBackUntilThen()
      throws Exception {
    cluster = oneBlockCluster("20s");
    EmberClient client = cluster.newClient();
    BlockLocation old = smallFile(client, "/old");
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      byte[] frame = writeFrame(1, old, 0, data(600_000, 11), old.incarnation());
      int sent = frame.length / 2;
      out.write(frame, 0, sent);
      sent = trickle(out, frame, sent, () -> datanode().directWritesArriving() == 1, "arriving");

      // A name node that forgot everything: the data node registers anew, its blocks free again.
      cluster.restartNamenodeEmpty();
      trickle(out, frame, sent, () -> datanode().incarnation() != old.incarnation(), "new stamp");

      // The new contents' first write closes the old writer's connection and waits for it to end.
      byte[] fresh = data(300_000, 12);
      try (EmberOutputStream o = client.create("/new", CreateOptions.DEFAULT)) {
        o.write(fresh);
      }
      assertClosedWithoutAnswer(s);
      assertEquals(old.address(), client.blockLocations("/new").get(0).address());
      assertArrayEquals(fresh, readAll(client, "/new"));
    }
    awaitTrue(() -> datanode().directWritesArriving() == 0, "the old write to end");
  }

  /**
   * Sends {@code frame}'s bytes from {@code from} on, one every 20 ms, until {@code until} holds,
   * so that a writer others wait for never looks stalled; returns where it stopped.
   */
  private static int trickle(
      OutputStream out, byte[] frame, int from, BooleanSupplier until, String what)
      throws IOException, InterruptedException {
    long end = System.nanoTime() + DEADLINE.toNanos();
    int at = from;
    out.flush();
    while (!until.getAsBoolean()) {
      if (System.nanoTime() > end || at == frame.length - 1) {
        throw new AssertionError("timed out waiting for " + what);
      }
      out.write(frame[at++]);
      out.flush();
      Thread.sleep(20);
    }
    return at;
  }

  /** The server closed {@code s} without sending anything (a close, or a reset). */
  private static void assertClosedWithoutAnswer(Socket s) {
    try {
      assertEquals(-1, s.getInputStream().read(), "an answer came instead of a close");
    } catch (java.net.SocketTimeoutException e) {
      throw new AssertionError("the connection was not closed", e);
    } catch (IOException reset) {
      // Closed with bytes of ours unread: a reset is a close too.
    }
  }

  private static MiniCluster oneBlockCluster(String rpcTimeout) throws Exception {
    return directWrites()
        .blockSize("1m")
        .dramCapacity("1m")
        .set(EmberKeys.RPC_TIMEOUT, rpcTimeout)
        .build();
  }

  private static MiniCluster.Builder directWrites() {
    return MiniCluster.builder().set(DramDataNodeKeys.DIRECT_WRITES, "true");
  }

  private static CompletableFuture<Void> writeInBackground(
      EmberClient client, String path, byte[] bytes) {
    return CompletableFuture.runAsync(
        () -> {
          try (EmberOutputStream out = client.create(path, CreateOptions.DEFAULT)) {
            out.write(bytes);
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  private static void awaitTrue(BooleanSupplier condition, String what)
      throws InterruptedException {
    long end = System.nanoTime() + DEADLINE.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(10);
    }
  }

  private static byte[] header(int type, long requestId, int bodyBytes) {
    return ByteBuffer.allocate(4 + Frame.HEADER_BYTES)
        .putInt(Frame.HEADER_BYTES + bodyBytes)
        .put((byte) Frame.VERSION)
        .put((byte) type)
        .put((byte) 0)
        .putLong(requestId)
        .array();
  }

  private static byte[] writeFrame(
      long requestId, BlockLocation b, int offset, byte[] bytes, long incarnation) {
    int fields = Messages.BlockWriteRequest.FIELD_BYTES;
    ByteBuffer f = ByteBuffer.allocate(4 + Frame.HEADER_BYTES + fields + bytes.length);
    f.put(header(MessageType.BLOCK_WRITE.code(), requestId, fields + bytes.length))
        .putLong(incarnation)
        .putLong(b.blockId())
        .putLong(b.generation())
        .putLong(b.address() + offset)
        .putInt(bytes.length)
        .put(new byte[BlockToken.BYTES]) // no token: this cluster has no TLS
        .put(bytes);
    return f.array();
  }

  private static byte[] readFrame(long requestId, BlockLocation b, int offset, int length) {
    int fields = 36 + BlockToken.BYTES;
    ByteBuffer f = ByteBuffer.allocate(4 + Frame.HEADER_BYTES + fields);
    f.put(header(MessageType.BLOCK_READ.code(), requestId, fields))
        .putLong(b.incarnation())
        .putLong(b.blockId())
        .putLong(b.generation())
        .putLong(b.address() + offset)
        .putInt(length)
        .put(new byte[BlockToken.BYTES]);
    return f.array();
  }

  /** An answer: its error code (0 for success) and body. */
  private static final class Reply {
    private final int errorCode;
    private final byte[] body;

    Reply(int errorCode, byte[] body) {
      this.errorCode = errorCode;
      this.body = body;
    }

    int errorCode() {
      return errorCode;
    }

    byte[] body() {
      return body;
    }

    @Override
    public String toString() {
      return errorCode == 0
          ? "OK, " + body.length + " bytes"
          : "error " + errorCode + ": " + new String(body, 8, body.length - 8, UTF_8);
    }
  }

  private static Map<Long, Reply> replies(Socket s, int count) throws IOException {
    DataInputStream in = new DataInputStream(s.getInputStream());
    Map<Long, Reply> out = new HashMap<>();
    for (int i = 0; i < count; i++) {
      int length = in.readInt();
      in.readUnsignedByte();
      in.readUnsignedByte();
      int flags = in.readUnsignedByte();
      long requestId = in.readLong();
      byte[] body = new byte[length - Frame.HEADER_BYTES];
      in.readFully(body);
      int code = (flags & Frame.FLAG_ERROR) != 0 ? ByteBuffer.wrap(body).getInt() : 0;
      out.put(requestId, new Reply(code, body));
    }
    return out;
  }
}
