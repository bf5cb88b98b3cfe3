package io.ember.benchmarks.nvmf;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.function.IntConsumer;

/**
 * The server side of the raw-socket floors: on one loopback connection, reads requests of a fixed
 * length and answers each with a response of another fixed length, as an NVMe/TCP target answers a
 * command capsule, on one blocking thread.
 */
final class ShapedEchoServer implements AutoCloseable {
  private final ServerSocketChannel server;

  /**
   * Listens on an ephemeral loopback port and serves its first connection on a daemon thread.
   *
   * @throws IOException when the port cannot be bound
   */
  ShapedEchoServer(int requestLength, int responseLength, int depth, String threadName)
      throws IOException {
    server =
        ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread echo =
        new Thread(
            () -> {
              try (SocketChannel s = server.accept()) {
                s.setOption(StandardSocketOptions.TCP_NODELAY, true);
                answerEach(s, requestLength, responseLength, depth, answered -> {});
              } catch (IOException e) {
                // closed by close()
              }
            },
            threadName);
    echo.setDaemon(true);
    echo.start();
  }

  /** A client connection with Nagle's delay off, as NVMe/TCP hosts set it. */
  SocketChannel connect() throws IOException {
    SocketChannel client = SocketChannel.open(server.getLocalAddress());
    client.setOption(StandardSocketOptions.TCP_NODELAY, true);
    return client;
  }

  /**
   * Until the peer closes: reads whatever has arrived (at most {@code depth} messages of {@code
   * inLength} bytes are in flight) and answers every whole message in it with one write of as many
   * {@code outLength}-byte messages, then tells {@code answered} how many.
   */
  static void answerEach(
      SocketChannel s, int inLength, int outLength, int depth, IntConsumer answered)
      throws IOException {
    ByteBuffer in = ByteBuffer.allocateDirect(inLength * depth);
    ByteBuffer out = ByteBuffer.allocateDirect(outLength * depth);
    long partial = 0;
    while (true) {
      int n = s.read(in.clear());
      if (n < 0) {
        return;
      }
      partial += n;
      int whole = (int) (partial / inLength);
      partial -= (long) whole * inLength;
      writeFully(s, out.clear().limit(whole * outLength));
      answered.accept(whole);
    }
  }

  /** Reads until {@code b} is full; false at end of stream. */
  static boolean readFully(SocketChannel s, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (s.read(b) < 0) {
        return false;
      }
    }
    return true;
  }

  static void writeFully(SocketChannel s, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      s.write(b);
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
