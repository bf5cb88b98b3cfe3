package io.ember.protocol;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One connection to an Ember server, with many requests in flight. Responses are matched to
 * requests by id. Every call ends: with its answer, with the server's error, with {@link
 * ErrorCode#TIMEOUT} after the configured time, or with {@link ErrorCode#CONNECTION_CLOSED} when
 * the connection goes away.
 *
 * <p>Futures complete on a network thread: continuations must not block.
 */
public final class RpcClient implements AutoCloseable, Greeting.Exchange {
  private final Channel channel;
  private final String peer;

  /**
   * Why TLS ended this connection (the server refused this client's certificate), for calls made or
   * failed after it: under TLS 1.3 that refusal can arrive, and close the connection, before the
   * first call is sent.
   */
  private volatile EmberException refusal;

  private final long timeoutMillis;
  private final AtomicLong nextId = new AtomicLong();
  private final Map<Long, Pending<?>> pending = new ConcurrentHashMap<>();

  RpcClient(Channel channel, String peer, long timeoutMillis) {
    this.channel = channel;
    this.peer = peer;
    this.timeoutMillis = timeoutMillis;
  }

  /** The peer's description, e.g. "name node 127.0.0.1:9060". */
  public String peer() {
    return peer;
  }

  /** True while the connection is open. */
  public boolean isActive() {
    return channel.isActive();
  }

  /** Requests sent and not yet answered. */
  public int inFlight() {
    return pending.size();
  }

  /**
   * Sends a request. The body's {@link Message#data()} reference, if any, passes to this call in
   * every case, including failure.
   *
   * @return the decoded answer; fails with {@link EmberException}
   */
  @Override
  public <T> CompletableFuture<T> call(MessageType type, Message body, ResponseDecoder<T> decoder) {
    long id = nextId.incrementAndGet();
    Pending<T> p = new Pending<>(decoder);
    pending.put(id, p);
    if (!channel.isActive()) {
      ReferenceCountUtil.release(body.data());
      EmberException why = refusal;
      fail(
          id,
          why != null
              ? why
              : new EmberException(
                  ErrorCode.CONNECTION_CLOSED, "connection to " + peer + " is closed"));
      return p.future;
    }
    try {
      p.timeout =
          channel
              .eventLoop()
              .schedule(
                  () ->
                      fail(
                          id,
                          new EmberException(
                              ErrorCode.TIMEOUT,
                              type
                                  + " to "
                                  + peer
                                  + " got no answer within "
                                  + timeoutMillis
                                  + " ms")),
                  timeoutMillis,
                  TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The connection's event loop is shutting down (the client is closing): nothing was sent.
      ReferenceCountUtil.release(body.data());
      fail(
          id,
          new EmberException(
              ErrorCode.CLOSED, type + " to " + peer + " not sent: the client is closing", e));
      return p.future;
    }
    Frame.writeAndFlush(channel, type, 0, id, body)
        .addListener(
            f -> {
              if (!f.isSuccess()) {
                fail(
                    id,
                    new EmberException(
                        ErrorCode.CONNECTION_CLOSED,
                        "sending " + type + " to " + peer + " failed: " + f.cause(),
                        f.cause()));
              }
            });
    return p.future;
  }

  /** Closes the connection; calls in flight fail with {@link ErrorCode#CONNECTION_CLOSED}. */
  @Override
  public void close() {
    channel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  private void fail(long id, EmberException e) {
    Pending<?> p = pending.remove(id);
    if (p != null) {
      p.fail(e);
    }
  }

  private void failAll(EmberException e) {
    List<Long> ids = new ArrayList<>(pending.keySet());
    for (Long id : ids) {
      fail(id, e);
    }
  }

  /**
   * The value of an answer frame, or the server's error it carries.
   *
   * @throws EmberException the server's error, or the decoder's refusal of the body
   */
  static <T> T answer(Frame frame, ResponseDecoder<T> decoder) throws EmberException {
    try {
      if (frame.isError()) {
        throw Messages.ErrorReply.decode(frame.payload()).toException();
      }
      return decoder.decode(frame.payload());
    } catch (RuntimeException e) {
      throw EmberException.of(e);
    }
  }

  private static final class Pending<T> {
    final ResponseDecoder<T> decoder;
    final CompletableFuture<T> future = new CompletableFuture<>();
    volatile ScheduledFuture<?> timeout;

    Pending(ResponseDecoder<T> decoder) {
      this.decoder = decoder;
    }

    void complete(Frame frame) {
      cancelTimeout();
      try {
        future.complete(answer(frame, decoder));
      } catch (EmberException e) {
        future.completeExceptionally(e);
      }
    }

    void fail(EmberException e) {
      cancelTimeout();
      future.completeExceptionally(e);
    }

    private void cancelTimeout() {
      ScheduledFuture<?> t = timeout;
      if (t != null) {
        t.cancel(false);
      }
    }
  }

  /** The pipeline handler that completes calls. */
  final class ResponseHandler extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      Frame frame = (Frame) msg;
      try {
        if (!frame.isResponse()) {
          failAll(
              new EmberException(
                  ErrorCode.MALFORMED_FRAME,
                  peer + " sent a request frame to a client; closing the connection"));
          ctx.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
          return;
        }
        Pending<?> p = pending.remove(frame.requestId());
        if (p != null) {
          p.complete(frame);
        } else if (frame.isError() && frame.requestId() == 0) {
          // The server could not frame our stream and is closing; the close fails the rest.
          try {
            Messages.ErrorReply r = Messages.ErrorReply.decode(frame.payload());
            failAll(new EmberException(r.code(), peer + " closed the connection: " + r.message()));
          } catch (EmberException ignored) {
            // The close that follows reports it.
          }
        }
        // Otherwise a late answer to a call that timed out: dropped.
      } finally {
        frame.release();
      }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
      if (evt instanceof FrameDecoder.FrameTooLargeEvent tooLarge) {
        failAll(
            new EmberException(
                ErrorCode.FRAME_TOO_LARGE,
                peer + " sent an unreadable frame: " + tooLarge.describe()));
        ctx.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
        return;
      }
      ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      EmberException why = refusal;
      failAll(
          why != null
              ? why
              : new EmberException(
                  ErrorCode.CONNECTION_CLOSED, "connection to " + peer + " closed"));
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      if (cause instanceof javax.net.ssl.SSLException
          || cause.getCause() instanceof javax.net.ssl.SSLException) {
        // Under TLS 1.3 a server checks the client's certificate after the client has finished
        // its handshake: the refusal arrives on the first call.
        refusal =
            new EmberException(
                ErrorCode.UNAUTHENTICATED, Tls.whyHandshakeFailed(cause, peer), cause);
        failAll(refusal);
      } else {
        failAll(
            new EmberException(
                ErrorCode.CONNECTION_CLOSED, "connection to " + peer + " failed: " + cause, cause));
      }
      ctx.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    }
  }
}
