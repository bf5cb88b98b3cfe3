package io.ember.http;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.RpcServer;
import io.ember.protocol.Tls;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP server an Ember server runs beside its RPC port: status pages, a JSON API under {@code
 * /api/} and Prometheus metrics at {@code /metrics}.
 *
 * <p>It has its own network thread, so a slow or stuck HTTP client never delays an RPC. It serves
 * GET and HEAD of the paths it was given; other paths get 404 and other methods 405. A connection
 * that stays idle for {@link #IDLE_SECONDS} is closed.
 */
public final class StatusServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StatusServer.class);

  static final int IDLE_SECONDS = 60;
  private static final int MAX_REQUEST_BYTES = 16 << 10;

  /** Answers one path; runs on the HTTP thread. */
  @FunctionalInterface
  public interface Route {
    /**
     * Answers a request.
     *
     * @param query the request's path and parameters
     * @throws NotFoundException for a resource that does not exist (answered with 404)
     * @throws Exception anything else (answered with 500 and logged)
     */
    Response handle(QueryStringDecoder query) throws Exception;
  }

  /** What a route answers: a status, a content type and a body. */
  // A body is handed over once and never compared: an array is what Netty wraps.
  @SuppressWarnings("ArrayRecordComponent")
  public record Response(int status, String contentType, byte[] body) {
    /** A 200 answer of UTF-8 text of {@code contentType}. */
    public static Response ok(String contentType, String body) {
      return new Response(200, contentType, body.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** Thrown by a route for a resource that does not exist. */
  public static final class NotFoundException extends Exception {
    private static final long serialVersionUID = 1L;

    public NotFoundException(String message) {
      super(message);
    }
  }

  /** The HTTP port setting's default: the RPC port + 1, or any free port when that is 0. */
  public static final String PORT_AUTO = "auto";

  /** The HTTP port setting that turns the pages and metrics off. */
  public static final String PORT_OFF = "off";

  /**
   * The port an HTTP port setting ({@link #PORT_AUTO}, {@link #PORT_OFF} or a number) asks for
   * beside RPC port {@code rpcPort}: a port, 0 for any free one, or -1 for none.
   *
   * @throws IllegalArgumentException for a setting that is none of those
   */
  public static int port(String setting, int rpcPort) {
    String v = setting.trim();
    if (v.equals(PORT_OFF)) {
      return -1;
    }
    if (v.equals(PORT_AUTO)) {
      return rpcPort == 0 || rpcPort == 65535 ? 0 : rpcPort + 1;
    }
    int port = Integer.parseInt(v);
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(port + " is not a port");
    }
    return port;
  }

  /** Whether {@link #port} takes {@code setting}. */
  public static boolean validPort(String setting) {
    try {
      port(setting, 0);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private final String name;
  private final Map<String, Route> routes;
  private final Tls tls;
  private final LifeCycle lifeCycle;
  private EventLoopGroup group;
  private Channel serverChannel;

  /**
   * A server named {@code name} (in thread names and logs) answering {@code routes}, each keyed by
   * its exact path.
   */
  public StatusServer(String name, Map<String, Route> routes) {
    this(name, routes, null);
  }

  /**
   * A server as {@link #StatusServer(String, Map)}, serving HTTPS with {@code tls} (null: plain
   * HTTP).
   */
  public StatusServer(String name, Map<String, Route> routes, Tls tls) {
    this.name = name;
    this.routes = new LinkedHashMap<>(routes);
    this.tls = tls;
    this.lifeCycle = new LifeCycle(name + " http");
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
    group =
        new MultiThreadIoEventLoopGroup(
            1, new DefaultThreadFactory(name + "-http", true), NioIoHandler.newFactory());
    ServerBootstrap b =
        new ServerBootstrap()
            .group(group)
            .channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_REUSEADDR, true)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    if (tls != null) {
                      tls.secureHttpServer(ch);
                    }
                    ch.pipeline()
                        .addLast(new IdleStateHandler(0, 0, IDLE_SECONDS, TimeUnit.SECONDS))
                        .addLast(new HttpServerCodec())
                        .addLast(new HttpObjectAggregator(MAX_REQUEST_BYTES))
                        .addLast(new Handler());
                  }
                });
    try {
      serverChannel = b.bind(host, port).sync().channel();
    } catch (Exception e) {
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
      lifeCycle.beginClose();
      lifeCycle.closed();
      throw RpcServer.bindFailed(name + " cannot serve HTTP", host, port, e);
    }
    lifeCycle.started();
    return (InetSocketAddress) serverChannel.localAddress();
  }

  /**
   * Starts a server named {@code name} answering {@code routes} as the HTTP port setting {@code
   * setting} asks, beside a server whose RPC port was configured as {@code rpcPort} (0 when the OS
   * chooses it): none when it is {@link #PORT_OFF}; with {@link #PORT_AUTO}, on the RPC port + 1,
   * or on any free port when that one is taken (a status page is no reason for a server not to
   * start).
   *
   * @return the running server, or null when the setting is off
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when an explicit port cannot be bound
   */
  public static StatusServer startAsConfigured(
      String name, Map<String, Route> routes, String setting, String host, int rpcPort)
      throws EmberException {
    return startAsConfigured(name, routes, setting, host, rpcPort, null);
  }

  /**
   * Starts a server as {@link #startAsConfigured(String, Map, String, String, int)} does, serving
   * HTTPS with {@code tls} (null: plain HTTP).
   *
   * @return the running server, or null when the setting is off
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when an explicit port cannot be bound
   */
  public static StatusServer startAsConfigured(
      String name, Map<String, Route> routes, String setting, String host, int rpcPort, Tls tls)
      throws EmberException {
    int port = port(setting, rpcPort);
    if (port < 0) {
      return null;
    }
    StatusServer server = new StatusServer(name, routes, tls);
    try {
      server.start(host, port);
    } catch (EmberException e) {
      if (!setting.trim().equals(PORT_AUTO) || port == 0) {
        throw e;
      }
      LOG.warn("{}; serving HTTP on a free port instead", e.getMessage());
      server = new StatusServer(name, routes, tls);
      server.start(host, 0);
    }
    return server;
  }

  /**
   * The address a browser on this machine opens for a server bound at {@code bound}: {@code
   * localhost} for a server on every interface, IPv6 in brackets.
   */
  public static String url(InetSocketAddress bound) {
    return url(bound, false);
  }

  /** As {@link #url(InetSocketAddress)}, with {@code https} when {@code secure}. */
  public static String url(InetSocketAddress bound, boolean secure) {
    String host = bound.getAddress().isAnyLocalAddress() ? "localhost" : bound.getHostString();
    return (secure ? "https://" : "http://") + new HostPort(host, bound.getPort()) + "/";
  }

  /** This server's address for a browser on this machine; only after {@link #start}. */
  public String url() {
    return url(address(), tls != null);
  }

  /** The bound address; only after {@link #start}. */
  public InetSocketAddress address() {
    return (InetSocketAddress) serverChannel.localAddress();
  }

  /** Stops listening and closes every connection. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    if (serverChannel != null) {
      serverChannel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    if (group != null) {
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    lifeCycle.closed();
  }

  private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      Response response = answer(request);
      boolean head = HttpMethod.HEAD.equals(request.method());
      FullHttpResponse out =
          new DefaultFullHttpResponse(
              HttpVersion.HTTP_1_1,
              HttpResponseStatus.valueOf(response.status()),
              head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(response.body()));
      out.headers()
          .set(HttpHeaderNames.CONTENT_TYPE, response.contentType())
          .set(HttpHeaderNames.CONTENT_LENGTH, response.body().length)
          .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
      if (response.status() == 405) {
        out.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
      }
      boolean keepAlive = HttpUtil.isKeepAlive(request) && request.decoderResult().isSuccess();
      if (keepAlive) {
        out.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
      } else {
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
      }
      if (!ctx.channel().isWritable()) {
        // A client that asks without reading the answers: stop reading its requests until it
        // catches up, so its answers cannot pile up in memory.
        ctx.channel().config().setAutoRead(false);
      }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      if (ctx.channel().isWritable()) {
        ctx.channel().config().setAutoRead(true);
      }
      ctx.fireChannelWritabilityChanged();
    }

    private Response answer(FullHttpRequest request) {
      if (!request.decoderResult().isSuccess()) {
        return text(400, "bad request: " + request.decoderResult().cause());
      }
      if (!HttpMethod.GET.equals(request.method()) && !HttpMethod.HEAD.equals(request.method())) {
        return text(405, request.method() + " is not served here: only GET and HEAD");
      }
      QueryStringDecoder query = new QueryStringDecoder(request.uri());
      Route route = routes.get(query.path());
      if (route == null) {
        return text(404, "no page at " + query.path() + "; pages: " + List.copyOf(routes.keySet()));
      }
      try {
        return route.handle(query);
      } catch (NotFoundException e) {
        return text(404, e.getMessage());
      } catch (Exception e) {
        LOG.error("{}: HTTP {} failed", name, request.uri(), e);
        return text(500, name + " could not answer " + query.path() + ": " + e);
      }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
      if (evt instanceof IdleStateEvent) {
        var unused = ctx.close();
        return;
      }
      ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      LOG.debug(
          "{}: closing HTTP connection from {}: {}", name, ctx.channel().remoteAddress(), cause);
      var unused = ctx.close();
    }
  }

  private static Response text(int status, String message) {
    return new Response(
        status, "text/plain; charset=utf-8", (message + "\n").getBytes(StandardCharsets.UTF_8));
  }
}
