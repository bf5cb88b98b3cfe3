package io.ember.protocol;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.Locale;

/**
 * Picks Netty's native epoll transport where it loads (Linux) and NIO elsewhere. The choice can be
 * forced with {@link EmberKeys#RPC_TRANSPORT}.
 *
 * @param epoll true when the native epoll transport is used
 */
public record Transports(boolean epoll) {

  /** The transport for a configuration value of "auto", "epoll" or "nio". */
  public static Transports select(String choice) {
    String c = choice.toLowerCase(Locale.ROOT);
    return switch (c) {
      case "nio" -> new Transports(false);
      case "epoll" -> {
        if (!Epoll.isAvailable()) {
          throw new IllegalStateException(
              "epoll transport asked for but unavailable: " + Epoll.unavailabilityCause());
        }
        yield new Transports(true);
      }
      case "auto" -> new Transports(Epoll.isAvailable());
      default ->
          throw new IllegalArgumentException(
              "unknown transport '" + choice + "': use auto, epoll or nio");
    };
  }

  /** The transport for a configuration. */
  public static Transports from(EmberConfig config) {
    return select(config.get(EmberKeys.RPC_TRANSPORT));
  }

  /** A new event loop group with daemon threads named after {@code name}. */
  public EventLoopGroup newGroup(int threads, String name) {
    return newGroup(threads, name, Duration.ZERO);
  }

  /**
   * A new event loop group whose threads poll their sockets for {@code busyPoll} after each event
   * before they sleep (see {@link EmberKeys#BUSY_POLL}); zero makes {@link #newGroup(int, String)}.
   */
  public EventLoopGroup newGroup(int threads, String name, Duration busyPoll) {
    IoHandlerFactory factory;
    if (busyPoll.isZero()) {
      factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    } else {
      SelectStrategyFactory strategies = PollingSelectStrategy.factory(busyPoll);
      factory =
          epoll
              ? EpollIoHandler.newFactory(0, strategies)
              : NioIoHandler.newFactory(SelectorProvider.provider(), strategies);
    }
    return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), factory);
  }

  /** The server channel class that matches {@link #newGroup}. */
  public Class<? extends ServerChannel> serverChannel() {
    return epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }

  /**
   * Socket reads of at most 64 KiB. Each read is copied on at once (into a caller's array or a
   * block), so a buffer this small is still in the CPU cache when it is copied out; reads of up to
   * 1 MiB, tried before, went through cold memory and moved 1 MiB reads about 10% slower.
   */
  public static io.netty.channel.RecvByteBufAllocator receiveBuffers() {
    return new io.netty.channel.AdaptiveRecvByteBufAllocator(64, 16 << 10, 64 << 10);
  }

  /** The client channel class that matches {@link #newGroup}. */
  public Class<? extends Channel> channel() {
    return epoll ? EpollSocketChannel.class : NioSocketChannel.class;
  }
}
