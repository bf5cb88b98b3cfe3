package io.ember.namenode;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The name node: holds the namespace and the block map in memory, hands out blocks of the data
 * nodes that register with it, and marks data nodes lost when their heartbeats stop. It is never
 * on the data path.
 *
 * <pre>{@code
 * try (NameNode nn = NameNode.start(config)) {
 *   System.out.println("listening on " + nn.address());
 *   nn.awaitClose();
 * }
 * }</pre>
 */
public final class NameNode implements AutoCloseable {
  private final NameNodeState state;
  private final RpcServer server;
  private final ScheduledExecutorService reaper;
  private final LifeCycle lifeCycle = new LifeCycle("name node");
  private final InetSocketAddress address;

  private NameNode(EmberConfig config, String host, int port) throws EmberException {
    lifeCycle.beginStart();
    long blockSize = config.get(EmberKeys.BLOCK_SIZE);
    if (Long.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          EmberKeys.BLOCK_SIZE.name() + ": " + blockSize + " is not a power of two");
    }
    Duration timeout = config.get(NameNodeKeys.DATANODE_TIMEOUT);
    state = new NameNodeState((int) blockSize,
        NameNodeKeys.parseOrder(config.get(NameNodeKeys.STORAGE_CLASS_ORDER)), timeout,
        System::nanoTime);
    server = new RpcServer("name node", config, new Service());
    address = server.start(host, port);
    reaper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "namenode-liveness");
      t.setDaemon(true);
      return t;
    });
    long period = Math.max(10, timeout.toMillis() / 4);
    reaper.scheduleWithFixedDelay(state::expireDatanodes, period, period, TimeUnit.MILLISECONDS);
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
    reaper.shutdownNow();
    server.close();
    lifeCycle.closed();
  }

  private final class Service implements RpcService {
    @Override
    public Message handle(Channel channel, MessageType type, ByteBuf in) throws EmberException {
      switch (type) {
        case CREATE: {
          Messages.CreateRequest r = Messages.CreateRequest.decode(in);
          return state.create(r.path(), r.type(), r.storageClass(), r.createParents());
        }
        case LOOKUP:
          return state.lookup(Messages.PathRequest.decode(in).path());
        case OPEN: {
          Messages.OpenRequest r = Messages.OpenRequest.decode(in);
          return state.open(r.path(), r.maxBlocks());
        }
        case LIST: {
          Messages.ListRequest r = Messages.ListRequest.decode(in);
          return state.list(r.path(), r.startAfter(), r.limit());
        }
        case DELETE: {
          Messages.DeleteRequest r = Messages.DeleteRequest.decode(in);
          state.delete(r.path(), r.recursive());
          return Message.EMPTY;
        }
        case RENAME: {
          Messages.RenameRequest r = Messages.RenameRequest.decode(in);
          state.rename(r.source(), r.target());
          return Message.EMPTY;
        }
        case ALLOCATE_BLOCK: {
          Messages.AllocateBlockRequest r = Messages.AllocateBlockRequest.decode(in);
          return state.allocateBlock(r.fileId(), r.index());
        }
        case GET_BLOCKS: {
          Messages.GetBlocksRequest r = Messages.GetBlocksRequest.decode(in);
          return new Messages.BlocksResponse(state.getBlocks(r.fileId(), r.startIndex(),
              r.maxCount()));
        }
        case CLOSE_FILE: {
          Messages.CloseFileRequest r = Messages.CloseFileRequest.decode(in);
          return state.closeFile(r.fileId(), r.length());
        }
        case DF:
          Wire.expectEnd(in, "DF");
          return new Messages.DfResponse(state.usage());
        case REGISTER_DATANODE: {
          Messages.RegisterRequest r = Messages.RegisterRequest.decode(in);
          return state.register(r.storageClass(), r.tier(), r.endpoint(), r.capacityBytes(),
              r.trimOnFree(), r.incarnation(), r.reviveOnly());
        }
        case HEARTBEAT: {
          Messages.HeartbeatRequest r = Messages.HeartbeatRequest.decode(in);
          return new Messages.HeartbeatResponse(state.heartbeat(r.datanodeId(), r.trimmed()));
        }
        default:
          throw new EmberException(ErrorCode.UNKNOWN_MESSAGE,
              type + " is not served by the name node");
      }
    }
  }
}
