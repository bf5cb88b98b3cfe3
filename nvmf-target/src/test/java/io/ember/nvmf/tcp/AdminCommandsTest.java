package io.ember.nvmf.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.LeakCheck;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The admin commands other hosts (the Linux kernel, SPDK) send during initialisation, answered by
 * the embedded target as the specification says.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(LeakCheck.class)
class AdminCommandsTest {
  static final String NQN = "nqn.2024-01.io.ember:admin";
  NvmfTarget target;
  TcpController c;

  @BeforeAll
  void start() throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    s.namespace(5, new MemoryNamespace(2 << 20, 4096));
    target =
        NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).maxIoQueues(3).build().start();
    c =
        TcpController.connect(
            NvmfUri.parse(target.uri(NQN)), NvmfHostOptions.builder().ioQueues(8).build());
  }

  @AfterAll
  void stop() {
    c.close();
    target.close();
  }

  private ByteBuffer read(Sqe sqe, int len) throws Exception {
    ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
    c.adminSync(sqe, b, false);
    return b;
  }

  private static NvmeStatusException status(org.junit.jupiter.api.function.Executable e) {
    return assertThrows(NvmeStatusException.class, e);
  }

  @Test
  void grantsNoMoreQueuesThanConfigured() {
    assertEquals(3, c.ioQueueCount());
  }

  @Test
  void namespacesWithGapsAreListedAndIdentified() throws Exception {
    assertEquals(2, c.namespaces().size());
    assertEquals(4096, c.namespace(5).blockSize());
    assertEquals(512, c.namespace(1).blockSize());
    ByteBuffer list =
        read(new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_ACTIVE_NS_LIST).nsid(1), 4096);
    assertEquals(5, list.getInt(0), "active NSIDs greater than 1");
    assertEquals(0, list.getInt(4));
    ByteBuffer inactive =
        read(new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_NAMESPACE).nsid(3), 4096);
    assertEquals(0, inactive.getLong(0), "an inactive NSID within NN reads as zeroes");
    NvmeStatusException e =
        status(
            () ->
                read(
                    new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_NAMESPACE).nsid(6),
                    4096));
    assertEquals(Nvme.SC_INVALID_NS, e.sc());
  }

  @Test
  void namespaceDescriptorsCarryAStableNguid() throws Exception {
    ByteBuffer d =
        read(new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_NS_DESCRIPTORS).nsid(1), 4096);
    assertEquals(2, d.get(0), "NIDT NGUID");
    assertEquals(16, d.get(1), "NIDL");
    byte[] nguid = new byte[16];
    d.get(4, nguid);
    assertArrayEquals(nguid, c.namespace(1).nguid(), "same NGUID in Identify Namespace");
    assertNotEquals(
        ByteBuffer.wrap(nguid), ByteBuffer.wrap(c.namespace(5).nguid()), "unique per namespace");
  }

  @Test
  void logPages() throws Exception {
    ByteBuffer smart =
        read(new Sqe().opcode(Nvme.ADMIN_GET_LOG_PAGE).cdw(10, Nvme.LOG_SMART | (127 << 16)), 512);
    assertEquals(512, smart.capacity());
    NvmeStatusException e =
        status(
            () ->
                read(
                    new Sqe()
                        .opcode(Nvme.ADMIN_GET_LOG_PAGE)
                        .cdw(10, Nvme.LOG_DISCOVERY | (1023 << 16)),
                    4096));
    assertEquals(1, e.sct(), "the discovery log is not on I/O controllers");
    assertEquals(Nvme.SC_INVALID_LOG_PAGE, e.sc());
  }

  @Test
  void features() throws Exception {
    Cqe q =
        c.adminSync(
            new Sqe().opcode(Nvme.ADMIN_GET_FEATURES).cdw(10, Nvme.FEAT_NUM_QUEUES), null, false);
    assertEquals(2 | (2 << 16), q.dw0(), "3 queues granted, 0's based");
    c.adminSync(
        new Sqe().opcode(Nvme.ADMIN_SET_FEATURES).cdw(10, Nvme.FEAT_ASYNC_EVENT).cdw(11, 0x100),
        null,
        false);
    assertEquals(
        0x100,
        c.adminSync(
                new Sqe().opcode(Nvme.ADMIN_GET_FEATURES).cdw(10, Nvme.FEAT_ASYNC_EVENT),
                null,
                false)
            .dw0());
    assertEquals(
        10_000,
        c.adminSync(new Sqe().opcode(Nvme.ADMIN_GET_FEATURES).cdw(10, Nvme.FEAT_KATO), null, false)
            .dw0(),
        "KATO from Connect");
    NvmeStatusException save =
        status(
            () ->
                c.adminSync(
                    new Sqe()
                        .opcode(Nvme.ADMIN_SET_FEATURES)
                        .cdw(10, Nvme.FEAT_ASYNC_EVENT | 0x80000000),
                    null,
                    false));
    assertEquals(1, save.sct());
    assertEquals(Nvme.SC_FEATURE_NOT_SAVEABLE, save.sc());
    NvmeStatusException unknown =
        status(
            () ->
                c.adminSync(new Sqe().opcode(Nvme.ADMIN_GET_FEATURES).cdw(10, 0x7E), null, false));
    assertEquals(Nvme.SC_INVALID_FIELD, unknown.sc());
  }

  @Test
  void abortAndKeepAliveAndUnknownOpcodes() throws Exception {
    assertEquals(
        1,
        c.adminSync(new Sqe().opcode(Nvme.ADMIN_ABORT).cdw(10, 5 << 16 | 1), null, false).dw0() & 1,
        "command not aborted");
    c.adminSync(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE), null, false);
    NvmeStatusException e = status(() -> c.adminSync(new Sqe().opcode(0x80), null, false));
    assertEquals(Nvme.SC_INVALID_OPCODE, e.sc());
    assertTrue(
        e.getMessage().startsWith("admin command 0x80 failed: Invalid Command Opcode"),
        e.getMessage());
    NvmeStatusException p = status(() -> c.propGet(0x40, false));
    assertEquals(Nvme.SC_INVALID_FIELD, p.sc(), "unknown property");
  }
}
