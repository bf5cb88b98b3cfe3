package io.ember.minicluster;

import io.ember.client.ClientKeys;
import io.ember.client.EmberClient;
import io.ember.datanode.DataNode;
import io.ember.datanode.dram.DramDataNode;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.datanode.nvmf.NvmfDataNode;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.namenode.NameNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.HostPort;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import io.ember.tier.nvmf.NvmfTierKeys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;

/**
 * A name node and data nodes in this process, on loopback ports the OS picks: for tests and for
 * {@code ember local}. Data nodes can be killed, added and the name node restarted on its port, to
 * test what a real cluster goes through.
 *
 * <pre>{@code
 * try (MiniCluster cluster = MiniCluster.builder().dramDatanodes(2).build();
 *      EmberClient client = cluster.newClient()) {
 *   ...
 * }
 * }</pre>
 */
public final class MiniCluster implements AutoCloseable {
  private final EmberConfig config;

  /** Every data node started, killed ones included, in start order; a restart takes its place. */
  private final List<Started> started = new ArrayList<>();

  private final List<EmberClient> clients = Collections.synchronizedList(new ArrayList<>());
  private NameNode namenode;
  private HostPort namenodeAddress;

  /** A name node directory this cluster made and deletes at close, or null. */
  private Path ownDir;

