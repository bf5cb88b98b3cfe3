package io.ember.nvmf.tcp;

import io.netty.channel.DefaultSelectStrategyFactory;
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
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;

/**
 * Picks Netty's native epoll transport on Linux (lower wake-up latency than NIO's selector) and NIO
 * everywhere else, or when {@code -Dio.ember.nvmf.nio=true} asks for it.
 */
public final class Transports {
  private static final boolean EPOLL =
      !Boolean.getBoolean("io.ember.nvmf.nio") && Epoll.isAvailable();

  private Transports() {}

  /** Whether the epoll transport is in use. */
  public static boolean epoll() {
    return EPOLL;
  }

  /** An event loop group of {@code threads} daemon threads named {@code name-*}. */
  public static EventLoopGroup group(int threads, String name) {
    return group(threads, name, Duration.ZERO);
  }

  /**
   * An event loop group of {@code threads} daemon threads named {@code name-*} that keep polling
   * their sockets for {@code busyPoll} after each event before they sleep (see {@link
   * PollingSelectStrategy}); zero sleeps at once.
   */
  public static EventLoopGroup group(int threads, String name, Duration busyPoll) {
    return new MultiThreadIoEventLoopGroup(
        threads, new DefaultThreadFactory(name, true), ioHandlers(busyPoll));
  }

  /**
   * The I/O handlers of {@link #group(int, String, Duration)}'s event loops, for a group built
   * otherwise: epoll or NIO, polling for {@code busyPoll} before they sleep.
   */
  public static IoHandlerFactory ioHandlers(Duration busyPoll) {
    SelectStrategyFactory strategy =
        busyPoll.isZero()
            ? DefaultSelectStrategyFactory.INSTANCE
            : PollingSelectStrategy.factory(busyPoll);
    return EPOLL
        ? EpollIoHandler.newFactory(0, strategy)
        : NioIoHandler.newFactory(SelectorProvider.provider(), strategy);
  }

  /** Client socket channel class matching {@link #group(int, String)}. */
  public static Class<? extends SocketChannel> socketChannel() {
    return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
  }

  /** Server socket channel class matching {@link #group(int, String)}. */
  public static Class<? extends ServerChannel> serverChannel() {
    return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }
}
