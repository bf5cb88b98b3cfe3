package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bad input from raw sockets: each gets an error reply or a closed connection, the server stays up
 * and the next good client is served. Over Netty's native epoll transport here, and over NIO (what
 * the shaded jars use) in {@link RpcServerNioTest}.
 */
class RpcServerTest {
  private static final int MAX_FRAME = 64 << 10;

  /**
   * How long a test waits for what the server does by itself: far longer than it takes on a starved
   * machine, so only a real failure reaches it.
   */
  private static final long PATIENCE_MILLIS = 60_000;

  private RpcServer server;
  private RpcClients clients;
  private HostPort address;

  /** LOOKUP answers a status naming the path's length; DF fails; BLOCK_READ returns bytes. */
  private static final class TestService implements RpcService {
    @Override
    public Message handle(io.netty.channel.Channel ch, MessageType type, ByteBuf in)
        throws EmberException {
      switch (type) {
        case LOOKUP:
          {
            String path = Messages.PathRequest.decode(in).path();
            return new NodeStatus(
                path.length(), NodeType.FILE, path.length(), 0, 4096, StorageClass.DRAM, 0, false);
          }
        case BLOCK_READ:
          {
            Messages.BlockReadRequest r = Messages.BlockReadRequest.decode(in);
            ByteBuf data = ch.alloc().buffer(r.length());
            data.writeZero(r.length());
            return new Messages.DataResponse(data);
          }
        default:
          throw new EmberException(ErrorCode.NOT_FOUND, "nothing here for " + type);
      }
    }
  }

  /** The Netty transport of the server and clients: native epoll here, NIO in a subclass. */
  String transport() {
    return "epoll";
  }

  /** The defaults, on this binding's transport. */
  EmberConfig base() {
    return EmberConfig.defaults().with(EmberKeys.RPC_TRANSPORT, transport());
  }

  @BeforeEach
  void start() throws Exception {
    EmberConfig config =
        base()
            .with(EmberKeys.MAX_FRAME_BYTES, Integer.toString(MAX_FRAME))
            .with(EmberKeys.IO_THREADS, "1")
            .with(EmberKeys.RPC_TIMEOUT, PATIENCE_MILLIS + "ms");
    server = new RpcServer("test server", config, new TestService());
    address = new HostPort("127.0.0.1", server.start("127.0.0.1", 0).getPort());
    clients = new RpcClients(config, "test-client", 1);
  }

  @AfterEach
  void stop() {
    clients.close();
    server.close();
  }

  private NodeStatus lookup(String path) throws EmberException {
    return Futures.await(
        clients
            .open(address, "test server")
            .thenCompose(
                c ->
                    c.call(MessageType.LOOKUP, new Messages.PathRequest(path), NodeStatus::decode)
                        .whenComplete((v, e) -> c.close())));
  }

  private void assertServerStillServes() throws EmberException {
    assertEquals(5, lookup("/good").length());
  }

  /** A raw connection that writes bytes and reads frames back. */
  private final class Raw implements AutoCloseable {
    final Socket socket;
    final DataOutputStream out;
    final DataInputStream in;

    Raw() throws IOException {
      socket = new Socket(InetAddress.getLoopbackAddress(), address.port());
      socket.setSoTimeout((int) PATIENCE_MILLIS);
      out = new DataOutputStream(socket.getOutputStream());
      in = new DataInputStream(socket.getInputStream());
    }

    void frame(int version, int type, int flags, long id, byte[] payload) throws IOException {
      out.writeInt(Frame.HEADER_BYTES + payload.length);
      out.writeByte(version);
      out.writeByte(type);
      out.writeByte(flags);
      out.writeLong(id);
      out.write(payload);
      out.flush();
    }

    /** Reads one frame; returns {flags, requestId, errorCode or -1}. */
    long[] readFrame() throws IOException {
      int len = in.readInt();
      in.readByte();
      in.readByte();
      int flags = in.readByte();
      long id = in.readLong();
      byte[] payload = new byte[len - Frame.HEADER_BYTES];
      in.readFully(payload);
      long code = -1;
      if ((flags & Frame.FLAG_ERROR) != 0) {
        code = java.nio.ByteBuffer.wrap(payload).getInt();
      }
      return new long[] {flags, id, code};
    }

