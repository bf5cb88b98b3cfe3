package io.ember.datanode.dram;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClients;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.StorageClass;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A DRAM data node: serves reads and writes of its off-heap region over Netty, registers the
 * region with the name node as blocks of storage class DRAM, and heartbeats. When the name node
 * forgets it (a restart, or it was marked lost) it registers again with its whole region.
 */
public final class DramDataNode implements AutoCloseable {
  /** The tier name clients look up to read and write this node's blocks. */
  public static final String TIER = "dram";

  private static final Logger LOG = LoggerFactory.getLogger(DramDataNode.class);

  private final DramRegion region;
  private final RpcServer server;
  private final RpcClients namenodeConnections;
  private final HostPort namenode;
  private final String endpoint;
  private final ScheduledExecutorService heartbeats;
  private final LifeCycle lifeCycle = new LifeCycle("DRAM data node");
  private volatile int datanodeId = -1;

  private DramDataNode(EmberConfig config) throws EmberException {
    lifeCycle.beginStart();
    region = new DramRegion(config.get(DramDataNodeKeys.CAPACITY));
    namenode = HostPort.parse(config.get(EmberKeys.NAMENODE_ADDRESS),
        EmberKeys.DEFAULT_NAMENODE_PORT);
    server = new RpcServer("data node", config, new Service());
    String bindHost = config.get(DramDataNodeKeys.BIND_HOST);
    InetSocketAddress bound = server.start(bindHost, config.get(DramDataNodeKeys.PORT));
    endpoint = new HostPort(advertisedHost(config, bindHost), bound.getPort()).toString();
    namenodeConnections = new RpcClients(config, "datanode-namenode", 1);
    heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "datanode-heartbeat");
      t.setDaemon(true);
      return t;
    });
    long interval = config.get(DramDataNodeKeys.HEARTBEAT_INTERVAL).toMillis();
    try {
      register();
    } catch (EmberException e) {
      LOG.warn("data node at {}: name node {} not reachable yet ({}); retrying every {} ms",
          endpoint, namenode, e.getMessage(), interval);
    }
    heartbeats.scheduleWithFixedDelay(this::beat, interval, interval, TimeUnit.MILLISECONDS);
    lifeCycle.started();
  }

  /**
   * Starts a DRAM data node: allocates its region, listens, and registers with the name node at
   * {@link EmberKeys#NAMENODE_ADDRESS} (retrying in the background if it is not up yet).
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the port cannot be bound
   * @throws IllegalStateException when the region cannot be allocated
   */
  public static DramDataNode start(EmberConfig config) throws EmberException {
    return new DramDataNode(config);
  }

  /** The address clients are told to use. */
  public String endpoint() {
    return endpoint;
  }

  /** The id the name node gave this node, or -1 before registration. */
  public int datanodeId() {
    return datanodeId;
  }

  /** The region's size in bytes. */
  public long capacity() {
    return region.capacity();
  }

  /** Stops heartbeats, closes every connection at once and stops listening. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    heartbeats.shutdownNow();
    server.close();
    namenodeConnections.close();
    lifeCycle.closed();
  }

  private void register() throws EmberException {
    Messages.RegisterResponse r = Futures.await(
        namenodeConnections.get(namenode, "name node").thenCompose(c -> c.call(
            MessageType.REGISTER_DATANODE,
            new Messages.RegisterRequest(StorageClass.DRAM, TIER, endpoint, region.capacity()),
            Messages.RegisterResponse::decode)));
    datanodeId = r.datanodeId();
    LOG.info("data node {} at {} registered {} blocks of {} bytes", r.datanodeId(), endpoint,
        r.blockCount(), r.blockSize());
  }

  private void beat() {
    try {
      if (datanodeId < 0) {
        register();
        return;
      }
      int id = datanodeId;
      Futures.await(namenodeConnections.get(namenode, "name node").thenCompose(c -> c.call(
          MessageType.HEARTBEAT, new Messages.HeartbeatRequest(id), ResponseDecoder.EMPTY)));
    } catch (EmberException e) {
      if (e.code() == ErrorCode.UNKNOWN_DATANODE) {
        LOG.warn("data node {}: the name node does not know it ({}); registering again",
            datanodeId, e.getMessage());
        datanodeId = -1;
        try {
          register();
        } catch (EmberException again) {
          LOG.warn("data node at {}: registration failed: {}", endpoint, again.getMessage());
        }
      } else {
        LOG.debug("data node {}: heartbeat failed: {}", datanodeId, e.getMessage());
      }
    } catch (RuntimeException e) {
      LOG.error("data node {}: heartbeat failed", datanodeId, e);
    }
  }

  private static String advertisedHost(EmberConfig config, String bindHost) {
    String configured = config.get(DramDataNodeKeys.ADVERTISE_HOST);
    if (!configured.isBlank()) {
      return configured;
    }
    if (!bindHost.equals("0.0.0.0") && !bindHost.equals("::")) {
      return bindHost;
    }
    try {
      return InetAddress.getLocalHost().getHostAddress();
    } catch (UnknownHostException e) {
      return "127.0.0.1";
    }
  }

  private final class Service implements RpcService {
    @Override
    public Message handle(Channel channel, MessageType type, ByteBuf in) throws EmberException {
      switch (type) {
        case BLOCK_WRITE: {
          Messages.BlockWriteRequest r = Messages.BlockWriteRequest.decode(in);
          try {
            region.write(r.address(), r.data());
          } finally {
            r.data().release();
          }
          return Message.EMPTY;
        }
        case BLOCK_READ: {
          Messages.BlockReadRequest r = Messages.BlockReadRequest.decode(in);
          return new Messages.DataResponse(region.read(r.address(), r.length()));
        }
        default:
          throw new EmberException(ErrorCode.UNKNOWN_MESSAGE,
              type + " is not served by a data node");
      }
    }
  }
}
