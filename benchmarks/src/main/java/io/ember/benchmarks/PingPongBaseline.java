package io.ember.benchmarks;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.Frame;
import io.ember.protocol.Message;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.StorageClass;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The floor for a round trip: a plain TCP ping-pong on loopback, blocking sockets on both sides, a
 * server thread per connection that answers each request of a fixed size with a response of a fixed
 * size, with no framing, no protocol and no thread between the socket and its caller. Sized like
 * the Ember exchange it stands beside ({@link #frameBytes}), it is what any RPC over TCP costs on
 * this machine, and the Ember call's rate over its rate is what Ember's RPC path adds.
 *
 * <p>Beside a client that polls for its answers ({@code ember.client.spin-wait}), the baseline's
 * client polls for as long before it sleeps, so that both sides of the comparison save the same
 * wake-up.
 */
final class PingPongBaseline implements AutoCloseable {
  private final ServerSocketChannel server;
  private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
  private final long spinNanos;
  private volatile boolean closed;

  /** A ping-pong whose clients sleep until their answers arrive. */
  PingPongBaseline() throws IOException {
    this(Duration.ZERO);
  }

  /** A ping-pong whose clients poll for their answers for up to {@code spinWait}, then sleep. */
  PingPongBaseline(Duration spinWait) throws IOException {
    spinNanos = spinWait.toNanos();
    server =
        ServerSocketChannel.open()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    Thread acceptor = new Thread(this::accept, "ping-pong-baseline");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Bytes an Ember frame with this body takes on the wire: length field, header and body. */
  static int frameBytes(Message body) {
    ByteBuf b = Unpooled.buffer();
    try {
      body.encode(b);
      return 4 + Frame.HEADER_BYTES + b.readableBytes();
    } finally {
      b.release();
    }
  }

  /** A connection whose round trips send {@code requestBytes} and get {@code responseBytes}. */
  Connection connect(int requestBytes, int responseBytes) throws IOException {
    return connect(requestBytes, responseBytes, false);
  }

  /**
   * A connection as {@link #connect(int, int)}; with {@code forced}, the server writes each request
   * to a file of its own, written ahead with zeros as the name node's journal is, and forces it
   * before it answers: the floor for a change that is on disk before it is acknowledged.
   */
  Connection connect(int requestBytes, int responseBytes, boolean forced) throws IOException {
    SocketChannel c = SocketChannel.open(server.getLocalAddress());
    open.add(c);
    c.setOption(StandardSocketOptions.TCP_NODELAY, true);
    ByteBuffer sizes =
        ByteBuffer.allocate(9)
            .putInt(requestBytes)
            .putInt(responseBytes)
            .put((byte) (forced ? 1 : 0))
            .flip();
    while (sizes.hasRemaining()) {
      c.write(sizes);
    }
    return new Connection(c, requestBytes, responseBytes, spinNanos);
  }

  /**
   * Two connections shaped like an empty file's create + close: the CREATE that asks for the first
   * block of a file at {@code path} and its answer, then the CLOSE_FILE and its status.
   *
   * @param status the status of a file like the one created
   * @param firstBlock a block location like the one a create hands out
   */
  CreateClose connectCreateClose(
      String path, String leaseHolder, NodeStatus status, BlockLocation firstBlock)
      throws IOException {
    return connectCreateClose(path, leaseHolder, status, firstBlock, false);
  }

  /**
   * As {@link #connectCreateClose(String, String, NodeStatus, BlockLocation)}; with {@code forced},
   * each request is forced to disk before it is answered, as {@link #connect(int, int, boolean)}.
   */
  CreateClose connectCreateClose(
      String path, String leaseHolder, NodeStatus status, BlockLocation firstBlock, boolean forced)
      throws IOException {
    int ask =
        frameBytes(
            new Messages.CreateRequest(
                path, NodeType.FILE, StorageClass.DRAM, false, leaseHolder, true, true));
    int answer = frameBytes(new Messages.CreateResponse(status, firstBlock));
    int closeAsk = frameBytes(new Messages.CloseFileRequest(status.id(), 0));
    return new CreateClose(
        connect(ask, answer, forced), connect(closeAsk, frameBytes(status), forced));
  }

  /** The two round trips of an empty file's create + close. */
  record CreateClose(Connection create, Connection close) {
    void roundTrips() throws IOException {
      create.roundTrip();
      close.roundTrip();
    }
  }

  /** One client connection; use it from one thread at a time. */
  static final class Connection implements AutoCloseable {
    private final SocketChannel channel;
    private final ByteBuffer request;
    private final ByteBuffer response;
    private final long spinNanos;
    private final Selector selector;

    private Connection(SocketChannel channel, int requestBytes, int responseBytes, long spinNanos)
        throws IOException {
      this.channel = channel;
      this.request = ByteBuffer.allocateDirect(requestBytes);
      this.response = ByteBuffer.allocateDirect(responseBytes);
      this.spinNanos = spinNanos;
      if (spinNanos > 0) {
        channel.configureBlocking(false);
        selector = Selector.open();
        channel.register(selector, SelectionKey.OP_READ);
      } else {
        selector = null;
      }
    }

    /** Sends a request and waits for the whole response. */
    void roundTrip() throws IOException {
      request.clear();
      while (request.hasRemaining()) {
        channel.write(request);
      }
      response.clear();
      long spinUntil = System.nanoTime() + spinNanos;
      while (response.hasRemaining()) {
        int n = channel.read(response);
        if (n < 0) {
          throw new IOException("the ping-pong server closed the connection");
        }
        if (n == 0) {
          if (System.nanoTime() - spinUntil < 0) {
            Thread.onSpinWait();
          } else {
            selector.select();
            selector.selectedKeys().clear();
          }
        }
      }
    }

    @Override
    public void close() throws IOException {
      channel.close();
      if (selector != null) {
        selector.close();
      }
    }
  }

  private void accept() {
    while (!closed) {
      try {
        SocketChannel s = server.accept();
        open.add(s);
        Thread t = new Thread(() -> answer(s), "ping-pong-baseline-server");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void answer(SocketChannel s) {
    try (s) {
      s.setOption(StandardSocketOptions.TCP_NODELAY, true);
      ByteBuffer sizes = ByteBuffer.allocate(9);
      if (!fill(s, sizes)) {
        return;
      }
      ByteBuffer in = ByteBuffer.allocateDirect(sizes.getInt(0));
      ByteBuffer out = ByteBuffer.allocateDirect(sizes.getInt(4));
      try (ForcedLog log = sizes.get(8) == 1 ? new ForcedLog() : null) {
        while (true) {
          in.clear();
          if (!fill(s, in)) {
            return;
          }
          if (log != null) {
            log.force(in.flip());
          }
          out.clear();
          while (out.hasRemaining()) {
            s.write(out);
          }
        }
      }
    } catch (IOException e) {
      // The client went away or the baseline closed: nothing to answer.
    }
  }

  /**
   * A temporary file, in the directory where an in-process name node keeps its journal, that takes
   * records as the journal does: at the next offset of a file written ahead with zeros, so that a
   * force writes data and no size change.
   */
  private static final class ForcedLog implements AutoCloseable {
    private static final int LENGTH = 8 << 20;
    private final Path file;
    private final FileChannel channel;
    private long at;

    ForcedLog() throws IOException {
      file = Files.createTempFile("ember-ping-pong-", ".log");
      channel = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.READ);
      ByteBuffer zeros = ByteBuffer.allocate(64 << 10);
      for (long p = 0; p < LENGTH; ) {
        zeros.clear();
        p += channel.write(zeros, p);
      }
      channel.force(true);
    }

    void force(ByteBuffer record) throws IOException {
      if (at + record.remaining() > LENGTH) {
        at = 0;
      }
      while (record.hasRemaining()) {
        at += channel.write(record, at);
      }
      channel.force(false);
    }

    @Override
    public void close() throws IOException {
      channel.close();
      Files.deleteIfExists(file);
    }
  }

  /** Reads until {@code b} is full; false at end of stream. */
  private static boolean fill(SocketChannel s, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (s.read(b) < 0) {
        return false;
      }
    }
    return true;
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    for (SocketChannel c : open) {
      c.close();
    }
  }
}
