package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClient;
import io.ember.protocol.RpcClients;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The name node over its RPC service: requests on the network threads and on a handler pool behave
 * alike, and heartbeats count only from the connection their data node registered on.
 */
class NameNodeServiceTest {
  private static final Duration PATIENCE = Duration.ofSeconds(90);
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closing(T c) {
    open.add(c);
    return c;
  }

  private NameNode start(EmberConfig config, int port) throws EmberException {
    // The test's data nodes are connections that serve nothing at the addresses they register.
    return closing(
        NameNode.start(config.with(NameNodeKeys.PROBE_DATANODES, "false"), "127.0.0.1", port));
  }

  private RpcClient connect(EmberConfig config, NameNode nn) throws EmberException {
    RpcClients rpc = closing(new RpcClients(config, "test", 1));
    return Futures.await(rpc.get(new HostPort("127.0.0.1", nn.address().getPort()), "name node"));
  }

  private static <T> T call(RpcClient c, MessageType type, Message body, ResponseDecoder<T> d)
      throws EmberException {
    return Futures.await(c.call(type, body, d));
  }

  /** Registers a DRAM data node of 4 blocks whose contents are {@code incarnation}. */
  private static int register(RpcClient c, String endpoint, long incarnation)
      throws EmberException {
    return call(
            c,
            MessageType.REGISTER_DATANODE,
            new Messages.RegisterRequest(StorageClass.DRAM, "dram", endpoint, 4L << 20, false)
                .withIncarnation(incarnation),
            Messages.RegisterResponse::decode)
        .datanodeId();
  }

  private static void heartbeat(RpcClient c, int id) throws EmberException {
    call(
        c,
        MessageType.HEARTBEAT,
        new Messages.HeartbeatRequest(id),
        Messages.HeartbeatResponse::decode);
  }

  @Test
  void heartbeatWithAnIdTheRestartedNameNodeGaveAnotherNodeIsRefused() throws Exception {
    EmberConfig config = EmberConfig.defaults();
    NameNode first = start(config, 0);
    int port = first.address().getPort();
    RpcClient y = connect(config, first);
    RpcClient x = connect(config, first);
    int yId = register(y, "127.0.0.1:2", 2);
    assertNotEquals(yId, register(x, "127.0.0.1:1", 1));
    first.close();

    NameNode second = start(config, port);
    // x comes back first, as a new node: the new name node gives it the id y had.
    RpcClient x2 = connect(config, second);
    assertEquals(yId, register(x2, "127.0.0.1:1", 11));
    RpcClient y2 = connect(config, second);
    EmberException e = assertThrows(EmberException.class, () -> heartbeat(y2, yId));
    assertEquals(ErrorCode.UNKNOWN_DATANODE, e.code(), e.getMessage());
    heartbeat(x2, yId);
    // y registers as told and is a node of its own.
    int y2Id = register(y2, "127.0.0.1:2", 12);
    assertNotEquals(yId, y2Id);
    heartbeat(y2, y2Id);
    Messages.ClassUsage dram =
        call(x2, MessageType.DF, Message.EMPTY, Messages.DfResponse::decode).classes().get(0);
    assertEquals(2, dram.liveNodes());
  }

  @Test
  void nodeWhoseConnectionClosedHeartbeatsOnItsNewOne() throws Exception {
    EmberConfig config = EmberConfig.defaults();
    NameNode nn = start(config, 0);
    RpcClient before = connect(config, nn);
    int id = register(before, "127.0.0.1:1", 1);
    before.close();
    RpcClient after = connect(config, nn);
    // The server may not have seen the close yet; it answers once it has.
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (true) {
      try {
        heartbeat(after, id);
        break;
      } catch (EmberException e) {
        assertEquals(ErrorCode.UNKNOWN_DATANODE, e.code(), e.getMessage());
        assertTrue(System.nanoTime() - deadline < 0, "still refused after " + PATIENCE);
        Thread.sleep(10);
      }
    }
    // And from then on, only there.
    RpcClient other = connect(config, nn);
    assertEquals(
        ErrorCode.UNKNOWN_DATANODE,
        assertThrows(EmberException.class, () -> heartbeat(other, id)).code());
  }

