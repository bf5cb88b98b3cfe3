package io.ember.nvmf.tcp;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
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
    IoHandlerFactory f = EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), f);
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