  private MiniCluster(EmberConfig config, int dramNodes, List<String> nvmfTargets, int namenodePort)
      throws EmberException {
    try {
      if (config.get(NameNodeKeys.DIR).isBlank()) {
        try {
          ownDir = Files.createTempDirectory("ember-namenode-");
        } catch (IOException e) {
          throw new EmberException(
              ErrorCode.JOURNAL_FAILED, "cannot make a name node directory: " + e, e);
        }
        config = config.with(NameNodeKeys.DIR, ownDir.toString());
      }
      if (!NameNode.isFormatted(config)) {
        NameNode.format(config, false);
      }
      namenode = NameNode.start(config, "127.0.0.1", namenodePort);
      namenodeAddress = new HostPort("127.0.0.1", namenode.address().getPort());
      this.config = config.with(EmberKeys.NAMENODE_ADDRESS, namenodeAddress.toString());
      for (int i = 0; i < dramNodes; i++) {
        addDramDatanode();
      }
      awaitLiveDatanodes(StorageClass.DRAM, dramNodes, Duration.ofSeconds(30));
      for (String target : nvmfTargets) {
        addNvmfDatanode(target);
      }
      if (!nvmfTargets.isEmpty()) {
        awaitLiveDatanodes(StorageClass.NVMF, nvmfTargets.size(), Duration.ofSeconds(30));
      }
    } catch (EmberException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Every setting of every server and of the client: what a cluster in one process reads, and so
   * what a command line that starts or reaches one may be given.
   */
  public static List<ConfigKey<?>> allKeys() {
    List<ConfigKey<?>> all = new ArrayList<>(EmberKeys.ALL);
    all.addAll(ClientKeys.ALL);
    all.addAll(NameNodeKeys.ALL);
    all.addAll(DramDataNodeKeys.ALL);
    all.addAll(NvmfDataNodeKeys.ALL);
    all.addAll(NvmfTierKeys.ALL);
    return all;
  }

  /** A builder with small, test-friendly defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** The configuration clients and data nodes of this cluster use (name node address set). */
  public EmberConfig config() {
    return config;
  }

  /** Where the name node listens. */
  public HostPort namenodeAddress() {
    return namenodeAddress;
  }

  /** The name node. */
  public NameNode namenode() {
    return namenode;
  }

  /** A data node and the configuration it was started with, to start it again. */
  private record Started(DataNode node, EmberConfig config) {}

  /** The DRAM data nodes started so far, killed ones included, in start order. */
  public List<DramDataNode> datanodes() {
    return ofType(DramDataNode.class);
  }

  /** Every data node started so far, of every tier, killed ones included, in start order. */
  public List<DataNode> allDatanodes() {
    return ofType(DataNode.class);
  }

  private <T extends DataNode> List<T> ofType(Class<T> type) {
    synchronized (started) {
      List<T> out = new ArrayList<>();
      for (Started s : started) {
        if (type.isInstance(s.node())) {
          out.add(type.cast(s.node()));
        }
      }
      return out;
    }
  }

  private <T extends DataNode> T add(T node, EmberConfig startedWith) {
    synchronized (started) {
      started.add(new Started(node, startedWith));
    }
    return node;
  }

  /**
   * A client of this cluster, closed with it.
   *
   * @throws EmberException when the name node does not answer
   */
  public EmberClient newClient() throws EmberException {
    return newClient(EmberConfig.defaults());
  }

  /**
   * A client with extra settings, closed with the cluster.
   *
   * @throws EmberException when the name node does not answer
   */
  public EmberClient newClient(EmberConfig overrides) throws EmberException {
    EmberClient c =
        EmberClient.connect(
            config.withAll(overrides).with(EmberKeys.NAMENODE_ADDRESS, namenodeAddress.toString()));
    clients.add(c);
    return c;
  }

  /**
   * Starts one more DRAM data node on a free loopback port (with the rdma transport: on a free port
   * of the configured bind host, which must be an RDMA device's address; loopback has none).
   *
   * @throws EmberException when it cannot listen
   */
  public DramDataNode addDramDatanode() throws EmberException {
    boolean rdma = config.get(DramDataNodeKeys.TRANSPORT).equals("rdma");
    EmberConfig c =
        config
            .with(
                DramDataNodeKeys.BIND_HOST,
                rdma ? config.get(DramDataNodeKeys.BIND_HOST) : "127.0.0.1")
            .with(DramDataNodeKeys.PORT, "0")
            .with(EmberKeys.NAMENODE_ADDRESS, namenodeAddress.toString());
    return add(DramDataNode.start(c), c);
  }

  /** The NVMf data nodes started so far, in start order. */
  public List<NvmfDataNode> nvmfDatanodes() {
    return ofType(NvmfDataNode.class);
  }

  /**
   * Starts one more NVMf data node: for the target namespace {@code targetUri}
   * (nvmf+tcp://host:port/nqn[/nsid]), or for an embedded in-memory target when it is empty.
   *
   * @throws EmberException when the target cannot be reached
   */
  public NvmfDataNode addNvmfDatanode(String targetUri) throws EmberException {
    EmberConfig c =
        config
            .with(NvmfDataNodeKeys.TARGET, targetUri)
            .with(NvmfDataNodeKeys.HTTP_HOST, "127.0.0.1")
            .with(EmberKeys.NAMENODE_ADDRESS, namenodeAddress.toString());
    return add(NvmfDataNode.start(c), c);
  }

  /** Kills DRAM data node {@code index}: its connections drop at once and its heartbeats stop. */
  public void killDatanode(int index) {
    datanodes().get(index).kill();
  }

  /**
   * Replaces DRAM data node {@code index} with a new process's worth at the same address: it starts
   * empty and registers as a new node, as a restarted data node would.
   *
   * @throws EmberException when the port cannot be bound again
   */
  public DramDataNode restartDatanode(int index) throws EmberException {
    return (DramDataNode) restart(datanodes().get(index));
  }

  /**
   * Replaces {@code node} (killing it first if it still runs) with a node of the same tier started
   * as it was: a DRAM node at the same address, starting empty; an NVMf node for the same target
   * (an embedded one starts anew, empty). It registers as a restarted process would.
   *
   * @throws EmberException when the new node cannot start
   * @throws IllegalArgumentException when {@code node} is not of this cluster
   */
  public DataNode restart(DataNode node) throws EmberException {
    Started old;
    int at;
    synchronized (started) {
      at = -1;
      for (int i = 0; i < started.size(); i++) {
        if (started.get(i).node() == node) {
          at = i;
        }
      }
      if (at < 0) {
        throw new IllegalArgumentException(
            node.tier() + " data node " + node.endpoint() + " is not of this cluster");
      }
      old = started.get(at);
    }
    node.kill();
    EmberConfig c = old.config();
    DataNode fresh;
    if (node instanceof DramDataNode dram) {
      c = c.with(DramDataNodeKeys.PORT, String.valueOf(HostPort.parse(dram.endpoint(), 0).port()));
      fresh = DramDataNode.start(c);
    } else {
      fresh = NvmfDataNode.start(c);
    }
    synchronized (started) {
      started.set(at, new Started(fresh, c));
    }
    return fresh;
  }

  /**
   * Stops the name node and starts a new one on the same port and directory: it loads the namespace
   * from its checkpoint and journal, and data nodes register again on their next heartbeat.
   *
   * @throws EmberException when the port cannot be bound again
   */
  public void restartNamenode() throws EmberException {
    namenode.close();
    namenode = NameNode.start(config, "127.0.0.1", namenodeAddress.port());
  }

  /** Something done to the name node's directory while the name node is stopped. */
  public interface DirectoryAction {
    void apply(Path dir) throws IOException;
  }

  /**
   * As {@link #restartNamenode()}, doing {@code whileStopped} to its directory in between: a test
   * can keep a copy of the directory, or put an older copy back (a journal that lost its tail).
   *
   * @throws EmberException when the port cannot be bound again
   * @throws IOException when {@code whileStopped} fails; the name node is not started
   */
  public void restartNamenode(DirectoryAction whileStopped) throws IOException {
    namenode.close();
    whileStopped.apply(Path.of(config.get(NameNodeKeys.DIR)));
    namenode = NameNode.start(config, "127.0.0.1", namenodeAddress.port());
  }

  /**
   * Stops the name node, formats its directory and starts a new one on the same port: a name node
   * that forgot everything (its directory lost or replaced), to which data nodes must register as
   * new nodes.
   *
   * @throws EmberException when the directory cannot be formatted or the port bound again
   */
  public void restartNamenodeEmpty() throws EmberException {
    namenode.close();
    NameNode.format(config, true);
    namenode = NameNode.start(config, "127.0.0.1", namenodeAddress.port());
  }

  /**
   * Waits until the name node counts {@code count} live data nodes of a class.
   *
   * @throws EmberException {@link ErrorCode#TIMEOUT} when they do not come in time
   */
  public void awaitLiveDatanodes(StorageClass sc, int count, Duration timeout)
      throws EmberException {
    awaitUsage(
        sc,
        u -> u.liveNodes() == count,
        count + " live " + sc.displayName() + " data nodes",
        timeout);
  }

  /**
   * Waits until the name node's use of storage class {@code sc} satisfies {@code ok} (a class no
   * node has registered counts as empty), asking it every 10 ms.
   *
   * @param what what is awaited, for the error, e.g. "the killed node to be marked lost"
   * @return the usage that satisfied {@code ok}
   * @throws EmberException {@link ErrorCode#TIMEOUT} naming {@code what} and the last usage when it
   *     does not come within {@code timeout}
   */
  public ClassUsage awaitUsage(
      StorageClass sc, Predicate<ClassUsage> ok, String what, Duration timeout)
      throws EmberException {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (EmberClient probe = EmberClient.connect(config)) {
      while (true) {
        ClassUsage usage = new ClassUsage(sc, 0, 0, 0, 0, 0);
        for (ClassUsage u : probe.df()) {
          if (u.storageClass().equals(sc)) {
            usage = u;
          }
        }
        if (ok.test(usage)) {
          return usage;
        }
        if (System.nanoTime() > deadline) {
          throw new EmberException(
              ErrorCode.TIMEOUT, "waited " + timeout + " for " + what + "; have " + usage);
        }
        try {
          Thread.sleep(10);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new EmberException(ErrorCode.CLOSED, "interrupted", e);
        }
      }
    }
  }

  /** Closes clients, data nodes and the name node. Idempotent. */
  @Override
  public void close() {
    synchronized (clients) {
      clients.forEach(EmberClient::close);
      clients.clear();
    }
    allDatanodes().forEach(DataNode::close);
    if (namenode != null) {
      namenode.close();
    }
    if (ownDir != null) {
      deleteTree(ownDir);
    }
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // A temporary directory left behind costs only its space.
    }
  }

  /** Builds a {@link MiniCluster}. */
  public static final class Builder {
    private EmberConfig config =
        EmberConfig.defaults()
            .with(EmberKeys.IO_THREADS, "1")
            .with(DramDataNodeKeys.CAPACITY, "64m")
            .with(NvmfDataNodeKeys.EMBEDDED_SIZE, "64m")
            .with(EmberKeys.HEARTBEAT_INTERVAL, "100ms")
            .with(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .with(EmberKeys.RPC_TIMEOUT, "20s");
    private int dramNodes = 1;
    private final List<String> nvmfTargets = new ArrayList<>();
    private int namenodePort = 0;

    /** Number of DRAM data nodes to start (default 1). */
    public Builder dramDatanodes(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("dramDatanodes must be >= 0, was " + n);
      }
      dramNodes = n;
      return this;
    }

    /**
     * Adds an NVMf data node for the target namespace {@code uri}, or for an embedded in-memory
     * target of {@link NvmfDataNodeKeys#EMBEDDED_SIZE} when {@code uri} is empty.
     */
    public Builder nvmfDatanode(String uri) {
      nvmfTargets.add(uri);
      return this;
    }

    /** Capacity of each DRAM data node, e.g. "64m" (default). */
    public Builder dramCapacity(String size) {
      return set(DramDataNodeKeys.CAPACITY, size);
    }

    /** The cluster's block size, e.g. "1m" (default). */
    public Builder blockSize(String size) {
      return set(EmberKeys.BLOCK_SIZE, size);
    }

    /** Name node port; 0 (default) lets the OS pick. */
    public Builder namenodePort(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("namenodePort must be 0..65535, was " + port);
      }
      namenodePort = port;
      return this;
    }

    /** Any configuration value. */
    public Builder set(ConfigKey<?> key, String value) {
      config = config.with(key, value);
      return this;
    }

    /**
     * Heartbeat interval and data node timeout at the keys' own defaults rather than the quick ones
     * tests use: a cluster that does real work on a loaded machine must not declare a data node
     * lost because it was starved of CPU for two seconds.
     */
    public Builder realTimeouts() {
      return set(EmberKeys.HEARTBEAT_INTERVAL, EmberKeys.HEARTBEAT_INTERVAL.defaultText())
          .set(NameNodeKeys.DATANODE_TIMEOUT, NameNodeKeys.DATANODE_TIMEOUT.defaultText());
    }

    /** Values that win over the builder's defaults. */
    public Builder config(EmberConfig overrides) {
      config = config.withAll(overrides);
      return this;
    }

    /**
     * Starts the cluster and waits until every data node has registered.
     *
     * @throws EmberException when a server cannot start or data nodes do not register
     */
    public MiniCluster build() throws EmberException {
      return new MiniCluster(config, dramNodes, nvmfTargets, namenodePort);
    }
  }
}
