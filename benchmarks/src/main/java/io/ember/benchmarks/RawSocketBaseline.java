package io.ember.benchmarks;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Random;

/**
 * The floor for data throughput: a plain socket on loopback that moves the same bytes in the same
 * operation sizes as the Ember run, with no framing and no protocol.
 *
 * <p>The client side uses a blocking socket stream and one array of the operation size, as the
 * Ember run's caller does. The server side keeps the bytes where a data node keeps them: in direct
 * memory as large as the data, sent from and received into with no copy in user space. A server
 * that sent one small array over and over would send from the CPU cache, which no store can do with
 * data it holds; its speed then swings between about 2.5 and 6 GB/s on two cores with where the
 * scheduler puts its threads.
 */
final class RawSocketBaseline implements AutoCloseable {
  /** Direct memory the server moves bytes through; larger runs cycle through it. */
  private static final int MAX_STORE = 1 << 30;

  /** The name of the thread that serves the baseline's connections. */
  static final String SERVER_THREAD = "raw-socket-baseline";

  private final ServerSocketChannel server;
  private final Thread acceptor;
  private final ByteBuffer store;
  private volatile boolean closed;

  /** A baseline for runs of up to {@code bytes} each. */
  RawSocketBaseline(long bytes) throws IOException {
    store = ByteBuffer.allocateDirect((int) Math.min(MAX_STORE, bytes));
    byte[] random = new byte[1 << 20];
    new Random(1).nextBytes(random);
    while (store.hasRemaining()) {
      store.put(random, 0, Math.min(random.length, store.remaining()));
    }
    server =
        ServerSocketChannel.open()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
    acceptor = new Thread(this::serve, SERVER_THREAD);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /**
   * MiB/s sending {@code bytes} in writes of {@code opSize}, ended by the peer's acknowledgement.
   */
  double send(long bytes, int opSize) throws IOException {
    byte[] buf = new byte[opSize];
    try (Socket s = connect()) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      InputStream in = s.getInputStream();
      long t0 = System.nanoTime();
      out.writeByte('S');
      out.writeLong(bytes);
      out.writeInt(opSize);
      for (long sent = 0; sent < bytes; sent += opSize) {
        out.write(buf, 0, (int) Math.min(opSize, bytes - sent));
      }
      out.flush();
      if (in.read() != 1) {
        throw new IOException("baseline peer did not acknowledge");
      }
      return bytes / (double) (1 << 20) / ((System.nanoTime() - t0) / 1e9);
    }
  }

  /** MiB/s receiving {@code bytes} in reads of {@code opSize}. */
  double receive(long bytes, int opSize) throws IOException {
    byte[] buf = new byte[opSize];
    try (Socket s = connect()) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      InputStream in = s.getInputStream();
      long t0 = System.nanoTime();
      out.writeByte('R');
      out.writeLong(bytes);
      out.writeInt(opSize);
      out.flush();
      for (long got = 0; got < bytes; ) {
        int n = in.readNBytes(buf, 0, (int) Math.min(opSize, bytes - got));
        if (n <= 0) {
          throw new IOException("baseline peer closed early");
        }
        got += n;
      }
      return bytes / (double) (1 << 20) / ((System.nanoTime() - t0) / 1e9);
    }
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), server.socket().getLocalPort());
    s.setTcpNoDelay(true);
    return s;
  }

  private void serve() {
    while (!closed) {
      try (SocketChannel s = server.accept()) {
        s.socket().setTcpNoDelay(true);
        ByteBuffer header = ByteBuffer.allocate(13);
        while (header.hasRemaining()) {
          if (s.read(header) < 0) {
            throw new IOException("baseline peer closed early");
          }
        }
        header.flip();
        int mode = header.get();
        long bytes = header.getLong();
        int opSize = header.getInt();
        // Operations of opSize at consecutive offsets of the store, as a data node's blocks.
        for (long done = 0; done < bytes; ) {
          int at = (int) (done % store.capacity());
          int n = (int) Math.min(Math.min(opSize, bytes - done), store.capacity() - at);
          ByteBuffer op = store.duplicate().position(at).limit(at + n);
          while (op.hasRemaining()) {
            if ((mode == 'S' ? s.read(op) : s.write(op)) < 0) {
              throw new IOException("baseline peer closed early");
            }
          }
          done += n;
        }
        if (mode == 'S') {
          s.write(ByteBuffer.wrap(new byte[] {1}));
        }
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
  }
}
