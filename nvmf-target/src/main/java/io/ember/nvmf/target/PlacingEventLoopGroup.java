package io.ember.nvmf.target;

import io.ember.nvmf.tcp.Transports;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The target's event loops. Each accepted connection goes to the loop serving the fewest I/O
 * queues, then the fewest connections, not to the next loop in turn as Netty places them: a host
 * connects its admin queue and then its I/O queues, so taken in turn, the I/O queues of hosts with
 * one queue each all landed on every other loop, and the loops in between served only admin queues,
 * which carry little more than keep-alives.
 */
final class PlacingEventLoopGroup extends MultiThreadIoEventLoopGroup {
  /** What a loop serves. */
  private static final class Load {
    final EventLoop loop;

    /** Connections placed on the loop and not yet closed, whatever their queue. */
    final AtomicInteger connections = new AtomicInteger();

    /** Connections on the loop that connected an I/O queue. */
    final AtomicInteger ioQueues = new AtomicInteger();

    Load(EventLoop loop) {
      this.loop = loop;
    }
  }

  /** Marks a connection counted as an I/O queue. */
  private static final AttributeKey<Boolean> IO_QUEUE =
      AttributeKey.valueOf(PlacingEventLoopGroup.class, "ioQueue");

  /** Every loop of the group with what it serves, in the group's order; fixed once built. */
  private final List<Load> loads = new ArrayList<>();

  /** Where the search for the least loaded loop starts, so that ties go round. */
  private final AtomicInteger turn = new AtomicInteger();

  PlacingEventLoopGroup(int threads, String name, Duration busyPoll) {
    super(threads, new DefaultThreadFactory(name, true), Transports.ioHandlers(busyPoll));
    for (EventExecutor e : this) {
      loads.add(new Load((EventLoop) e));
    }
  }

  /**
   * Places an accepted connection on the least loaded loop. Counted here, on the accepting thread,
   * rather than once the connection starts on its loop, so that connections accepted back to back
   * see each other.
   */
  @Override
  public ChannelFuture register(Channel channel) {
    if (channel instanceof ServerChannel) {
      return super.register(channel);
    }
    Load load = leastLoaded();
    load.connections.incrementAndGet();
    ChannelFuture registered = load.loop.register(channel);
    registered.addListener(
        f -> {
          if (!f.isSuccess()) {
            load.connections.decrementAndGet();
            return;
          }
          channel
              .closeFuture()
              .addListener(
                  closed -> {
                    load.connections.decrementAndGet();
                    if (channel.hasAttr(IO_QUEUE)) {
                      load.ioQueues.decrementAndGet();
                    }
                  });
        });
    return registered;
  }

  private Load leastLoaded() {
    int n = loads.size();
    int from = Math.floorMod(turn.getAndIncrement(), n);
    Load best = null;
    int bestQueues = Integer.MAX_VALUE;
    int bestConnections = Integer.MAX_VALUE;
    for (int i = 0; i < n; i++) {
      Load load = loads.get((from + i) % n);
      int queues = load.ioQueues.get();
      int connections = load.connections.get();
      if (queues < bestQueues || (queues == bestQueues && connections < bestConnections)) {
        best = load;
        bestQueues = queues;
        bestConnections = connections;
      }
    }
    return best;
  }

  /** {@code channel}, which this group placed, connected an I/O queue; counted until it closes. */
  void ioQueueConnected(Channel channel) {
    for (Load load : loads) {
      if (load.loop == channel.eventLoop()
          && channel.attr(IO_QUEUE).setIfAbsent(Boolean.TRUE) == null) {
        load.ioQueues.incrementAndGet();
      }
    }
  }

  /** I/O queues connected on each loop, in the group's order. */
  List<Integer> ioQueuesPerLoop() {
    List<Integer> out = new ArrayList<>(loads.size());
    for (Load load : loads) {
      out.add(load.ioQueues.get());
    }
    return out;
  }
}
