package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A server whose network thread polls for requests ({@link EmberKeys#BUSY_POLL}): answers that
 * other threads complete still go out while it polls, it sleeps once the window has passed, and it
 * wakes again for the next request.
 */
class BusyPollTest {
  private static final long PATIENCE_MILLIS = 60_000;
  private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

  /** The answers the test completes: every request but NOOP is answered with a {@link Deferred}. */
  private final LinkedBlockingQueue<CompletableFuture<Message>> pending =
      new LinkedBlockingQueue<>();

  private RpcServer server;

  private int start(String transport, String busyPoll) throws EmberException {
    EmberConfig config =
        EmberConfig.defaults()
            .with(EmberKeys.RPC_TRANSPORT, transport)
            .with(EmberKeys.IO_THREADS, "1")
            .with(EmberKeys.BUSY_POLL, busyPoll);
    server =
        new RpcServer(
            "polling server",
            config,
            new RpcService() {
              @Override
              public Message handle(Channel channel, MessageType type, ByteBuf payload) {
                CompletableFuture<Message> answer = new CompletableFuture<>();
                pending.add(answer);
                return new Deferred(answer);
              }
            });
    return server.start("127.0.0.1", 0).getPort();
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"epoll", "nio"})
  void answersCompletedByAnotherThreadGoOutWhileTheLoopPolls(String transport) throws Exception {
    // A window far longer than the test, so the loop is polling, not asleep, when the answer is
    // completed from another thread: the write reaches the loop as a task, not a socket event.
    int port = start(transport, "1s");
    try (Socket s = connect(port)) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      DataInputStream in = new DataInputStream(s.getInputStream());
      for (int i = 1; i <= 3; i++) {
        sendDf(out, i);
        CompletableFuture<Message> answer = pending.poll(PATIENCE_MILLIS, TimeUnit.MILLISECONDS);
        assertTrue(answer != null, "the server never handled request " + i);
        CompletableFuture.runAsync(() -> answer.complete(Message.EMPTY)).join();
        assertEquals(i, readReplyId(in));
      }
    }
  }

  @Test
  void theLoopSleepsAfterItsWindowAndWakesForTheNextRequest() throws Exception {
    int port = start("epoll", "1ms");
    try (Socket s = connect(port)) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      DataInputStream in = new DataInputStream(s.getInputStream());
      out.writeInt(Frame.HEADER_BYTES);
      out.writeByte(Frame.VERSION);
      out.writeByte(MessageType.NOOP.code());
      out.writeByte(0);
      out.writeLong(1);
      out.flush();
      assertEquals(1, readReplyId(in));
      long thread = ioThread();
      // Asleep: the thread stops using CPU. A thread still polling uses most of a core, and keeps
      // using a share of one even beside a CPU hog.
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PATIENCE_MILLIS);
      boolean asleep = false;
      while (!asleep && System.nanoTime() < deadline) {
        long before = CPU.getThreadCpuTime(thread);
        Thread.sleep(200);
        asleep = CPU.getThreadCpuTime(thread) - before < Duration.ofMillis(20).toNanos();
      }
      assertTrue(asleep, "the network thread still polls long after its 1 ms window");
      sendDf(out, 2);
      CompletableFuture<Message> answer = pending.poll(PATIENCE_MILLIS, TimeUnit.MILLISECONDS);
      assertTrue(answer != null, "the sleeping network thread did not wake for a request");
      answer.complete(Message.EMPTY);
      assertEquals(2, readReplyId(in));
    }
  }

  @Test
  void aWindowThatIsNotPositiveIsRefused() {
    assertThrows(
        IllegalArgumentException.class, () -> PollingSelectStrategy.factory(Duration.ZERO));
  }

  private static Socket connect(int port) throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
    s.setSoTimeout((int) PATIENCE_MILLIS);
    s.setTcpNoDelay(true);
    return s;
  }

  private static void sendDf(DataOutputStream out, long id) throws IOException {
    out.writeInt(Frame.HEADER_BYTES);
    out.writeByte(Frame.VERSION);
    out.writeByte(MessageType.DF.code());
    out.writeByte(0);
    out.writeLong(id);
    out.flush();
  }

  /** Reads one reply frame, which must not be an error, and returns its request id. */
  private static long readReplyId(DataInputStream in) throws IOException {
    int len = in.readInt();
    in.readByte();
    in.readByte();
    int flags = in.readByte();
    long id = in.readLong();
    in.readFully(new byte[len - Frame.HEADER_BYTES]);
    assertEquals(Frame.FLAG_RESPONSE, flags, "reply flags");
    return id;
  }

  /** The id of the server's one network thread. */
  private static long ioThread() {
    return Arrays.stream(CPU.getThreadInfo(CPU.getAllThreadIds()))
        .filter(t -> t != null && t.getThreadName().startsWith("polling server-io"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no network thread named 'polling server-io'"))
        .getThreadId();
  }
}
