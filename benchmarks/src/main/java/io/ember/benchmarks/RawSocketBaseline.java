package io.ember.benchmarks;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * The floor for data throughput: a plain blocking socket on loopback that moves the same bytes in
 * the same operation sizes as the Ember run, with no framing, no protocol and no copies beyond
 * the socket's own.
 */
final class RawSocketBaseline implements AutoCloseable {
  private final ServerSocket server;
  private final Thread acceptor;
  private volatile boolean closed;

  RawSocketBaseline() throws IOException {
    server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::serve, "raw-socket-baseline");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** MiB/s sending {@code bytes} in writes of {@code opSize}, ended by the peer's acknowledgement. */
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
    Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
    s.setTcpNoDelay(true);
    return s;
  }

  private void serve() {
    while (!closed) {
      try (Socket s = server.accept()) {
        s.setTcpNoDelay(true);
        DataInputStream in = new DataInputStream(s.getInputStream());
        OutputStream out = s.getOutputStream();
        int mode = in.readByte();
        long bytes = in.readLong();
        int opSize = in.readInt();
        byte[] buf = new byte[opSize];
        if (mode == 'S') {
          for (long got = 0; got < bytes; ) {
            int n = in.read(buf, 0, (int) Math.min(opSize, bytes - got));
            if (n < 0) {
              break;
            }
            got += n;
          }
          out.write(1);
          out.flush();
        } else {
          for (long sent = 0; sent < bytes; sent += opSize) {
            out.write(buf, 0, (int) Math.min(opSize, bytes - sent));
          }
          out.flush();
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
