package io.ember.namenode;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Frame;
import io.ember.protocol.FrameDecoder;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.util.AttributeKey;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The name node: holds the namespace and the block map in memory, hands out blocks of the data
 * nodes that register with it, and marks data nodes lost when their heartbeats stop. It is never on
 * the data path.
 *
 * <p>Requests run on the network thread that read them, or with {@link
 * NameNodeKeys#HANDLER_THREADS} set, on a pool of that many threads: each connection's requests one
 * at a time and in order, as on a network thread, many connections' at once.
 *
 * <pre>{@code
 * try (NameNode nn = NameNode.start(config)) {
 *   System.out.println("listening on " + nn.address());
 *   // ... serves until closed
 * }
 * }</pre>
 */
public final class NameNode implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NameNode.class);

  /** Requests a connection may have waiting for the pool before the name node stops reading it. */
  private static final int MAX_QUEUED_PER_CONNECTION = 256;

  /** Requests of one connection a pool thread runs before it lets other connections' run. */
  private static final int BATCH = 32;

  private static final AttributeKey<Lane> LANE = AttributeKey.valueOf("ember.namenode.lane");

  private final NameNodeState state;
  private final RpcServer server;
  private final ScheduledExecutorService reaper;

  /** The periodic expiry of silent data nodes, cancelled on close. */
  private final java.util.concurrent.ScheduledFuture<?> reaping;

  /** The handler pool, or null when requests run on the network threads. */
  private final ExecutorService handlers;

  /** The connection each data node registered on; see {@link #checkHeartbeatConnection}. */
  private final Map<Integer, Channel> datanodeConnections = new ConcurrentHashMap<>();

  private final LifeCycle lifeCycle = new LifeCycle("name node");
  private volatile boolean closing;
  private final InetSocketAddress address;

  private NameNode(EmberConfig config, String host, int port) throws EmberException {
    lifeCycle.beginStart();
    long blockSize = config.get(EmberKeys.BLOCK_SIZE);
    if (Long.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          EmberKeys.BLOCK_SIZE.name() + ": " + blockSize + " is not a power of two");
    }
    Duration timeout = config.get(NameNodeKeys.DATANODE_TIMEOUT);
    state =
        new NameNodeState(
            (int) blockSize,
            NameNodeKeys.parseOrder(config.get(NameNodeKeys.STORAGE_CLASS_ORDER)),
            timeout,
            System::nanoTime);
    int handlerThreads = config.get(NameNodeKeys.HANDLER_THREADS);
    handlers =
        handlerThreads == 0
            ? null
            : Executors.newFixedThreadPool(
                handlerThreads,
                new ThreadFactory() {
                  private final AtomicInteger next = new AtomicInteger();

                  @Override
                  public Thread newThread(Runnable r) {
                    Thread t = new Thread(r, "namenode-handler-" + next.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                  }
                });
    server = new RpcServer("name node", config, new Service());
    try {
      address = server.start(host, port);
    } catch (EmberException | RuntimeException e) {
      if (handlers != null) {
        handlers.shutdownNow();
      }
      throw e;
    }
    reaper =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "namenode-liveness");
              t.setDaemon(true);
              return t;
            });
    long period = Math.max(10, timeout.toMillis() / 4);
    reaping =
        reaper.scheduleWithFixedDelay(
            state::expireDatanodes, period, period, TimeUnit.MILLISECONDS);
    lifeCycle.started();
  }

  /**
   * Starts a name node on the configured bind host and port.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalArgumentException when a configuration value is bad
   */
  public static NameNode start(EmberConfig config) throws EmberException {
    return new NameNode(config, config.get(NameNodeKeys.BIND_HOST), config.get(NameNodeKeys.PORT));
  }

  /**
   * Starts a name node on the given host and port (0 for any free port).
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalArgumentException when a configuration value is bad
   */
  public static NameNode start(EmberConfig config, String host, int port) throws EmberException {
    return new NameNode(config, host, port);
  }

  /** The address the name node listens on. */
  public InetSocketAddress address() {
    return address;
  }

  /** The cluster's block size. */
  public int blockSize() {
    return state.blockSize();
  }

  /** Checks heartbeats now instead of at the next tick; returns the data nodes marked lost. */
  public int expireDatanodes() {
    return state.expireDatanodes();
  }

  /** Stops serving and drops all metadata. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    closing = true;
    reaping.cancel(false);
    reaper.shutdownNow();
    server.close();
    if (handlers != null) {
      // Queued requests are released unanswered (their connections are closed by now).
      handlers.shutdown();
      try {
        if (!handlers.awaitTermination(5, TimeUnit.SECONDS)) {
          LOG.warn("name node: request handlers still busy 5 s after close");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    lifeCycle.closed();
  }

  /**
   * Refuses a heartbeat that comes on another connection than the one its data node registered on,
   * while that one is open. Data node ids start at 1 again when a name node restarts, so a data
   * node that registered with the previous one can heartbeat with an id this one has given another
   * node: accepted, it would keep that node's registration alive and take its blocks to deallocate,
   * and never register itself. Refused, it registers again; a node that only reconnected gets its
   * id back that way.
   */
  private void checkHeartbeatConnection(int datanodeId, Channel channel) throws EmberException {
    Channel registeredOn = datanodeConnections.get(datanodeId);
    if (registeredOn != null && registeredOn != channel && registeredOn.isActive()) {
      throw new EmberException(
          ErrorCode.UNKNOWN_DATANODE,
          "data node " + datanodeId + " is registered on another connection: register again");
    }
  }

  private Message answer(Channel channel, MessageType type, ByteBuf in) throws EmberException {
    switch (type) {
      case CREATE:
        {
          Messages.CreateRequest r = Messages.CreateRequest.decode(in);
          return state.create(r.path(), r.type(), r.storageClass(), r.createParents());
        }
      case LOOKUP:
        return state.lookup(Messages.PathRequest.decode(in).path());
      case OPEN:
        {
          Messages.OpenRequest r = Messages.OpenRequest.decode(in);
          return state.open(r.path(), r.maxBlocks());
        }
      case LIST:
        {
          Messages.ListRequest r = Messages.ListRequest.decode(in);
          return state.list(r.path(), r.startAfter(), r.limit());
        }
      case DELETE:
        {
          Messages.DeleteRequest r = Messages.DeleteRequest.decode(in);
          state.delete(r.path(), r.recursive());
          return Message.EMPTY;
        }
      case RENAME:
        {
          Messages.RenameRequest r = Messages.RenameRequest.decode(in);
          state.rename(r.source(), r.target());
          return Message.EMPTY;
        }
      case ALLOCATE_BLOCK:
        {
          Messages.AllocateBlockRequest r = Messages.AllocateBlockRequest.decode(in);
          return state.allocateBlock(r.fileId(), r.index());
        }
      case GET_BLOCKS:
        {
          Messages.GetBlocksRequest r = Messages.GetBlocksRequest.decode(in);
          return new Messages.BlocksResponse(
              state.getBlocks(r.fileId(), r.startIndex(), r.maxCount()));
        }
      case CLOSE_FILE:
        {
          Messages.CloseFileRequest r = Messages.CloseFileRequest.decode(in);
          return state.closeFile(r.fileId(), r.length());
        }
      case DF:
        Wire.expectEnd(in, "DF");
        return new Messages.DfResponse(state.usage());
      case REGISTER_DATANODE:
        {
          Messages.RegisterRequest r = Messages.RegisterRequest.decode(in);
          Messages.RegisterResponse registered =
              state.register(
                  r.storageClass(),
                  r.tier(),
                  r.endpoint(),
                  r.capacityBytes(),
                  r.trimOnFree(),
                  r.incarnation(),
                  r.reviveOnly());
          datanodeConnections.put(registered.datanodeId(), channel);
          return registered;
        }
      case HEARTBEAT:
        {
          Messages.HeartbeatRequest r = Messages.HeartbeatRequest.decode(in);
          checkHeartbeatConnection(r.datanodeId(), channel);
          Messages.HeartbeatResponse answer =
              new Messages.HeartbeatResponse(state.heartbeat(r.datanodeId(), r.trimmed()));
          // A node whose connection closed may heartbeat on its new one: that is its connection
          // now.
          datanodeConnections.put(r.datanodeId(), channel);
          return answer;
        }
      default:
        throw new EmberException(
            ErrorCode.UNKNOWN_MESSAGE, type + " is not served by the name node");
    }
  }

  private final class Service implements RpcService {
    @Override
    public Message handle(Channel channel, MessageType type, ByteBuf in) throws EmberException {
      if (handlers != null && !channel.hasAttr(LANE)) {
        // RpcServer answers each request on the network thread that read it and has no place
        // for an executor; a lane placed in front of its handler takes this connection's later
        // requests to the pool. The first one runs here, on the network thread.
        Lane lane = new Lane(channel);
        channel.attr(LANE).set(lane);
        ChannelPipeline pipeline = channel.pipeline();
        ChannelHandlerContext frames = pipeline.context(FrameDecoder.class);
        if (frames == null) {
          LOG.error(
              "name node: no frame decoder on {}; its requests run on the network thread", channel);
        } else {
          pipeline.addAfter(frames.name(), "namenode-handlers", lane);
        }
      }
      return answer(channel, type, in);
    }

    @Override
    public void connectionClosed(Channel channel) {
      datanodeConnections.values().removeIf(c -> c == channel);
    }
  }

  /**
   * Takes a connection's requests from its network thread to the handler pool and runs them there,
   * one at a time and in the order they came, answering each as the RPC server would. Frames the
   * server answers by itself (no-ops, malformed frames, frames of another version) go on to it.
   * Reading from the connection pauses while many of its requests wait.
   */
  private final class Lane extends ChannelInboundHandlerAdapter implements Runnable {
    private final Channel channel;
    private final Queue<Frame> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();

    /** True while this lane is on the pool's queue or running: it runs on one thread at once. */
    private final AtomicBoolean scheduled = new AtomicBoolean();

    Lane(Channel channel) {
      this.channel = channel;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      Frame frame = (Frame) msg;
      MessageType type =
          frame.version() == Frame.VERSION && !frame.isResponse()
              ? MessageType.fromCode(frame.type())
              : null;
      if (type == null || type == MessageType.NOOP) {
        ctx.fireChannelRead(msg);
        return;
      }
      queue.add(frame);
      if (queued.incrementAndGet() >= MAX_QUEUED_PER_CONNECTION || !channel.isWritable()) {
        channel.config().setAutoRead(false);
      }
      schedule();
    }

    private void schedule() {
      if (!scheduled.compareAndSet(false, true)) {
        return;
      }
      try {
        handlers.execute(this);
      } catch (RejectedExecutionException e) {
        // The name node is closing: nothing more is answered.
        for (Frame f; (f = queue.poll()) != null; ) {
          f.release();
        }
        scheduled.set(false);
      }
    }

    @Override
    public void run() {
      int done = 0;
      try {
        for (Frame frame; done < BATCH && (frame = queue.poll()) != null; done++) {
          try {
            if (!closing) {
              respond(frame);
            }
          } catch (RuntimeException e) {
            // An answer that cannot be written: as on the network thread, the connection goes.
            LOG.error("name node: closing connection from {}", channel.remoteAddress(), e);
            channel
                .close()
                .addListener(
                    f -> {
                      if (!f.isSuccess()) {
                        LOG.debug(
                            "name node: closing {} failed", channel.remoteAddress(), f.cause());
                      }
                    });
          } finally {
            frame.release();
          }
        }
        if (done > 0) {
          channel.flush();
        }
      } finally {
        int left = queued.addAndGet(-done);
        if (left < MAX_QUEUED_PER_CONNECTION / 2
            && channel.isWritable()
            && !channel.config().isAutoRead()) {
          channel.config().setAutoRead(true);
        }
        scheduled.set(false);
        if (!queue.isEmpty()) {
          schedule();
        }
      }
    }

    /** What the RPC server does with an answer or an error, here off its thread. */
    private void respond(Frame frame) {
      MessageType type = MessageType.fromCode(frame.type());
      int flags = Frame.FLAG_RESPONSE;
      Message answer;
      try {
        answer = answer(channel, type, frame.payload());
      } catch (EmberException e) {
        answer = new Messages.ErrorReply(e.code(), e.getMessage());
        flags |= Frame.FLAG_ERROR;
      } catch (RuntimeException e) {
        LOG.error("name node: internal error on request type {}", type, e);
        answer = new Messages.ErrorReply(ErrorCode.INTERNAL, "name node internal error: " + e);
        flags |= Frame.FLAG_ERROR;
      }
      // An answer that cannot be written leaves its caller waiting: close, so it fails at once.
      Frame.write(channel, type, flags, frame.requestId(), answer)
          .addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
    }
  }
}
