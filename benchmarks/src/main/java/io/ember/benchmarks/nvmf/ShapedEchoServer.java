package io.ember.benchmarks.nvmf;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

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
                ByteBuffer in = ByteBuffer.allocateDirect(requestLength * depth);
                ByteBuffer out = ByteBuffer.allocateDirect(responseLength * depth);
                long received = 0;
                while (true) {
                  int n = s.read(in.clear());
                  if (n < 0) {
                    return;
                  }
                  received += n;
                  int whole = (int) (received / requestLength);
                  received -= (long) whole * requestLength;
                  writeFully(s, out.clear().limit(whole * responseLength));
                }
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
