package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * A connection to one server on which the calling thread sends its request and reads the answer
 * itself, one call at a time, with no network thread in between.
 *
 * <p>A call through {@link RpcClient} crosses threads twice: the caller hands its request to a
 * network thread, and the network thread hands the answer back. Where waking a sleeping thread
 * costs as much as the round trip itself (virtual machines, power-saving cores), those two wake-ups
 * double a small call's latency. A caller that is going to wait for its answer anyway loses nothing
 * by doing the socket work itself, and the round trip then costs what a plain blocking ping-pong
 * costs. Only one call at a time uses the connection: {@link #callOr} takes the shared path for a
 * caller that finds it busy, so many threads still share the multiplexed connection.
 *
 * <p>Every call ends like an {@link RpcClient} call: with its answer, the server's error, {@link
 * ErrorCode#TIMEOUT} after the configured time, {@link ErrorCode#CONNECTION_CLOSED} when the
 * connection breaks, or {@link ErrorCode#CLOSED} once this is closed. After any failure but the
 * server's answer the connection is dropped (a late answer would otherwise be read as the next
 * call's), and the next call opens a new one.
 */
public final class DirectConnection implements AutoCloseable {
  /** How long after a failure to connect calls take the shared path, which tries on its own. */
  private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final HostPort address;
  private final String peerKind;
  private final String peer;
  private final long timeoutMillis;
  private final int connectTimeoutMillis;
  private final int maxFrame;
  private final long spinNanos;
  private final ReentrantLock lock = new ReentrantLock();

  // Guarded by lock; volatile for close(), which wakes a call in progress.
  private volatile SocketChannel channel;
  private volatile Selector selector;
  private long nextId;
  private long unreachableUntil;
  private final ByteBuf out = Unpooled.buffer(256);
  private final ByteBuffer probe = ByteBuffer.allocate(1);
  private ByteBuffer in = ByteBuffer.allocate(4096);

  private volatile boolean closed;

  /** Run on each new connection before its first call; null when there is nothing to say. */
  private volatile Greeting greeting;

  /**
   * A connection to {@code address}, opened at its first call, whose callers sleep until their
   * answer arrives.
   *
   * @param peerKind how errors name the peer, e.g. "name node"
   */
  public DirectConnection(HostPort address, String peerKind, EmberConfig config) {
    this(address, peerKind, config, Duration.ZERO);
  }

  /**
   * As {@link #DirectConnection(HostPort, String, EmberConfig)}, with callers that poll their
   * socket for up to {@code spinWait} before they sleep. Where waking a sleeping thread is slow (a
   * virtual machine whose idle CPUs halt), an answer that arrives while the caller still polls
   * saves that wake-up; each call then costs up to {@code spinWait} of the caller's CPU more.
   *
   * @param spinWait how long to poll; zero to sleep at once
   */
  public DirectConnection(
      HostPort address, String peerKind, EmberConfig config, Duration spinWait) {
    this.address = address;
    this.peerKind = peerKind;
    this.peer = peerKind + " " + address;
    this.timeoutMillis = config.get(EmberKeys.RPC_TIMEOUT).toMillis();
    this.connectTimeoutMillis = (int) config.get(EmberKeys.CONNECT_TIMEOUT).toMillis();
    this.maxFrame = (int) Math.min(Integer.MAX_VALUE, config.get(EmberKeys.MAX_FRAME_BYTES));
    this.spinNanos = spinWait.toNanos();
  }

  /**
   * Makes each connection opened from now on run {@code greeting} (authentication) before its first
   * call, on the caller's thread; a refusal fails that call with the server's error.
   *
   * @return this
   */
  public DirectConnection greetWith(Greeting greeting) {
    this.greeting = greeting;
    return this;
  }

  /**
   * Makes the call on this thread when the connection is free, and otherwise (another thread's call
   * is on it, the body carries data to send without a copy, or the server could not be reached
   * within the last second) returns {@code shared}'s call instead.
   *
   * <p>A failure to connect fails the call at once ({@link ErrorCode#UNREACHABLE}) rather than
   * trying the shared path too, which would make the caller wait for a second connect timeout.
   *
   * @return the answer, already complete when the call was made here; fails with {@link
   *     EmberException}
   */
  public <T> CompletableFuture<T> callOr(
      MessageType type,
      Message body,
      ResponseDecoder<T> decoder,
      Supplier<CompletableFuture<T>> shared) {
    if (body.data() != null || !lock.tryLock()) {
      return shared.get();
    }
    try {
      if (channel == null && !connect()) {
        return shared.get();
      }
      return CompletableFuture.completedFuture(callLocked(type, body, decoder));
    } catch (EmberException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Opens the connection.
   *
   * @return false within a second of a failure to connect: the shared path takes those calls
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when it cannot be opened, {@link
   *     ErrorCode#CLOSED} once this is closed
   */
  private boolean connect() throws EmberException {
    if (closed) {
      throw closedError(null);
    }
    if (System.nanoTime() - unreachableUntil < 0) {
      return false;
    }
    SocketChannel c = null;
    try {
      c = SocketChannel.open();
      c.setOption(StandardSocketOptions.TCP_NODELAY, true);
      c.socket()
          .connect(new InetSocketAddress(address.host(), address.port()), connectTimeoutMillis);
      c.configureBlocking(false);
      Selector s = Selector.open();
      c.register(s, SelectionKey.OP_READ);
      channel = c;
      selector = s;
    } catch (IOException | RuntimeException e) {
      closeQuietly(c);
      unreachableUntil = System.nanoTime() + RETRY_NANOS;
      throw new EmberException(
          ErrorCode.UNREACHABLE,
          "cannot connect to the " + peerKind + " at " + address + ": " + RpcClients.why(e),
          e);
    }
    if (closed) {
      drop();
      throw closedError(null);
    }
    Greeting g = greeting;
    if (g != null) {
      greet(g);
    }
    return true;
  }

  /** Runs {@code g} on the new connection, whose calls complete on this thread. */
  private void greet(Greeting g) throws EmberException {
    Greeting.Exchange here =
        new Greeting.Exchange() {
          @Override
          public <T> CompletableFuture<T> call(
              MessageType type, Message body, ResponseDecoder<T> decoder) {
            try {
              return CompletableFuture.completedFuture(callLocked(type, body, decoder));
            } catch (EmberException e) {
              return CompletableFuture.failedFuture(e);
            }
          }
        };
    try {
      g.greet(here).join();
    } catch (java.util.concurrent.CompletionException
        | java.util.concurrent.CancellationException e) {
      drop();
      throw EmberException.of(e);
    }
  }

  private <T> T callLocked(MessageType type, Message body, ResponseDecoder<T> decoder)
      throws EmberException {
    long id = ++nextId;
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    Frame frame;
    try {
      checkOpen();
      send(type, id, body, deadline);
      frame = receive(type, deadline);
    } catch (EmberException e) {
      drop();
      throw e;
    } catch (IOException e) {
      drop();
      if (closed) {
        throw closedError(e);
      }
      throw new EmberException(
          ErrorCode.CONNECTION_CLOSED, "connection to " + peer + " failed: " + e, e);
    }
    try {
      return answer(type, id, frame, decoder);
    } finally {
      frame.release();
    }
  }

  /** Fails when the server closed the connection or sent what nobody asked for. */
  private void checkOpen() throws IOException, EmberException {
    probe.clear();
    int n = channel.read(probe);
    if (n < 0) {
      // The server closed it since the last call (a restart): nothing was sent, so a new
      // connection is safe.
      drop();
      if (!connect()) {
        throw new EmberException(
            ErrorCode.UNREACHABLE,
            "cannot connect to the " + peerKind + " at " + address + " again after it closed");
      }
    } else if (n > 0) {
      throw new EmberException(
          ErrorCode.MALFORMED_FRAME, peer + " sent bytes nobody asked for; connection dropped");
    }
  }

  private void send(MessageType type, long id, Message body, long deadline)
      throws IOException, EmberException {
    out.clear();
    Frame.encode(out, type.code(), 0, id, body, 0);
    ByteBuffer b = out.nioBuffer();
    while (b.hasRemaining()) {
      if (channel.write(b) == 0) {
        await(SelectionKey.OP_WRITE, type, deadline);
      }
    }
  }

  /**
   * Reads one whole frame; its payload is valid until the next call. It waits before its first read
   * (an answer is never there the moment the request leaves) and reads whatever has arrived at
   * once, so a small answer costs one wait and one read.
   */
  private Frame receive(MessageType type, long deadline) throws IOException, EmberException {
    in.clear();
    long n = -1; // the frame's bytes after its length field
    long spinUntil = spinNanos > 0 ? System.nanoTime() + spinNanos : 0;
    while (n < 0 || in.position() < 4 + n) {
      if (spinNanos == 0 || System.nanoTime() - spinUntil > 0) {
        await(SelectionKey.OP_READ, type, deadline);
      } else {
        Thread.onSpinWait();
      }
      int got;
      while ((got = channel.read(in)) > 0) {
        if (n < 0 && in.position() >= 4) {
          n = frameLength(in.getInt(0));
        }
        if (n >= 0 && in.position() >= 4 + n) {
          break;
        }
        if (!in.hasRemaining()) {
          grow(4 + n);
        }
      }
      if (got < 0) {
        throw new EmberException(ErrorCode.CONNECTION_CLOSED, "connection to " + peer + " closed");
      }
    }
    if (in.position() > 4 + n) {
      throw new EmberException(
          ErrorCode.MALFORMED_FRAME, peer + " sent bytes nobody asked for; connection dropped");
    }
    return Frame.read(Unpooled.wrappedBuffer(in.array(), 4, (int) n), n);
  }

  private long frameLength(int field) throws EmberException {
    long n = Integer.toUnsignedLong(field);
    if (n < Frame.HEADER_BYTES || n > maxFrame) {
      throw new EmberException(
          ErrorCode.FRAME_TOO_LARGE,
          peer
              + " sent an unreadable frame: "
              + new FrameDecoder.FrameTooLargeEvent(n, maxFrame).describe());
    }
    return n;
  }

  /** Makes room for the rest of a frame of {@code total} bytes with its length field. */
  private void grow(long total) {
    ByteBuffer bigger = ByteBuffer.allocate((int) Math.max(total, in.capacity() * 2L));
    in.flip();
    bigger.put(in);
    in = bigger;
  }

  private void await(int op, MessageType type, long deadline) throws IOException, EmberException {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new EmberException(
          ErrorCode.TIMEOUT,
          type + " to " + peer + " got no answer within " + timeoutMillis + " ms");
    }
    if (Thread.currentThread().isInterrupted()) {
      throw new EmberException(ErrorCode.CLOSED, "interrupted while waiting for " + peer);
    }
    if (closed) {
      throw closedError(null);
    }
    SelectionKey key = channel.keyFor(selector);
    if (key.interestOps() != op) {
      key.interestOps(op);
    }
    selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
    selector.selectedKeys().clear();
  }

  private <T> T answer(MessageType type, long id, Frame frame, ResponseDecoder<T> decoder)
      throws EmberException {
    if (frame.isError() && frame.requestId() == 0) {
      // The server could not read our stream and is closing the connection.
      drop();
      Messages.ErrorReply r = Messages.ErrorReply.decode(frame.payload());
      throw new EmberException(r.code(), peer + " closed the connection: " + r.message());
    }
    if (!frame.isResponse() || frame.requestId() != id) {
      drop();
      throw new EmberException(
          ErrorCode.MALFORMED_FRAME,
          peer + " answered " + type + " with a frame that is not its answer; connection dropped");
    }
    return RpcClient.answer(frame, decoder);
  }

  private EmberException closedError(Throwable cause) {
    return new EmberException(
        ErrorCode.CLOSED, "call to " + peer + " not made: the client is closing", cause);
  }

  /** Forgets the connection; the next call opens another. */
  private void drop() {
    closeQuietly(channel);
    closeQuietly(selector);
    channel = null;
    selector = null;
  }

  private static void closeQuietly(AutoCloseable c) {
    if (c != null) {
      try {
        c.close();
      } catch (Exception e) {
        // Nothing to do about a socket that fails to close.
      }
    }
  }

  /** Closes the connection; a call in progress fails with {@link ErrorCode#CLOSED}. Idempotent. */
  @Override
  public void close() {
    closed = true;
    // A call in progress holds the lock: wake its wait, and it drops the connection itself.
    if (lock.tryLock()) {
      try {
        drop();
      } finally {
        lock.unlock();
      }
      return;
    }
    Selector s = selector;
    SocketChannel c = channel;
    if (s != null) {
      s.wakeup();
    }
    closeQuietly(c);
  }
}