  /**
   * Each connection sends its requests without waiting for answers: create, delete and create again
   * of one path succeed only if they run in the order sent, which the network thread does and the
   * handler pool must too.
   */
  @ParameterizedTest(name = "handler threads {0}")
  @ValueSource(ints = {0, 1, 3})
  void requestsOfAConnectionRunInOrderAndManyConnectionsAtOnce(int handlerThreads)
      throws Exception {
    EmberConfig config =
        EmberConfig.defaults().with(NameNodeKeys.HANDLER_THREADS, Integer.toString(handlerThreads));
    NameNode nn = start(config, 0);
    int connections = 4;
    int files = 300;
    List<RpcClient> clients = new ArrayList<>();
    for (int k = 0; k < connections; k++) {
      clients.add(connect(config, nn));
      call(
          clients.get(k),
          MessageType.CREATE,
          new Messages.CreateRequest("/c" + k, NodeType.DIRECTORY, StorageClass.DRAM, false),
          NodeStatus::decode);
    }
    List<CompletableFuture<?>> calls = new ArrayList<>();
    for (int i = 0; i < files; i++) {
      for (int k = 0; k < connections; k++) {
        RpcClient c = clients.get(k);
        String path = "/c" + k + "/f" + i;
        calls.add(
            c.call(
                MessageType.CREATE,
                new Messages.CreateRequest(path, NodeType.FILE, StorageClass.DRAM, false),
                NodeStatus::decode));
        calls.add(
            c.call(
                MessageType.DELETE,
                new Messages.DeleteRequest(path, false),
                ResponseDecoder.EMPTY));
        calls.add(
            c.call(
                MessageType.CREATE,
                new Messages.CreateRequest(path, NodeType.DIRECTORY, StorageClass.DRAM, false),
                NodeStatus::decode));
        calls.add(c.call(MessageType.NOOP, Message.EMPTY, ResponseDecoder.EMPTY));
      }
    }
    for (CompletableFuture<?> f : calls) {
      Futures.await(f);
    }
    for (int k = 0; k < connections; k++) {
      Messages.ListResponse list =
          call(
              clients.get(k),
              MessageType.LIST,
              new Messages.ListRequest("/c" + k, "", files + 1),
              Messages.ListResponse::decode);
      assertEquals(files, list.entries().size());
      assertTrue(
          list.entries().stream().allMatch(d -> d.status().type() == NodeType.DIRECTORY),
          "the last create won");
    }
    // Errors come back as errors, with their code and message.
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                call(
                    clients.get(0),
                    MessageType.CREATE,
                    new Messages.CreateRequest("/c0/f0", NodeType.FILE, StorageClass.DRAM, false),
                    NodeStatus::decode));
    assertEquals(ErrorCode.ALREADY_EXISTS, e.code());
    assertEquals("cannot create /c0/f0: it is a directory", e.getMessage());
    EmberException dir =
        assertThrows(
            EmberException.class,
            () ->
                call(
                    clients.get(0),
                    MessageType.CREATE,
                    new Messages.CreateRequest("/c0", NodeType.DIRECTORY, StorageClass.DRAM, false),
                    NodeStatus::decode));
    assertEquals("/c0 exists", dir.getMessage());
  }

  @Test
  void closingWithRequestsWaitingForTheHandlersAnswersOrFailsEachAndLeaksNothing()
      throws Exception {
    EmberConfig config = EmberConfig.defaults().with(NameNodeKeys.HANDLER_THREADS, "1");
    NameNode nn = start(config, 0);
    RpcClient c = connect(config, nn);
    call(c, MessageType.NOOP, Message.EMPTY, ResponseDecoder.EMPTY);
    List<CompletableFuture<NodeStatus>> calls = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      calls.add(
          c.call(
              MessageType.CREATE,
              new Messages.CreateRequest("/f" + i, NodeType.FILE, StorageClass.DRAM, false),
              NodeStatus::decode));
    }
    nn.close();
    for (CompletableFuture<NodeStatus> f : calls) {
      try {
        Futures.await(f);
      } catch (EmberException e) {
        assertEquals(ErrorCode.CONNECTION_CLOSED, e.code(), e.getMessage());
      }
    }
  }

  private static List<Messages.DatanodeInfo> datanodes(RpcClient c) throws EmberException {
    return call(c, MessageType.DATANODES, Message.EMPTY, Messages.DatanodesResponse::decode)
        .datanodes();
  }

  /** A loopback port where nothing listens (bound by the OS, then let go). */
  private static int closedPort() throws Exception {
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 2})
  void aDataNodeAdvertisingAnAddressNobodyListensOnIsRefusedNamingIt(int handlerThreads)
      throws Exception {
    EmberConfig config =
        EmberConfig.defaults().with(NameNodeKeys.HANDLER_THREADS, Integer.toString(handlerThreads));
    NameNode nn = closing(NameNode.start(config, "127.0.0.1", 0));
    RpcClient c = connect(config, nn);
    for (String endpoint :
        List.of(
            "127.0.0.1:" + closedPort(),
            "nvmf+tcp://127.0.0.1:" + closedPort() + "/nqn.2026-11.io.ember:x/1")) {
      EmberException refused =
          assertThrows(EmberException.class, () -> register(c, endpoint, 1), endpoint);
      assertEquals(ErrorCode.UNREACHABLE, refused.code(), refused.getMessage());
      assertTrue(refused.getMessage().contains(endpoint), refused.getMessage());
      assertTrue(
          refused.getMessage().contains(endpoint.startsWith("nvmf") ? "--target" : "--advertise"),
          refused.getMessage());
      assertTrue(refused.getMessage().contains("connection refused"), refused.getMessage());
    }
    assertEquals(List.of(), datanodes(c));

    // Where something listens, the same node is taken, and answers on the same connection.
    try (java.net.ServerSocket listening =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      int id = register(c, "127.0.0.1:" + listening.getLocalPort(), 1);
      heartbeat(c, id);
      assertEquals(1, datanodes(c).size());
    }
  }

  @Test
  void aProbedRegistrationIsJournaledBeforeItIsAnswered(@TempDir java.nio.file.Path dir)
      throws Exception {
    // The registration is made on the thread that finished the probe, and answered once the
    // journal synced it: a restarted name node knows the node's contents.
    EmberConfig config =
        EmberConfig.defaults()
            .with(NameNodeKeys.DIR, dir.toString())
            .with(NameNodeKeys.JOURNAL_SYNC, "always");
    NameNode.format(config, false);
    try (java.net.ServerSocket listening =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      String endpoint = "127.0.0.1:" + listening.getLocalPort();
      try (NameNode nn = NameNode.start(config, "127.0.0.1", 0)) {
        RpcClient c = connect(config, nn);
        heartbeat(c, register(c, endpoint, 7));
      }
      NameNode again = start(config, 0);
      RpcClient c = connect(config, again);
      List<Messages.DatanodeInfo> known = datanodes(c);
      assertEquals(1, known.size(), known.toString());
      assertEquals(endpoint, known.get(0).endpoint());
    }
  }

  @Test
  void onlyTcpEndpointsAreProbed() {
    assertEquals(new HostPort("10.0.0.5", 9070), NameNode.probeAddress("10.0.0.5:9070"));
    assertEquals(
        new HostPort("storage", 4420), NameNode.probeAddress("nvmf+tcp://storage/nqn.x:y/1"));
    assertEquals(
        new HostPort("fd00::7", 4421), NameNode.probeAddress("nvmf+tcp://[fd00::7]:4421/nqn.x:y"));
    assertEquals(
        new HostPort("storage_1", 4420),
        NameNode.probeAddress("nvmf+tcp://storage_1:4420/nqn.x:y"));
    assertEquals(null, NameNode.probeAddress("nvmf+rdma://10.0.0.5:4420/nqn.x:y/1"));
  }
}
