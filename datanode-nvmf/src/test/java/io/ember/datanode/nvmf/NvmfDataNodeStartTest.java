package io.ember.datanode.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A data node whose start fails undoes what it started: no controller stays connected to the
 * target, no NVMf host or embedded-target thread outlives the failure, and the error names the
 * setting to fix.
 */
class NvmfDataNodeStartTest {
  private static final String NQN = "nqn.2026-11.io.ember:start-test";
  private static final String EMPTY_NQN = "nqn.2026-11.io.ember:start-test-empty";

  /** The NVMf host's event loop threads; the test's own target may add threads of its own. */
  private static final String HOST_THREADS = "nvmf-host-";

  private NvmfTarget target;

  @BeforeEach
  void startTarget() throws Exception {
    // Namespaces 1 and 3: 2 is inactive below the highest id, 9 is beyond it.
    target =
        NvmfTarget.builder()
            .listen("127.0.0.1", 0)
            .subsystem(
                new Subsystem(NQN)
                    .namespace(1, new MemoryNamespace(4 << 20, 4096))
                    .namespace(3, new MemoryNamespace(4 << 20, 4096)))
            .subsystem(new Subsystem(EMPTY_NQN))
            .build()
            .start();
  }

  @AfterEach
  void stopTarget() {
    target.close();
  }

  private static EmberConfig config(String targetUri) {
    // Nothing listens at the name node address: a start that got that far would only retry.
    return EmberConfig.defaults()
        .with(NvmfDataNodeKeys.TARGET, targetUri)
        .with(EmberKeys.NAMENODE_ADDRESS, "127.0.0.1:1")
        .with(EmberKeys.CONNECT_TIMEOUT, "2s");
  }

  @Test
  void activeNamespaceStartsAndCloses() throws Exception {
    Set<Thread> before = threads(HOST_THREADS);
    String uri = target.uri(NQN) + "/3";
    try (NvmfDataNode node = NvmfDataNode.start(config(uri))) {
      assertEquals(uri, node.target().toString());
      assertEquals((4 << 20) - 4096, node.capacity(), "all but the stamp's LBA");
      assertEquals(1, target.controllerCount());
    }
    assertNothingLeft(before, HOST_THREADS);
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 9})
  void inactiveNamespaceIsAnInvalidArgumentAndLeavesNothingConnected(int nsid) throws Exception {
    String uri = target.uri(NQN) + "/" + nsid;
    Set<Thread> before = threads(HOST_THREADS);
    EmberException e =
        assertThrows(EmberException.class, () -> NvmfDataNode.start(config(uri)).close());
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.toString());
    assertTrue(e.getMessage().contains(NvmfDataNodeKeys.TARGET.name()), e.getMessage());
    assertTrue(e.getMessage().contains("namespace " + nsid), e.getMessage());
    assertNothingLeft(before, HOST_THREADS);
  }

  @Test
  void subsystemWithoutNamespacesIsAnInvalidArgumentAndLeavesNothingConnected() throws Exception {
    Set<Thread> before = threads(HOST_THREADS);
    Exception e =
        assertThrows(
            Exception.class, () -> NvmfDataNode.start(config(target.uri(EMPTY_NQN))).close());
    // Whatever failed, what the start opened is closed.
    assertNothingLeft(before, HOST_THREADS);
    EmberException ee = assertInstanceOf(EmberException.class, e);
    assertEquals(ErrorCode.INVALID_ARGUMENT, ee.code(), e.toString());
    assertTrue(e.getMessage().contains(NvmfDataNodeKeys.TARGET.name()), e.getMessage());
    assertTrue(e.getMessage().contains("no active namespace"), e.getMessage());
  }

  @Test
  void failureAfterTheEmbeddedTargetStartedStopsIt() throws Exception {
    // The embedded target's LBA is 4 KiB: a 6 KiB block does not fit, found once it is running.
    Set<Thread> before = threads("nvmf-");
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                NvmfDataNode.start(
                        config("")
                            .with(NvmfDataNodeKeys.EMBEDDED_SIZE, "4m")
                            .with(EmberKeys.BLOCK_SIZE, "6k"))
                    .close());
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.toString());
    // Its event loop and I/O threads are named nvmf-target-*, the node's host's nvmf-host-*.
    assertNothingLeft(before, "nvmf-");
  }

  /**
   * The test's target holds no controller, and no thread whose name starts with {@code prefix} that
   * was not running before the node started is alive.
   */
  private void assertNothingLeft(Set<Thread> before, String prefix) throws InterruptedException {
    long end = System.nanoTime() + 10_000_000_000L;
    List<String> left;
    do {
      left =
          threads(prefix).stream()
              .filter(t -> !before.contains(t))
              .map(Thread::getName)
              .collect(Collectors.toList());
      if (target.controllerCount() == 0 && left.isEmpty()) {
        return;
      }
      Thread.sleep(50);
    } while (System.nanoTime() - end < 0);
    assertEquals(0, target.controllerCount(), "controllers still connected to the target");
    assertEquals(List.of(), left, "threads still running");
  }

  private static Set<Thread> threads(String prefix) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith(prefix))
        .collect(Collectors.toSet());
  }
}