    boolean closedByPeer() throws IOException {
      try {
        return in.read() < 0;
      } catch (SocketTimeoutException e) {
        return false;
      } catch (IOException e) {
        return true; // reset
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  private static byte[] pathPayload(String path) {
    ByteBuf b = Unpooled.buffer();
    try {
      new Messages.PathRequest(path).encode(b);
      byte[] out = new byte[b.readableBytes()];
      b.readBytes(out);
      return out;
    } finally {
      b.release();
    }
  }

  @Test
  void answersGoodRequests() throws Exception {
    try (Raw raw = new Raw()) {
      raw.frame(Frame.VERSION, MessageType.LOOKUP.code(), 0, 42, pathPayload("/abc"));
      long[] f = raw.readFrame();
      assertEquals(Frame.FLAG_RESPONSE, f[0]);
      assertEquals(42, f[1]);
    }
  }

  @Test
  void unknownTypeGetsAnErrorAndTheConnectionStaysUsable() throws Exception {
    try (Raw raw = new Raw()) {
      raw.frame(Frame.VERSION, 99, 0, 7, new byte[3]);
      long[] f = raw.readFrame();
      assertEquals(7, f[1]);
      assertEquals(ErrorCode.UNKNOWN_MESSAGE.code(), f[2]);
      raw.frame(Frame.VERSION, MessageType.LOOKUP.code(), 0, 8, pathPayload("/x"));
      assertEquals(8, raw.readFrame()[1]);
    }
  }

  @Test
  void malformedPayloadGetsAnErrorAndTheConnectionStaysUsable() throws Exception {
    try (Raw raw = new Raw()) {
      // A path whose length says 1000 bytes in a 6-byte payload.
      raw.frame(
          Frame.VERSION,
          MessageType.LOOKUP.code(),
          0,
          9,
          new byte[] {0, 0, 3, (byte) 0xe8, 'a', 'b'});
      long[] f = raw.readFrame();
      assertEquals(9, f[1]);
      assertEquals(ErrorCode.MALFORMED_FRAME.code(), f[2]);
      raw.frame(Frame.VERSION, MessageType.LOOKUP.code(), 0, 10, new byte[0]);
      assertEquals(ErrorCode.MALFORMED_FRAME.code(), raw.readFrame()[2]);
      raw.frame(Frame.VERSION, MessageType.LOOKUP.code(), 0, 11, pathPayload("/y"));
      assertEquals(-1, raw.readFrame()[2]);
    }
  }

  @Test
  void wrongVersionAndResponseFlagAreRefused() throws Exception {
    try (Raw raw = new Raw()) {
      raw.frame(9, MessageType.LOOKUP.code(), 0, 1, pathPayload("/a"));
      assertEquals(ErrorCode.UNSUPPORTED_VERSION.code(), raw.readFrame()[2]);
      raw.frame(
          Frame.VERSION, MessageType.LOOKUP.code(), Frame.FLAG_RESPONSE, 2, pathPayload("/a"));
      assertEquals(ErrorCode.MALFORMED_FRAME.code(), raw.readFrame()[2]);
    }
    assertServerStillServes();
  }

  @Test
  void oversizeLengthClosesTheConnectionWithoutAllocating() throws Exception {
    try (Raw raw = new Raw()) {
      raw.out.writeInt(Integer.MAX_VALUE); // 2 GiB promised
      raw.out.write(new byte[100]);
      raw.out.flush();
      long[] f = raw.readFrame();
      assertEquals(0, f[1]);
      assertEquals(ErrorCode.FRAME_TOO_LARGE.code(), f[2]);
      assertTrue(raw.closedByPeer());
    }
    assertServerStillServes();
  }

  @Test
  void lengthShorterThanTheHeaderClosesTheConnection() throws Exception {
    try (Raw raw = new Raw()) {
      raw.out.writeInt(3);
      raw.out.write(new byte[3]);
      raw.out.flush();
      assertEquals(ErrorCode.MALFORMED_FRAME.code(), raw.readFrame()[2]);
      assertTrue(raw.closedByPeer());
    }
    assertServerStillServes();
  }

  @Test
  void garbageStreamsNeverStopTheServer() throws Exception {
    Random r = new Random(7);
    for (int i = 0; i < 50; i++) {
      try (Raw raw = new Raw()) {
        byte[] junk = new byte[1 + r.nextInt(4000)];
        r.nextBytes(junk);
        raw.out.write(junk);
        raw.out.flush();
      } catch (IOException ignored) {
        // the server may close on us mid-write
      }
    }
    assertServerStillServes();
  }

  @Test
  void truncatedFrameThenDisconnectAffectsNobody() throws Exception {
    try (Raw raw = new Raw()) {
      raw.out.writeInt(1000);
      raw.out.write(new byte[50]);
      raw.out.flush();
    }
    assertServerStillServes();
    awaitNoConnections();
  }

  /** Waits until the server holds no connection: the truncated one must go, as the lookup's. */
  private void awaitNoConnections() throws Exception {
    long deadline = System.nanoTime() + PATIENCE_MILLIS * 1_000_000;
    while (server.connectionCount() > 0) {
      assertTrue(
          System.nanoTime() - deadline < 0,
          server.connectionCount() + " connection(s) still open after " + PATIENCE_MILLIS + " ms");
      Thread.sleep(10);
    }
  }

  @Test
  void clientThatNeverReadsAnswersDoesNotStopOthers() throws Exception {
    try (Raw raw = new Raw()) {
      ByteBuf req = Unpooled.buffer();
      new Messages.BlockReadRequest(1L, 1, 1, 0, 60_000).encode(req);
      byte[] body = new byte[req.readableBytes()];
      req.readBytes(body);
      req.release();
      // ~240 MB of answers asked for and never read: the server must stop reading this socket,
      // not queue them all.
      AtomicInteger sent = new AtomicInteger();
      Thread writer =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < 4000; i++) {
                    raw.frame(Frame.VERSION, MessageType.BLOCK_READ.code(), 0, i, body);
                    sent.incrementAndGet();
                  }
                } catch (IOException ignored) {
                  // blocked sends end when the socket closes
                }
              });
      writer.setDaemon(true);
      writer.start();
      // 400 requests (a few KiB, never enough to block the writer) ask for 24 MB of answers,
      // more than the sockets' buffers hold: the server has had to stop reading by then.
      long deadline = System.nanoTime() + PATIENCE_MILLIS * 1_000_000;
      while (sent.get() < 400) {
        assertTrue(System.nanoTime() - deadline < 0, "only " + sent.get() + " requests sent");
        Thread.sleep(10);
      }
      assertServerStillServes();
    }
  }

  @Test
  void manyCallsInFlightAreMatchedById() throws Exception {
    RpcClient c = Futures.await(clients.open(address, "test server"));
    try {
      List<CompletableFuture<NodeStatus>> calls = new ArrayList<>();
      for (int i = 0; i < 2000; i++) {
        calls.add(
            c.call(
                MessageType.LOOKUP,
                new Messages.PathRequest("/" + "x".repeat(i % 200)),
                NodeStatus::decode));
      }
      for (int i = 0; i < calls.size(); i++) {
        assertEquals(1 + i % 200, calls.get(i).join().length());
      }
    } finally {
      c.close();
    }
  }

  @Test
  void serverErrorsCarryCodeAndMessage() {
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                Futures.await(
                    clients
                        .open(address, "test server")
                        .thenCompose(
                            c -> c.call(MessageType.DF, Message.EMPTY, ResponseDecoder.EMPTY))));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("nothing here for DF"), e.getMessage());
  }

  @Test
  void silentPeerTimesOutTheCallNotTheProcess() throws Exception {
    EmberConfig fast = base().with(EmberKeys.RPC_TIMEOUT, "200ms");
    try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        RpcClients c = new RpcClients(fast, "timeout-client", 1)) {
      HostPort hp = new HostPort("127.0.0.1", silent.getLocalPort());
      EmberException e =
          assertThrows(
              EmberException.class,
              () ->
                  Futures.await(
                      c.open(hp, "silent server")
                          .thenCompose(
                              rc ->
                                  rc.call(
                                      MessageType.LOOKUP,
                                      new Messages.PathRequest("/a"),
                                      NodeStatus::decode))));
      assertEquals(ErrorCode.TIMEOUT, e.code());
      assertTrue(e.getMessage().contains("silent server"), e.getMessage());
      // The configured timeout ended it, not the default one.
      assertTrue(e.getMessage().contains("no answer within 200 ms"), e.getMessage());
    }
  }

  @Test
  void peerThatClosesFailsPendingCalls() throws Exception {
    try (ServerSocket closing = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread t =
          new Thread(
              () -> {
                try (Socket s = closing.accept()) {
                  s.getInputStream().read();
                } catch (IOException ignored) {
                  // closing is the point
                }
              });
      t.start();
      HostPort hp = new HostPort("127.0.0.1", closing.getLocalPort());
      EmberException e =
          assertThrows(
              EmberException.class,
              () ->
                  Futures.await(
                      clients
                          .open(hp, "closing server")
                          .thenCompose(
                              rc ->
                                  rc.call(
                                      MessageType.LOOKUP,
                                      new Messages.PathRequest("/a"),
                                      NodeStatus::decode))));
      assertEquals(ErrorCode.CONNECTION_CLOSED, e.code());
      t.join();
    }
  }

  @Test
  void unreachablePeerFailsWithItsAddress() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> Futures.await(clients.open(new HostPort("127.0.0.1", port), "name node")));
    assertEquals(ErrorCode.UNREACHABLE, e.code());
    assertTrue(e.getMessage().contains("name node at 127.0.0.1:" + port), e.getMessage());
  }

  @Test
  void bindingATakenPortFailsClearly() throws Exception {
    RpcServer second = new RpcServer("second", base(), new TestService());
    EmberException e =
        assertThrows(EmberException.class, () -> second.start("127.0.0.1", address.port()));
    assertTrue(
        e.getMessage().contains("cannot listen on 127.0.0.1:" + address.port()), e.getMessage());
    second.close();
  }

  @Test
  void closeIsIdempotentAndDropsConnections() throws Exception {
    try (Raw raw = new Raw()) {
      raw.frame(Frame.VERSION, MessageType.LOOKUP.code(), 0, 1, pathPayload("/a"));
      raw.readFrame();
      server.close();
      server.close();
      assertTrue(raw.closedByPeer());
    }
  }
}
