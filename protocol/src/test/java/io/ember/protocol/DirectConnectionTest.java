package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Calls made on the caller's thread: answers and errors as over the shared connection, and every
 * failure (a silent server, a restart, garbage, a close mid-call) ends the call and leaves the next
 * one working.
 */
class DirectConnectionTest {
  /** Far longer than anything here takes on a starved machine: only a real failure reaches it. */
  private static final long PATIENCE_SECONDS = 60;

  private final List<AutoCloseable> toClose = new ArrayList<>();

  /**
   * LOOKUP answers a status whose length is the path's (after a hold for /slow); the rest
   * NOT_FOUND.
   */
  private static final class Service implements RpcService {
    final AtomicInteger calls = new AtomicInteger();
    volatile CountDownLatch hold;

    @Override
    public Message handle(io.netty.channel.Channel ch, MessageType type, ByteBuf in)
        throws EmberException {
      calls.incrementAndGet();
      if (type == MessageType.LOOKUP) {
        String path = Messages.PathRequest.decode(in).path();
        CountDownLatch h = hold;
        if (h != null && path.equals("/slow")) {
          try {
            h.await(PATIENCE_SECONDS, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return new NodeStatus(
            path.length(), NodeType.FILE, path.length(), 0, 4096, StorageClass.DRAM, 0, false);
      }
      if (type == MessageType.LIST) {
        // An answer as long as the number asked for: large ones arrive in many reads.
        int n = in.readInt();
        return out -> out.writeInt(n).writeZero(n);
      }
      throw new EmberException(ErrorCode.NOT_FOUND, "nothing here for " + type);
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  private static EmberConfig config(String timeout) {
    return EmberConfig.defaults()
        .with(EmberKeys.RPC_TIMEOUT, timeout)
        .with(EmberKeys.CONNECT_TIMEOUT, "5s");
  }

  /** A server on {@code port} (0: any); returns its port. */
  private int server(Service service, int port) throws EmberException {
    RpcServer s = new RpcServer("test server", config("60s"), service);
    toClose.add(s);
    return s.start("127.0.0.1", port).getPort();
  }

  private DirectConnection direct(int port, String timeout) {
    return direct(port, timeout, Duration.ZERO);
  }

  private DirectConnection direct(int port, String timeout, Duration spinWait) {
    DirectConnection d =
        new DirectConnection(
            new HostPort("127.0.0.1", port), "test server", config(timeout), spinWait);
    toClose.add(d);
    return d;
  }

  /** A shared path that must not be taken. */
  private static <T> CompletableFuture<T> notShared() {
    throw new AssertionError("the shared path was taken");
  }

  private static NodeStatus lookup(DirectConnection d, String path) throws EmberException {
    return Futures.await(
        d.callOr(
            MessageType.LOOKUP,
            new Messages.PathRequest(path),
            NodeStatus::decode,
            DirectConnectionTest::notShared));
  }

  /** Waits until the server has a call in hand. */
  private static void awaitFirstCall(Service service) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (service.calls.get() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    assertTrue(service.calls.get() > 0, "the call reached the server");
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void answersAndServerErrorsComeBackOnTheCallersThread() throws Exception {
    Service service = new Service();
    DirectConnection d = direct(server(service, 0), "60s");
    assertEquals(4, lookup(d, "/abc").length());
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                Futures.await(
                    d.callOr(
                        MessageType.DF,
                        Message.EMPTY,
                        ResponseDecoder.EMPTY,
                        DirectConnectionTest::notShared)));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertEquals("nothing here for DF", e.getMessage());
    // The server's refusal keeps the connection: the next call is answered on it.
    assertEquals(2, lookup(d, "/x").length());
    assertEquals(3, service.calls.get());
  }

  @Test
  void answersOfEverySizeArriveWholeWhetherTheCallerSleepsOrPolls() throws Exception {
    int port = server(new Service(), 0);
    for (Duration spin : List.of(Duration.ZERO, Duration.ofNanos(50_000), Duration.ofMillis(10))) {
      DirectConnection d = direct(port, "60s", spin);
      for (int n : new int[] {0, 1, 4000, 4096, 70_000, 3_000_000, 5}) {
        int answered =
            Futures.await(
                d.callOr(
                    MessageType.LIST,
                    out -> out.writeInt(n),
                    in -> in.readInt() + in.readableBytes(),
                    DirectConnectionTest::notShared));
        assertEquals(2 * n, answered, "answer of " + n + " bytes, polling " + spin);
      }
      assertEquals(9, lookup(d, "/sleeping").length());
    }
  }

  @Test
  void aBusyConnectionSendsTheCallerToTheSharedPath() throws Exception {
    Service service = new Service();
    service.hold = new CountDownLatch(1);
    DirectConnection d = direct(server(service, 0), "60s");
    CompletableFuture<NodeStatus> slow =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return lookup(d, "/slow");
              } catch (EmberException e) {
                throw new java.util.concurrent.CompletionException(e);
              }
            });
    awaitFirstCall(service);
    CompletableFuture<NodeStatus> sharedAnswer = CompletableFuture.completedFuture(null);
    CompletableFuture<NodeStatus> other =
        d.callOr(
            MessageType.LOOKUP,
            new Messages.PathRequest("/other"),
            NodeStatus::decode,
            () -> sharedAnswer);
    assertSame(sharedAnswer, other, "the busy connection's caller took the shared path");
    service.hold.countDown();
    assertEquals(5, slow.get(PATIENCE_SECONDS, TimeUnit.SECONDS).length());
  }

  @Test
  void aSilentServerTimesOutAndTheNextCallUsesANewConnection() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      List<Socket> accepted = new ArrayList<>();
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    Socket a = silent.accept();
                    synchronized (accepted) {
                      accepted.add(a);
                    }
                  }
                } catch (IOException e) {
                  // closed
                }
              });
      acceptor.setDaemon(true);
      acceptor.start();
      DirectConnection d = direct(silent.getLocalPort(), "300ms");
      EmberException e = assertThrows(EmberException.class, () -> lookup(d, "/a"));
      assertEquals(ErrorCode.TIMEOUT, e.code());
      assertEquals(
          "LOOKUP to test server 127.0.0.1:"
              + silent.getLocalPort()
              + " got no answer within 300 ms",
          e.getMessage());
      // The timed-out call's connection is dropped (its late answer would be read as the next
      // call's): the next call opens another.
      assertThrows(EmberException.class, () -> lookup(d, "/b"));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
      while (System.nanoTime() < deadline) {
        synchronized (accepted) {
          if (accepted.size() == 2) {
            break;
          }
        }
        Thread.sleep(10);
      }
      synchronized (accepted) {
        assertEquals(2, accepted.size());
        for (Socket a : accepted) {
          a.close();
        }
      }
    }
  }

  @Test
  void aRestartedServerIsCalledOnANewConnectionWithoutAnError() throws Exception {
    int port = freePort();
    Service service = new Service();
    RpcServer first = new RpcServer("test server", config("60s"), service);
    first.start("127.0.0.1", port);
    DirectConnection d = direct(port, "60s");
    assertEquals(2, lookup(d, "/a").length());
    first.close();
    server(service, port);
    // The old connection's close was seen before anything was sent on it: a new one is safe.
    assertEquals(3, lookup(d, "/ab").length());
  }

  @Test
  void aServerThatCannotBeReachedIsOneClearError() throws Exception {
    int port = freePort();
    DirectConnection d = direct(port, "60s");
    EmberException e = assertThrows(EmberException.class, () -> lookup(d, "/a"));
    assertEquals(ErrorCode.UNREACHABLE, e.code());
    assertEquals(
        "cannot connect to the test server at 127.0.0.1:"
            + port
            + ": connection refused (is it running, on that port?)",
        e.getMessage());
    // For a while after, calls go the shared way, which tries to connect on its own.
    CompletableFuture<NodeStatus> shared = CompletableFuture.completedFuture(null);
    assertSame(
        shared,
        d.callOr(
            MessageType.LOOKUP, new Messages.PathRequest("/a"), NodeStatus::decode, () -> shared));
  }

  @Test
  void garbageFromTheServerFailsTheCallAndDropsTheConnection() throws Exception {
    try (ServerSocket liar = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread t =
          new Thread(
              () -> {
                try (Socket a = liar.accept()) {
                  InputStream in = a.getInputStream();
                  in.read(new byte[64]);
                  OutputStream out = a.getOutputStream();
                  // A frame claiming 2 GiB.
                  out.write(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1, 2, 3});
                  out.flush();
                  in.read(); // until the client drops it
                } catch (IOException e) {
                  // closed
                }
              });
      t.setDaemon(true);
      t.start();
      DirectConnection d = direct(liar.getLocalPort(), "60s");
      EmberException e = assertThrows(EmberException.class, () -> lookup(d, "/a"));
      assertEquals(ErrorCode.FRAME_TOO_LARGE, e.code());
      assertTrue(e.getMessage().contains("exceeds the maximum"), e.getMessage());
      t.join(TimeUnit.SECONDS.toMillis(PATIENCE_SECONDS));
      assertFalse(t.isAlive(), "the client dropped the connection");
    }
  }

  @Test
  void anAnswerToAnotherCallFailsTheCallAndDropsTheConnection() throws Exception {
    try (ServerSocket liar = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread t =
          new Thread(
              () -> {
                try (Socket a = liar.accept()) {
                  java.io.DataInputStream in = new java.io.DataInputStream(a.getInputStream());
                  byte[] request = new byte[in.readInt()];
                  in.readFully(request);
                  long askedId = java.nio.ByteBuffer.wrap(request, 3, 8).getLong();
                  ByteBuf answer = io.netty.buffer.Unpooled.buffer();
                  Frame.encode(
                      answer,
                      MessageType.LOOKUP.code(),
                      Frame.FLAG_RESPONSE,
                      askedId + 1,
                      new NodeStatus(1, NodeType.FILE, 1, 0, 4096, StorageClass.DRAM, 0, false),
                      0);
                  byte[] bytes = new byte[answer.readableBytes()];
                  answer.readBytes(bytes);
                  a.getOutputStream().write(bytes);
                  in.read(); // until the client drops it
                } catch (IOException e) {
                  // closed
                }
              });
      t.setDaemon(true);
      t.start();
      DirectConnection d = direct(liar.getLocalPort(), "60s");
      EmberException e = assertThrows(EmberException.class, () -> lookup(d, "/a"));
      assertEquals(ErrorCode.MALFORMED_FRAME, e.code());
      assertEquals(
          "test server 127.0.0.1:"
              + liar.getLocalPort()
              + " answered LOOKUP with a frame that is not its answer; connection dropped",
          e.getMessage());
      t.join(TimeUnit.SECONDS.toMillis(PATIENCE_SECONDS));
      assertFalse(t.isAlive(), "the client dropped the connection");
    }
  }

  @Test
  void closingEndsACallInProgress() throws Exception {
    Service service = new Service();
    service.hold = new CountDownLatch(1);
    DirectConnection d = direct(server(service, 0), "60s");
    CompletableFuture<EmberException> failure =
        CompletableFuture.supplyAsync(
            () -> assertThrows(EmberException.class, () -> lookup(d, "/slow")));
    awaitFirstCall(service);
    d.close();
    EmberException e = failure.get(PATIENCE_SECONDS, TimeUnit.SECONDS);
    assertEquals(ErrorCode.CLOSED, e.code(), e.getMessage());
    service.hold.countDown();
    EmberException after = assertThrows(EmberException.class, () -> lookup(d, "/a"));
    assertEquals(ErrorCode.CLOSED, after.code());
  }
}
