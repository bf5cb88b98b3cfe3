package io.ember.protocol;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Netty server that frames requests, hands them to an {@link RpcService} and writes the answers.
 * Malformed input gets an error frame; input that cannot be framed closes that one connection.
 * Nothing a client sends stops the server serving others.
 */
public final class RpcServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);

  private final String name;
  private final EmberConfig config;
  private final RpcService service;
  private final Framing framing;
  private final LifeCycle lifeCycle;
  private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private EventLoopGroup bossGroup;
  private EventLoopGroup workerGroup;
  private Channel serverChannel;

  /** Set by {@link #pauseReading}: connections accepted meanwhile start paused too. */
  private volatile boolean paused;

  /** A server named {@code name} (used in thread names and messages). */
  public RpcServer(String name, EmberConfig config, RpcService service) {
    this(name, config, service, Framing.WHOLE_FRAMES);
  }

  /**
   * As {@link #RpcServer(String, EmberConfig, RpcService)}, its connections framed by {@code
   * framing}.
   */
  public RpcServer(String name, EmberConfig config, RpcService service, Framing framing) {
    this.name = name;
    this.config = config;
    this.service = service;
    this.framing = framing;
    this.lifeCycle = new LifeCycle(name);
  }

  /**
   * Binds and starts serving.
   *
   * @param host the address to bind
   * @param port the port, or 0 for one the OS picks
   * @return the bound address
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the address cannot be bound
   */
  public InetSocketAddress start(String host, int port) throws EmberException {
    lifeCycle.beginStart();
    Tls tls;
    try {
      tls = Tls.from(config);
    } catch (EmberException e) {
      lifeCycle.beginClose();
      lifeCycle.closed();
      throw e;
    }
    Transports transports = Transports.from(config);
    int maxFrame = (int) Math.min(Integer.MAX_VALUE, config.get(EmberKeys.MAX_FRAME_BYTES));
    bossGroup = transports.newGroup(1, name + "-accept");
    workerGroup =
        transports.newGroup(
            EmberKeys.ioThreads(config), name + "-io", config.get(EmberKeys.BUSY_POLL));
    ServerBootstrap b =
        new ServerBootstrap()
            .group(bossGroup, workerGroup)
            .channel(transports.serverChannel())
            .option(ChannelOption.SO_REUSEADDR, true)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childOption(ChannelOption.RECVBUF_ALLOCATOR, Transports.receiveBuffers())
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    connections.add(ch);
                    ch.config().setAutoRead(!paused);
                    framing.install(ch, maxFrame);
                    ch.pipeline().addLast("rpc", new ServerHandler());
                    if (tls != null) {
                      tls.secureServer(ch);
                    }
                  }
                });
    try {
      serverChannel = b.bind(host, port).sync().channel();
    } catch (Exception e) {
      shutdownGroups();
      lifeCycle.beginClose();
      lifeCycle.closed();
      throw bindFailed(name + " cannot listen", host, port, e);
    }
    lifeCycle.started();
    return (InetSocketAddress) serverChannel.localAddress();
  }

  /**
   * The error for a server that cannot bind {@code host:port}: {@code "<doing> on host:port: why"},
   * with {@link ErrorCode#UNREACHABLE}, e.g. {@code bindFailed("name node cannot listen", ...)}.
   */
  public static EmberException bindFailed(String doing, String host, int port, Exception e) {
    String why = e instanceof BindException ? "address in use or not local" : e.toString();
    return new EmberException(
        ErrorCode.UNREACHABLE, doing + " on " + host + ":" + port + ": " + why, e);
  }

  /** The bound address; only after {@link #start}. */
  public InetSocketAddress address() {
    return (InetSocketAddress) serverChannel.localAddress();
  }

  /**
   * Stops reading requests and accepting connections ({@code true}), as a stalled process would:
   * requests wait in socket buffers and nothing is answered; or reads again ({@code false}). For
   * tests of clients and name nodes facing a data node that stops answering.
   */
  public void pauseReading(boolean pause) {
    paused = pause;
    serverChannel.config().setAutoRead(!pause);
    for (Channel c : connections) {
      c.config().setAutoRead(!pause && c.isWritable());
    }
  }

  /** The number of open client connections. */
  public int connectionCount() {
    return connections.size();
  }

  /** Stops listening and closes every connection at once. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    if (serverChannel != null) {
      serverChannel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    connections.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    shutdownGroups();
    lifeCycle.closed();
  }

  private void shutdownGroups() {
    if (bossGroup != null) {
      bossGroup
          .shutdownGracefully(0, 2, TimeUnit.SECONDS)
          .awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    if (workerGroup != null) {
      workerGroup
          .shutdownGracefully(0, 2, TimeUnit.SECONDS)
          .awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }

  private final class ServerHandler extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      Frame frame = (Frame) msg;
      try {
        dispatch(ctx.channel(), frame);
      } finally {
        frame.release();
      }
      if (!ctx.channel().isWritable()) {
        // The client sends faster than it reads answers: stop reading until it catches up, so
        // queued answers cannot grow without bound.
        ctx.channel().config().setAutoRead(false);
      }
    }

    private void dispatch(Channel ch, Frame frame) {
      Message answer;
      try {
        answer = answer(ch, frame);
      } catch (EmberException | RuntimeException e) {
        replyError(ch, name, frame.type(), frame.requestId(), e);
        return;
      }
      reply(ch, name, frame.type(), frame.requestId(), answer);
    }

    private Message answer(Channel ch, Frame frame) throws EmberException {
      if (frame.version() != Frame.VERSION) {
        throw new EmberException(
            ErrorCode.UNSUPPORTED_VERSION,
            "protocol version "
                + frame.version()
                + " not supported; "
                + name
                + " speaks "
                + Frame.VERSION);
      }
      if (frame.isResponse()) {
        throw new MalformedFrameException("a response frame was sent to " + name);
      }
      MessageType type = MessageType.fromCode(frame.type());
      if (type == null) {
        throw new EmberException(
            ErrorCode.UNKNOWN_MESSAGE, "unknown message type " + frame.type() + " sent to " + name);
      }
      if (type == MessageType.NOOP) {
        Wire.expectEnd(frame.payload(), "NOOP");
        return Message.EMPTY;
      }
      ByteBuf payload = frame.payload();
      return service.handle(ch, type, payload);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      ctx.flush();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      // Reading resumes once replies drain, unless a test paused the server.
      if (ctx.channel().isWritable() && !paused) {
        ctx.channel().config().setAutoRead(true);
      }
      ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
      if (evt instanceof FrameDecoder.FrameTooLargeEvent tooLarge) {
        LOG.warn(
            "{}: closing connection from {}: {}",
            name,
            ctx.channel().remoteAddress(),
            tooLarge.describe());
        ErrorCode code =
            tooLarge.length() < Frame.HEADER_BYTES
                ? ErrorCode.MALFORMED_FRAME
                : ErrorCode.FRAME_TOO_LARGE;
        Frame.write(
                ctx.channel(),
                0,
                Frame.FLAG_RESPONSE | Frame.FLAG_ERROR,
                0,
                new Messages.ErrorReply(code, tooLarge.describe()),
                true)
            .addListener(ChannelFutureListener.CLOSE);
        return;
      }
      ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      try {
        service.connectionClosed(ctx.channel());
      } catch (RuntimeException e) {
        LOG.error("{}: connection clean-up failed", name, e);
      }
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      LOG.debug(
          "{}: closing connection from {}: {}",
          name,
          ctx.channel().remoteAddress(),
          cause.toString());
      ctx.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
    }
  }

  /**
   * Sends {@code answer} to request {@code requestId} of {@code type} on {@code ch}: at once, or
   * once a {@link Deferred} answer completes (flushed then, as nothing else flushes it). A reply
   * that cannot be written closes the connection, so the caller fails at once rather than at its
   * timeout.
   *
   * @param server how errors and logs name this server, e.g. "name node"
   */
  public static void reply(Channel ch, String server, int type, long requestId, Message answer) {
    if (answer instanceof Deferred deferred) {
      // The reply is the only use of the completion, and write() reports its own failures.
      @SuppressWarnings("FutureReturnValueIgnored")
      var unused =
          deferred.answer().whenComplete((m, e) -> write(ch, server, type, requestId, m, e, true));
    } else {
      write(ch, server, type, requestId, answer, null, false);
    }
  }

  /** Sends {@code error} as the reply to request {@code requestId}; see {@link #reply}. */
  public static void replyError(
      Channel ch, String server, int type, long requestId, Throwable error) {
    write(ch, server, type, requestId, null, error, false);
  }

  private static void write(
      Channel ch,
      String server,
      int type,
      long requestId,
      Message answer,
      Throwable error,
      boolean flush) {
    int replyFlags = Frame.FLAG_RESPONSE;
    Throwable cause = error == null ? null : EmberException.unwrap(error);
    if (cause instanceof EmberException e) {
      answer = new Messages.ErrorReply(e.code(), e.getMessage());
      replyFlags |= Frame.FLAG_ERROR;
    } else if (cause != null) {
      LOG.error("{}: internal error on request type {}", server, type, cause);
      answer = new Messages.ErrorReply(ErrorCode.INTERNAL, server + " internal error: " + cause);
      replyFlags |= Frame.FLAG_ERROR;
    }
    Frame.write(ch, type, replyFlags, requestId, answer, flush)
        .addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
  }
}
