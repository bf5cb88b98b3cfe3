package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.auth.DhGroup;
import io.ember.nvmf.auth.DhchapException;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapHost;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.target.HostKeys;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * In-band authentication (DH-HMAC-CHAP) between Ember's host and the embedded target over real
 * loopback connections: every queue authenticates before it carries I/O, hosts without the right
 * secret get nothing, and a target that cannot prove the controller secret is refused by the host.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedDhchapTest {
  static final String NQN = "nqn.2024-01.io.ember:dhchap";
  static final String HOST = "nqn.2024-01.io.ember:host-dhchap";
  private static final SecureRandom RANDOM = new SecureRandom();
  private final DhchapSecret hostKey = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
  private final DhchapSecret ctrlKey = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
  private NvmfTarget target;

  private NvmfTarget start(HostKeys keys, Duration authTimeout) throws Exception {
    return start(keys, authTimeout, 16 * 1024);
  }

  private NvmfTarget start(HostKeys keys, Duration authTimeout, int inCapsule) throws Exception {
    Subsystem s = new Subsystem(NQN).allowHost(HOST, keys);
    s.addNamespace(new MemoryNamespace(4 << 20, 512));
    target =
        NvmfTarget.builder()
            .listen("127.0.0.1", 0)
            .subsystem(s)
            .authTimeout(authTimeout)
            .inCapsuleDataSize(inCapsule)
            .build()
            .start();
    return target;
  }

  @Test
  void authenticationDataCanComeByR2t() throws Exception {
    // No in-capsule data on I/O queues: their AUTH_Send data travels after the target's R2T.
    start(
        new HostKeys(hostKey, ctrlKey, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048)),
        Duration.ofMinutes(2),
        0);
    try (NvmfController c = NvmfHost.connect(target.uri(NQN), bothWays())) {
      assertEquals("sha256/ffdhe2048, bidirectional", c.authentication());
      writeAndReadBack(c);
    }
  }

  @AfterEach
  void stop() {
    if (target != null) {
      target.close();
    }
  }

  private NvmfHostOptions.Builder host() {
    return NvmfHostOptions.builder().hostNqn(HOST).ioQueues(2);
  }

  /** Options that authenticate with the host secret and make the target prove the controller's. */
  private NvmfHostOptions bothWays() {
    return host().dhchapSecret(hostKey.encoded()).dhchapControllerSecret(ctrlKey.encoded()).build();
  }

  private static void writeAndReadBack(NvmfController c) throws Exception {
    byte[] data = new byte[64 * 1024];
    RANDOM.nextBytes(data);
    for (int q = 0; q < c.ioQueueCount(); q++) {
      c.ioQueue(q).write(1, q * 128L, ByteBuffer.wrap(data)).get(30, TimeUnit.SECONDS);
      ByteBuffer back = ByteBuffer.allocate(data.length);
      c.ioQueue(q).read(1, q * 128L, back).get(30, TimeUnit.SECONDS);
      assertArrayEquals(data, back.array(), "queue " + q);
    }
  }

  @Test
  void everyQueueAuthenticatesOneWayAndBothWays() throws Exception {
    for (DhGroup g : List.of(DhGroup.NULL, DhGroup.FFDHE2048, DhGroup.FFDHE4096)) {
      start(
          new HostKeys(hostKey, ctrlKey, List.of(DhchapHash.SHA384), List.of(g)),
          Duration.ofMinutes(2));
      try (NvmfController c =
          NvmfHost.connect(target.uri(NQN), host().dhchapSecret(hostKey.encoded()).build())) {
        assertEquals(2, c.ioQueueCount());
        assertEquals("sha384/" + g.label(), c.authentication());
        writeAndReadBack(c);
      }
      try (NvmfController c = NvmfHost.connect(target.uri(NQN), bothWays())) {
        assertEquals("sha384/" + g.label() + ", bidirectional", c.authentication());
        writeAndReadBack(c);
      }
      target.close();
    }
  }

  @Test
  void hostsWithoutTheRightSecretGetNothing() throws Exception {
    start(HostKeys.of(hostKey, null), Duration.ofMinutes(2));
    DhchapException none =
        assertThrows(
            DhchapException.class, () -> NvmfHost.connect(target.uri(NQN), host().build()));
    assertTrue(none.getMessage().contains("requires in-band authentication"), none.getMessage());

    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    DhchapException refused =
        assertThrows(
            DhchapException.class,
            () -> NvmfHost.connect(target.uri(NQN), host().dhchapSecret(wrong.encoded()).build()));
    assertTrue(refused.getMessage().contains("refused this host's response"), refused.getMessage());
    assertEquals(DhchapException.FAILED, refused.reason());

    // After all that, the right host still gets in.
    try (NvmfController c =
        NvmfHost.connect(target.uri(NQN), host().dhchapSecret(hostKey.encoded()).build())) {
      writeAndReadBack(c);
    }
  }

  @Test
  void aTargetThatCannotProveTheControllerSecretIsRefused() throws Exception {
    DhchapSecret impostor = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
    start(HostKeys.of(hostKey, impostor), Duration.ofMinutes(2));
    DhchapException e =
        assertThrows(DhchapException.class, () -> NvmfHost.connect(target.uri(NQN), bothWays()));
    assertTrue(e.getMessage().contains("did not prove"), e.getMessage());
    target.close();

    // A target that does not ask for authentication at all cannot prove it either.
    Subsystem open = new Subsystem(NQN);
    open.addNamespace(new MemoryNamespace(1 << 20, 512));
    target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(open).build().start();
    DhchapException skipped =
        assertThrows(DhchapException.class, () -> NvmfHost.connect(target.uri(NQN), bothWays()));
    assertTrue(
        skipped.getMessage().contains("does not ask for authentication"), skipped.getMessage());
  }

  @Test
  void anIoQueueServesNothingUntilItAuthenticatesToo() throws Exception {
    start(HostKeys.of(hostKey, null), Duration.ofMinutes(2));
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      admin.handshake();
      RawHost.Frame connected = admin.connect(NQN, HOST, 0, 0xFFFF, 0);
      assertEquals(0, RawHost.responseStatus(connected));
      int cntlid = connected.i32(8) & 0xFFFF;
      // The admin queue authenticates by hand, with the host's real exchange.
      new DhchapHost(HOST, NQN, hostKey, null).authenticate(admin.port(), "raw admin queue", 0);
      assertEquals(0, admin.enable());
      Sqe queues =
          new Sqe()
              .opcode(Nvme.ADMIN_SET_FEATURES)
              .flags(Nvme.PSDT_SGL)
              .cid(7)
              .cdw(10, Nvme.FEAT_NUM_QUEUES)
              .cdw(11, 0)
              .sgl(0, 0, Nvme.SGL_TRANSPORT);
      assertEquals(0, admin.command(queues, null));
      // A second connection joins as I/O queue 1 of that controller, and skips authentication.
      io.handshake();
      RawHost.Frame ioConnected = io.connect(NQN, HOST, 1, cntlid, 0);
      assertEquals(0, RawHost.responseStatus(ioConnected));
      assertTrue((ioConnected.i32(8) & Nvme.CONNECT_ATR) != 0, "the I/O queue must authenticate");
      Sqe read =
          new Sqe()
              .opcode(Nvme.IO_READ)
              .flags(Nvme.PSDT_SGL)
              .cid(8)
              .nsid(1)
              .cdw(10, 0)
              .cdw(12, 7)
              .sgl(0, 4096, Nvme.SGL_TRANSPORT);
      assertEquals(
          Nvme.status(Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_AUTH_REQUIRED, true),
          io.command(read, null));
      // Authenticated, the same queue reads.
      new DhchapHost(HOST, NQN, hostKey, null).authenticate(io.port(), "raw I/O queue", 1);
      read.cid(9);
      assertEquals(0, io.command(read, null));
    }
  }

  @Test
  void aHostThatSkipsAuthenticationIsRefusedEverythingAndThenDropped() throws Exception {
    start(HostKeys.of(hostKey, null), Duration.ofSeconds(3));
    try (RawHost raw = new RawHost("127.0.0.1", target.port())) {
      raw.handshake();
      RawHost.Frame connected = raw.connect(NQN, HOST, 0, 0xFFFF, 0);
      assertEquals(0, RawHost.responseStatus(connected));
      assertTrue((connected.i32(8) & Nvme.CONNECT_ATR) != 0, "Connect asks for authentication");
      int authRequired = Nvme.status(Nvme.SCT_COMMAND_SPECIFIC, Nvme.SC_AUTH_REQUIRED, true);
      assertEquals(authRequired, raw.enable(), "Property Set before authentication");
      Sqe identify =
          new Sqe()
              .opcode(Nvme.ADMIN_IDENTIFY)
              .flags(Nvme.PSDT_SGL)
              .cid(3)
              .cdw(10, Nvme.CNS_CONTROLLER)
              .sgl(0, 4096, Nvme.SGL_TRANSPORT);
      assertEquals(authRequired, raw.command(identify, null), "Identify before authentication");
      // A malformed AUTH_Send (wrong security protocol) is an error, not a step.
      Sqe badSend =
          new Sqe()
              .opcode(Nvme.FABRICS)
              .flags(Nvme.PSDT_SGL)
              .cid(4)
              .fctype(Nvme.FCTYPE_AUTH_SEND)
              .byteAt(41, 1)
              .byteAt(42, 1)
              .byteAt(43, 0xEA)
              .intAt(44, 72)
              .sgl(0, 72, Nvme.SGL_INCAPSULE);
      assertEquals(
          Nvme.status(Nvme.SCT_GENERIC, Nvme.SC_INVALID_FIELD, true),
          raw.command(badSend, new byte[72]));
      // Then it waits out the target's authentication deadline, which closes the queue.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      boolean closed = false;
      while (!closed && System.nanoTime() < deadline) {
        closed = raw.closedByPeer();
      }
      assertTrue(closed, "the target closed the unauthenticated queue");
    }
  }
}
