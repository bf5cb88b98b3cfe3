package io.ember.protocol;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Opens and shares {@link RpcClient} connections: one per server address, opened again when it
 * closes. Owns the network threads of its connections.
 */
public final class RpcClients implements AutoCloseable {
  private final EventLoopGroup group;
  private final Transports transports;
  private final int maxFrame;
  private final long timeoutMillis;
  private final int connectTimeoutMillis;
  private final LifeCycle lifeCycle;
  private final Tls tls;
  private final Map<HostPort, CompletableFuture<RpcClient>> connections = new ConcurrentHashMap<>();

  /** The first call of every new connection to an address, before it is handed out. */
  private final Map<HostPort, Greeting> greetings = new ConcurrentHashMap<>();

  /** Connections being opened: closing fails them rather than leave callers to their timeout. */
  private final Set<CompletableFuture<RpcClient>> opening = ConcurrentHashMap.newKeySet();

  /** Connections configured by {@code config}, with threads named after {@code name}. */
  public RpcClients(EmberConfig config, String name) {
    this(config, name, EmberKeys.ioThreads(config));
  }

  /**
   * As {@link #RpcClients(EmberConfig, String)} with an explicit thread count.
   *
   * @throws IllegalArgumentException when TLS is asked for and its files cannot be used
   */
  public RpcClients(EmberConfig config, String name, int threads) {
    try {
      this.tls = Tls.forClient(config);
    } catch (EmberException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    this.transports = Transports.from(config);
    this.group = transports.newGroup(threads, name);
    this.maxFrame = (int) Math.min(Integer.MAX_VALUE, config.get(EmberKeys.MAX_FRAME_BYTES));
    this.timeoutMillis = config.get(EmberKeys.RPC_TIMEOUT).toMillis();
    this.connectTimeoutMillis = (int) config.get(EmberKeys.CONNECT_TIMEOUT).toMillis();
    this.lifeCycle = new LifeCycle(name);
    lifeCycle.beginStart();
    lifeCycle.started();
  }

  /**
   * Makes every connection opened to {@code address} from now on run {@code greeting} first, and be
   * handed out only once it succeeds; a refusal fails the connection with the server's error. For
   * authentication ({@link Greeting#token}, {@link Greeting#scram}), which a connection needs
   * before any other call.
   */
  public void greet(HostPort address, Greeting greeting) {
    greetings.put(address, greeting);
  }

  /**
   * The shared connection to {@code address}, opened if there is none or the last one closed.
   *
   * @param peerKind how errors name the peer, e.g. "name node" or "data node 3"
   * @return the connection; fails with {@link ErrorCode#UNREACHABLE} when it cannot be opened
   */
  public CompletableFuture<RpcClient> get(HostPort address, String peerKind) {
    while (true) {
      CompletableFuture<RpcClient> f = connections.get(address);
      if (f != null) {
        if (!f.isDone() || (!f.isCompletedExceptionally() && f.join().isActive())) {
          return f;
        }
        connections.remove(address, f);
        continue;
      }
      CompletableFuture<RpcClient> fresh = new CompletableFuture<>();
      if (connections.putIfAbsent(address, fresh) == null) {
        // Callers that come meanwhile wait for fresh; this one for the same outcome, once fresh
        // has it.
        return open(address, peerKind)
            .whenComplete(
                (c, e) -> {
                  if (e != null) {
                    connections.remove(address, fresh);
                    fresh.completeExceptionally(e);
                  } else {
                    fresh.complete(c);
                  }
                });
      }
    }
  }

  /**
   * As {@link #get}, trying once more when the first attempt fails to connect: nothing has been
   * sent by then, so a second attempt is always safe, and it replaces a connection that closed
   * under a caller or an attempt whose completion was lost.
   */
  public CompletableFuture<RpcClient> getOrRetry(HostPort address, String peerKind) {
    return get(address, peerKind)
        .exceptionallyCompose(
            e -> {
              Throwable cause = EmberException.unwrap(e);
              if (cause instanceof EmberException ee
                  && (ee.code() == ErrorCode.CLOSED || ee.code() == ErrorCode.UNAUTHENTICATED)) {
                // This client is closing, or the server refused its greeting: no point.
                return CompletableFuture.failedFuture(ee);
              }
              return get(address, peerKind);
            });
  }

  /**
   * Opens a connection of its own (not shared).
   *
   * @return the connection; fails with {@link ErrorCode#UNREACHABLE}
   */
  public CompletableFuture<RpcClient> open(HostPort address, String peerKind) {
    CompletableFuture<RpcClient> result = new CompletableFuture<>();
    try {
      lifeCycle.checkRunning();
    } catch (EmberException e) {
      result.completeExceptionally(e);
      return result;
    }
    String peer = peerKind + " " + address;
    RpcClient[] holder = new RpcClient[1];
    List<io.netty.util.concurrent.Future<Channel>> handshake = new ArrayList<>(1);
    Bootstrap b =
        new Bootstrap()
            .group(group)
            .channel(transports.channel())
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.RECVBUF_ALLOCATOR, Transports.receiveBuffers())
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis)
            .handler(
                new ChannelInitializer<Channel>() {
                  @Override
                  protected void initChannel(Channel ch) {
                    RpcClient client = new RpcClient(ch, peer, timeoutMillis);
                    holder[0] = client;
                    ch.pipeline().addLast("frames", new FrameDecoder(maxFrame));
                    ch.pipeline().addLast("rpc", client.new ResponseHandler());
                    if (tls != null) {
                      handshake.add(tls.secureClient(ch, address));
                    }
                  }
                });
    ChannelFuture cf;
    try {
      cf = b.connect(address.host(), address.port());
    } catch (RuntimeException e) {
      result.completeExceptionally(
          new EmberException(
              ErrorCode.CLOSED, "cannot reach " + peer + ": the client is closing", e));
      return result;
    }
    opening.add(result);
    cf.addListener(
        f -> {
          if (f.isSuccess() && tls != null) {
            // Usable once the handshake is done; until then, closing this client fails it.
            handshake
                .get(0)
                .addListener(
                    h -> {
                      opening.remove(result);
                      if (h.isSuccess()) {
                        greeted(address, result, holder[0]);
                      } else {
                        cf.channel().close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
                        result.completeExceptionally(handshakeFailed(h.cause(), peer));
                      }
                    });
          } else if (f.isSuccess()) {
            opening.remove(result);
            greeted(address, result, holder[0]);
          } else {
            opening.remove(result);
            result.completeExceptionally(connectFailed(peerKind, address, f.cause()));
          }
        });
    return withDeadline(result, cf, peerKind, address);
  }

  private static EmberException connectFailed(String peerKind, HostPort address, Throwable cause) {
    return new EmberException(
        ErrorCode.UNREACHABLE,
        "cannot connect to the " + peerKind + " at " + address + ": " + why(cause),
        cause);
  }

  /**
   * {@code result}, failed with {@link ErrorCode#UNREACHABLE} (and the connection attempt closed)
   * when it has not completed a little after the connect timeout: Netty drops listener
   * notifications when the event loop has already terminated (a client closing while it connects),
   * and no caller may wait forever for them.
   */
  private <T> CompletableFuture<T> withDeadline(
      CompletableFuture<T> result, ChannelFuture cf, String peerKind, HostPort address) {
    return result
        .orTimeout(connectTimeoutMillis + 2000L, TimeUnit.MILLISECONDS)
        .exceptionallyCompose(
            e -> {
              Throwable cause = EmberException.unwrap(e);
              if (cause instanceof java.util.concurrent.TimeoutException) {
                cf.channel().close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
                return CompletableFuture.failedFuture(
                    new EmberException(
                        ErrorCode.UNREACHABLE,
                        "cannot connect to the "
                            + peerKind
                            + " at "
                            + address
                            + ": no answer within "
                            + connectTimeoutMillis
                            + " ms"));
              }
              return CompletableFuture.failedFuture(cause);
            });
  }

  /** Hands {@code client} out once the greeting for {@code address}, if any, is answered. */
  private void greeted(HostPort address, CompletableFuture<RpcClient> result, RpcClient client) {
    Greeting greeting = greetings.get(address);
    if (greeting == null) {
      connected(result, client);
      return;
    }
    CompletableFuture<Void> greeted;
    try {
      greeted = greeting.greet(client);
    } catch (RuntimeException e) {
      greeted = CompletableFuture.failedFuture(e);
    }
    var unused =
        greeted.whenComplete(
            (v, e) -> {
              if (e != null) {
                client.close();
                result.completeExceptionally(EmberException.unwrap(e));
              } else {
                connected(result, client);
              }
            });
  }

  private static void connected(CompletableFuture<RpcClient> result, RpcClient client) {
    if (!result.complete(client)) {
      client.close(); // the client closed while it connected: nobody will use it
    }
  }

  /**
   * A failed TLS handshake: {@link ErrorCode#UNAUTHENTICATED} when TLS itself refused (a
   * certificate, a peer that does not speak TLS), {@link ErrorCode#UNREACHABLE} when the connection
   * merely closed before it finished (a server restarting).
   */
  private static EmberException handshakeFailed(Throwable cause, String peer) {
    if (Tls.refusedByTls(cause)) {
      return new EmberException(
          ErrorCode.UNAUTHENTICATED, Tls.whyHandshakeFailed(cause, peer), cause);
    }
    return new EmberException(
        ErrorCode.UNREACHABLE,
        "cannot connect to the " + peer + ": the connection closed during the TLS handshake",
        cause);
  }

  /**
   * Opens a plain TCP connection to {@code address} and closes it at once: whether something
   * listens there, whatever it speaks (an NVMe/TCP target, say), without TLS even when these
   * connections have it.
   *
   * @return completes when the connection opened; fails with {@link ErrorCode#UNREACHABLE}
   */
  public CompletableFuture<Void> probe(HostPort address, String peerKind) {
    CompletableFuture<Void> result = new CompletableFuture<>();
    ChannelFuture cf;
    try {
      lifeCycle.checkRunning();
      cf =
          new Bootstrap()
              .group(group)
              .channel(transports.channel())
              .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis)
              .handler(new io.netty.channel.ChannelInboundHandlerAdapter())
              .connect(address.host(), address.port());
    } catch (EmberException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(
          new EmberException(
              ErrorCode.CLOSED, "cannot reach " + peerKind + ": the client is closing", e));
    }
    cf.addListener(
        f -> {
          if (f.isSuccess()) {
            cf.channel().close().addListener(ChannelListeners.LOG_CLOSE_FAILURE);
            result.complete(null);
          } else {
            result.completeExceptionally(connectFailed(peerKind, address, f.cause()));
          }
        });
    return withDeadline(result, cf, peerKind, address);
  }

  /**
   * Why a connection could not be opened, in words a person can act on (the transport's own message
   * names system calls and error numbers).
   */
  static String why(Throwable cause) {
    if (cause instanceof java.net.UnknownHostException) {
      return "unknown host";
    }
    if (cause instanceof io.netty.channel.ConnectTimeoutException
        || cause instanceof java.net.SocketTimeoutException) {
      return "no answer (timed out)";
    }
    if (cause instanceof java.net.NoRouteToHostException) {
      return "no route to host";
    }
    String m = String.valueOf(cause.getMessage()).toLowerCase(java.util.Locale.ROOT);
    if (m.contains("refused")) {
      return "connection refused (is it running, on that port?)";
    }
    if (m.contains("unreachable")) {
      return "network unreachable";
    }
    return String.valueOf(cause.getMessage());
  }

  /** Closes every connection and stops the network threads. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    for (CompletableFuture<RpcClient> f : opening) {
      f.completeExceptionally(
          new EmberException(ErrorCode.CLOSED, "the client closed while it connected"));
    }
    opening.clear();
    for (CompletableFuture<RpcClient> f : connections.values()) {
      if (f.isDone() && !f.isCompletedExceptionally()) {
        f.join().close();
      }
    }
    connections.clear();
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    lifeCycle.closed();
  }
}
