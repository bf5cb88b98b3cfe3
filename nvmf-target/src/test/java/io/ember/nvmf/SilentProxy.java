package io.ember.nvmf;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy for tests that can fall silent like a network partition: once {@link #silence()}d it
 * forwards nothing in either direction and closes nothing, so neither end learns from TCP that the
 * other is gone. {@link #hold()} and {@link #resume()} delay traffic instead of dropping it.
 */
final class SilentProxy implements AutoCloseable {
  private final ServerSocket server;
  private final String host;
  private final int port;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile boolean silent;
  private boolean held;

  /** Listens on a free loopback port and forwards every connection to {@code host:port}. */
  SilentProxy(String host, int port) throws IOException {
    this.host = host;
    this.port = port;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    daemon(this::accept, "silent-proxy-accept");
  }

  /** The port the proxy listens on. */
  int port() {
    return server.getLocalPort();
  }

  /** From now on drops every byte and keeps every connection open. */
  void silence() {
    silent = true;
  }

  /** From now on keeps every byte until {@link #resume()}. */
  synchronized void hold() {
    held = true;
  }

  /** Forwards what {@link #hold()} kept, and from now on everything. */
  synchronized void resume() {
    held = false;
    notifyAll();
  }

  private synchronized void awaitNotHeld() throws InterruptedException {
    while (held) {
      wait();
    }
  }

  private static void daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  private void accept() {
    while (true) {
      Socket a;
      try {
        a = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      sockets.add(a);
      try {
        Socket b = new Socket(host, port);
        sockets.add(b);
        a.setTcpNoDelay(true);
        b.setTcpNoDelay(true);
        daemon(() -> pump(a, b), "silent-proxy-up");
        daemon(() -> pump(b, a), "silent-proxy-down");
      } catch (IOException e) {
        quietly(a);
      }
    }
  }

  private void pump(Socket from, Socket to) {
    byte[] buf = new byte[64 * 1024];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      while (true) {
        int n = in.read(buf);
        if (n < 0) {
          break;
        }
        awaitNotHeld();
        if (!silent) {
          out.write(buf, 0, n);
          out.flush();
        }
      }
    } catch (IOException | InterruptedException e) {
      // One side went away: pass that on below unless silent.
    }
    if (!silent) {
      quietly(from);
      quietly(to);
    }
  }

  private static void quietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      quietly(s);
    }
  }
}
