package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.BlockToken;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Frame;
import io.ember.protocol.HostPort;
import io.ember.protocol.MessageType;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Bad frames from raw sockets at the real name node and data node, then normal work. */
class BadFrameClusterTest {
  private static MiniCluster cluster;
  private static EmberClient client;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().blockSize("64k").build();
    client = cluster.newClient();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static HostPort datanode() {
    return HostPort.parse(cluster.datanodes().get(0).endpoint(), 0);
  }

  private static void assertClusterWorks(String name) throws Exception {
    byte[] data = new byte[150_000];
    new Random(name.hashCode()).nextBytes(data);
    try (EmberOutputStream out = client.create("/" + name, CreateOptions.DEFAULT)) {
      out.write(data);
    }
    try (InputStream in = client.open("/" + name)) {
      assertArrayEquals(data, in.readAllBytes());
    }
  }

  private static int errorCodeOfReply(HostPort hp, byte[] bytes) throws IOException {
    try (Socket s = new Socket(hp.host(), hp.port())) {
      s.setSoTimeout(5000);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.write(bytes);
      out.flush();
      DataInputStream in = new DataInputStream(s.getInputStream());
      int len = in.readInt();
      byte[] rest = new byte[len];
      in.readFully(rest);
      return java.nio.ByteBuffer.wrap(rest, Frame.HEADER_BYTES, 4).getInt();
    }
  }

  private static byte[] frame(int type, byte[] payload) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + Frame.HEADER_BYTES + payload.length);
    b.putInt(Frame.HEADER_BYTES + payload.length)
        .put((byte) Frame.VERSION)
        .put((byte) type)
        .put((byte) 0)
        .putLong(77)
        .put(payload);
    return b.array();
  }

  @Test
  void nameNodeSurvivesGarbageUnknownTypesAndLies() throws Exception {
    HostPort nn = cluster.namenodeAddress();
    assertEquals(4, errorCodeOfReply(nn, new byte[] {0x7f, -1, -1, -1, 1, 2, 3})); // too large
    assertEquals(3, errorCodeOfReply(nn, frame(99, new byte[5]))); // unknown type
    assertEquals(
        2, errorCodeOfReply(nn, frame(MessageType.CREATE.code(), new byte[] {0, 0, 0, 9})));
    assertEquals(3, errorCodeOfReply(nn, frame(MessageType.BLOCK_READ.code(), new byte[12])));
    // A run of no blocks, or of more than one answer may hold, is refused as malformed.
    for (MessageType type :
        new MessageType[] {MessageType.ALLOCATE_BLOCKS, MessageType.ALLOCATE_AHEAD}) {
      for (int count : new int[] {0, -1, 1025}) {
        byte[] ask = java.nio.ByteBuffer.allocate(16).putLong(1).putInt(1).putInt(count).array();
        assertEquals(2, errorCodeOfReply(nn, frame(type.code(), ask)), type + " " + count);
      }
    }
    Random r = new Random(3);
    for (int i = 0; i < 20; i++) {
      try (Socket s = new Socket(nn.host(), nn.port())) {
        byte[] junk = new byte[r.nextInt(3000) + 1];
        r.nextBytes(junk);
        s.getOutputStream().write(junk);
      } catch (IOException ignored) {
        // closed by the server mid-write: fine
      }
    }
    assertClusterWorks("after-namenode-garbage");
  }

  /**
   * A BLOCK_READ ({@code dataBytes} -1) or BLOCK_WRITE body for block 1 of generation 1, saying
   * {@code length} bytes, followed by {@code dataBytes} bytes.
   */
  private static byte[] blockRequest(long incarnation, long address, int length, int dataBytes) {
    java.nio.ByteBuffer b =
        java.nio.ByteBuffer.allocate(36 + BlockToken.BYTES + Math.max(0, dataBytes));
    b.putLong(incarnation).putLong(1).putLong(1).putLong(address).putInt(length);
    b.put(new byte[BlockToken.BYTES]); // no token: this cluster has no TLS
    return b.array();
  }

  @Test
  void dataNodeSurvivesBadWritesAndHalfFrames() throws Exception {
    HostPort dn = datanode();
    long inc = cluster.datanodes().get(0).incarnation();
    // BLOCK_WRITE whose length field lies about the data that follows.
    assertEquals(
        2,
        errorCodeOfReply(dn, frame(MessageType.BLOCK_WRITE.code(), blockRequest(inc, 0, 1000, 3))));
    // A write far outside the region.
    assertEquals(
        23,
        errorCodeOfReply(
            dn, frame(MessageType.BLOCK_WRITE.code(), blockRequest(inc, 1L << 40, 4, 4))));
    // A read asking for more than the region.
    assertEquals(
        23,
        errorCodeOfReply(
            dn, frame(MessageType.BLOCK_READ.code(), blockRequest(inc, 0, Integer.MAX_VALUE, -1))));
    // A read and a write naming contents this node does not hold.
    assertEquals(
        ErrorCode.STALE_LOCATION.code(),
        errorCodeOfReply(
            dn, frame(MessageType.BLOCK_READ.code(), blockRequest(inc + 1, 0, 8, -1))));
    assertEquals(
        ErrorCode.STALE_LOCATION.code(),
        errorCodeOfReply(
            dn, frame(MessageType.BLOCK_WRITE.code(), blockRequest(inc + 1, 0, 4, 4))));
    // Half a 1 MiB write, then the client vanishes.
    try (Socket s = new Socket(dn.host(), dn.port())) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.writeInt(Frame.HEADER_BYTES + 36 + BlockToken.BYTES + (1 << 20));
      out.write(new byte[Frame.HEADER_BYTES - 0]);
      out.write(new byte[50_000]);
      out.flush();
    }
    assertClusterWorks("after-datanode-abuse");
  }
}
