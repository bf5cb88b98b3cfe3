package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.nvmf.tcp.Pdu;
import io.ember.nvmf.tcp.PduFrameDecoder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Write data that the embedded target receives straight from the socket into a memory namespace
 * (large H2CData PDUs, no data digests), beside what it still copies: the bytes read back, only the
 * write's own bytes land, and a host that goes away mid-PDU leaves the target serving others.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LandingTest {
  static final String NQN = "nqn.2024-01.io.ember:landing";
  static final String RAW_HOST = "nqn.2024-01.io.ember:raw";
  static final int BS = 512;

  /** 64 KiB of data: above the least that lands, and one H2CData PDU at the target's default. */
  static final int LEN = 64 << 10;

  NvmfTarget target;
  NvmfController good;

  @BeforeAll
  void start() throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(16L << 20, BS));
    target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
    good = NvmfHost.connect(target.uri(NQN), NvmfHostOptions.defaults());
  }

  @AfterAll
  void stop() {
    if (good != null) {
      good.close();
    }
    if (target != null) {
      target.close();
    }
  }

  @Test
  void largeWritesLandAndSmallOrSplitOnesAreCopiedAndAllReadBack() throws Exception {
    Random r = new Random(1);
    // {byte offset, length, bytes expected to land}
    long[][] writes = {
      {0, 128 << 10, 128 << 10}, // one PDU of MAXH2CDATA
      {1L << 20, 1 << 20, 1 << 20}, // eight PDUs, one MiB chunk of the namespace
      {3L << 20, 20 << 10, 0}, // by R2T (over the 16 KiB in-capsule size), under the landing size
      {(5L << 20) - (64 << 10), 128 << 10, 0}, // across two of the namespace's 1 MiB chunks
      {8L << 20, 4 << 10, 0}, // in the capsule
    };
    for (long[] w : writes) {
      byte[] data = new byte[(int) w[1]];
      r.nextBytes(data);
      long landedBefore = target.bytesLanded();
      write(w[0], data);
      assertEquals(
          w[2], target.bytesLanded() - landedBefore, "bytes landed of the write at " + w[0]);
      assertArrayEquals(data, read(w[0], data.length), "read back at " + w[0]);
    }
  }

  /**
   * With header digests on (and data digests off), each header is checked before its data lands,
   * and a stream of PDUs lands whole after a header-sized read each.
   */
  @Test
  void withHeaderDigestsLargeWritesLandAndReadBack() throws Exception {
    NvmfHostOptions digests = NvmfHostOptions.builder().headerDigest(true).build();
    try (NvmfController c = NvmfHost.connect(target.uri(NQN), digests)) {
      byte[] data = new byte[1 << 20];
      new Random(7).nextBytes(data);
      long offset = 10L << 20;
      long landedBefore = target.bytesLanded();
      ByteBuffer b = ByteBuffer.allocateDirect(data.length).put(data).flip();
      c.ioQueue(0).write(1, offset / BS, b).get(30, TimeUnit.SECONDS);
      assertEquals(data.length, target.bytesLanded() - landedBefore, "bytes landed");
      ByteBuffer back = ByteBuffer.allocateDirect(data.length);
      c.ioQueue(0).read(1, offset / BS, back).get(30, TimeUnit.SECONDS);
      byte[] got = new byte[data.length];
      back.get(got);
      assertArrayEquals(data, got, "read back over the digest connection");
    }
  }

  /**
   * A PDU's data trickles in over several socket reads, and its last bytes come in the same send as
   * the next command (a read of the range and one block past it): only the write's bytes land.
   */
  @Test
  void dataArrivingInPiecesLandsOnlyTheWritesOwnBytes() throws Exception {
    long slba = 4096;
    byte[] after = new byte[BS];
    new Random(2).nextBytes(after);
    write((slba * BS) + LEN, after);
    byte[] data = new byte[LEN];
    new Random(3).nextBytes(data);
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      int ttag = openAndAskToWrite(admin, io, 7, slba);
      byte[] pdu = h2cData(7, ttag, data);
      long landedBefore = target.bytesLanded();
      // The header and a few bytes; the target takes the rest as landing once it has the header.
      io.send(Arrays.copyOfRange(pdu, 0, 24 + 1000));
      awaitLanded(landedBefore + LEN);
      io.send(Arrays.copyOfRange(pdu, 24 + 1000, 24 + 30_000));
      byte[] rest = Arrays.copyOfRange(pdu, 24 + 30_000, pdu.length);
      byte[] readCmd =
          RawHost.capsule(
              BadInputTest.io(Nvme.IO_READ, 8, 1, slba, LEN / BS + 1)
                  .sgl(0, LEN + BS, Nvme.SGL_TRANSPORT),
              null);
      byte[] both = Arrays.copyOf(rest, rest.length + readCmd.length);
      System.arraycopy(readCmd, 0, both, rest.length, readCmd.length);
      io.send(both);

      byte[] got = new byte[LEN + BS];
      boolean written = false;
      boolean readDone = false;
      while (!written || !readDone) {
        RawHost.Frame f = io.read();
        if (f.type() == Pdu.T_CAPSULE_RESP && f.u16(20) == 7) {
          assertEquals(0, RawHost.responseStatus(f), "the write's status");
          written = true;
        } else if (f.type() == Pdu.T_C2H_DATA && f.u16(8) == 8) {
          f.b().position(f.pdo());
          f.b().get(got, f.i32(12), f.i32(16));
          readDone = (f.flags() & Pdu.F_SUCCESS) != 0;
        } else if (f.type() == Pdu.T_CAPSULE_RESP && f.u16(20) == 8) {
          assertEquals(0, RawHost.responseStatus(f), "the read's status");
          readDone = true;
        } else {
          throw new AssertionError("unexpected PDU type " + f.type());
        }
      }
      assertArrayEquals(data, Arrays.copyOf(got, LEN), "the write's bytes, read on its queue");
      assertArrayEquals(after, Arrays.copyOfRange(got, LEN, LEN + BS), "the block after it");
    }
    assertArrayEquals(after, read((slba * BS) + LEN, BS), "the block after it, from another host");
  }

  /** Padding between a PDU's header and its data (a PDO past the header) never lands. */
  @Test
  void paddingBeforeTheDataIsSkipped() throws Exception {
    long slba = 6144;
    byte[] data = new byte[LEN];
    new Random(8).nextBytes(data);
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      int ttag = openAndAskToWrite(admin, io, 11, slba);
      byte[] pdu = h2cData(11, ttag, data, 8);
      java.util.Arrays.fill(pdu, 24, 32, (byte) 0x5A);
      long landedBefore = target.bytesLanded();
      io.send(Arrays.copyOfRange(pdu, 0, 32 + 100));
      awaitLanded(landedBefore + LEN);
      io.send(Arrays.copyOfRange(pdu, 32 + 100, pdu.length));
      RawHost.Frame f = io.read();
      assertEquals(Pdu.T_CAPSULE_RESP, f.type(), "the write's completion");
      assertEquals(0, RawHost.responseStatus(f), "the write's status");
    }
    assertArrayEquals(data, read(slba * BS, LEN), "the data, without the padding");
  }

  /** A host that closes its connection in the middle of a landing PDU troubles no one else. */
  @Test
  void aHostGoneMidLandingLeavesTheTargetServing() throws Exception {
    long slba = 8192;
    byte[] data = new byte[LEN];
    new Random(4).nextBytes(data);
    long landedBefore = target.bytesLanded();
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      int ttag = openAndAskToWrite(admin, io, 9, slba);
      byte[] pdu = h2cData(9, ttag, data);
      io.send(Arrays.copyOfRange(pdu, 0, pdu.length / 2));
      awaitLanded(landedBefore + LEN);
    }
    byte[] next = new byte[LEN];
    new Random(5).nextBytes(next);
    write(slba * BS, next);
    assertArrayEquals(next, read(slba * BS, LEN), "a later write over the same range");
  }

  /**
   * A PDU marked last before the transfer's end, or the PDU that ends it unmarked, is a PDU
   * sequence error: the target ends the connection, and that PDU's bytes land nowhere. (A PDU
   * before it that was right stays where it landed, as for any write that did not complete.)
   */
  @Test
  void aWrongLastPduFlagEndsTheConnectionAndItsPduLandsNothing() throws Exception {
    int half = LEN / 2; // each half is large enough to land
    for (boolean markedEarly : new boolean[] {true, false}) {
      long slba = markedEarly ? 10240 : 10496;
      byte[] before = read(slba * BS, LEN);
      byte[] data = new byte[LEN];
      new Random(markedEarly ? 12 : 13).nextBytes(data);
      long landedBefore = target.bytesLanded();
      try (RawHost admin = new RawHost("127.0.0.1", target.port());
          RawHost io = new RawHost("127.0.0.1", target.port())) {
        int ttag = openAndAskToWrite(admin, io, 13, slba);
        io.send(h2cData(13, ttag, 0, Arrays.copyOf(data, half), 0, markedEarly));
        if (!markedEarly) {
          io.send(h2cData(13, ttag, half, Arrays.copyOfRange(data, half, LEN), 0, false));
        }
        BadInputTest.expectTerm(io, Pdu.FES_PDU_SEQUENCE, 0);
      }
      byte[] after = read(slba * BS, LEN);
      String how = markedEarly ? "first half marked last: " : "second half unmarked: ";
      assertArrayEquals(
          Arrays.copyOfRange(before, half, LEN),
          Arrays.copyOfRange(after, half, LEN),
          how + "nothing of the second half");
      if (markedEarly) {
        assertArrayEquals(
            Arrays.copyOf(before, half), Arrays.copyOf(after, half), how + "nothing at all");
        assertEquals(landedBefore, target.bytesLanded(), how + "bytes landed");
      } else {
        assertArrayEquals(
            Arrays.copyOf(data, half), Arrays.copyOf(after, half), how + "the good first half");
        assertEquals(landedBefore + half, target.bytesLanded(), how + "bytes landed");
      }
    }
  }

  /**
   * The target tears a controller down (its host sends no Keep Alive) while a PDU is landing on one
   * of its I/O queues: that queue closes in the middle of the PDU, and the target serves others,
   * the same range included.
   */
  @Test
  void aControllerTornDownMidLandingLeavesTheTargetServing() throws Exception {
    long slba = 14336;
    byte[] data = new byte[LEN];
    new Random(14).nextBytes(data);
    long landedBefore = target.bytesLanded();
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      int ttag = openAndAskToWrite(admin, io, 15, slba, 3000);
      byte[] pdu = h2cData(15, ttag, data);
      io.send(Arrays.copyOfRange(pdu, 0, pdu.length / 2));
      awaitLanded(landedBefore + LEN);
      // Keep-alive expiry comes some 3 to 4 s after the write command, later on a loaded machine.
      Duration within = Duration.ofSeconds(60);
      assertTrue(io.closedByPeer(within), "the I/O queue closes with its controller");
      assertTrue(admin.closedByPeer(within), "and so does the admin queue");
    }
    byte[] next = new byte[LEN];
    new Random(15).nextBytes(next);
    write(slba * BS, next);
    assertArrayEquals(next, read(slba * BS, LEN), "a later write over the same range");
  }

  /** With data digests on, data is checked whole before it reaches the namespace: none lands. */
  @Test
  void withDataDigestsNothingLands() throws Exception {
    byte[] data = new byte[LEN];
    new Random(6).nextBytes(data);
    int slba = 12288;
    byte[] before = read((long) slba * BS, LEN);
    long landedBefore = target.bytesLanded();
    try (RawHost admin = new RawHost("127.0.0.1", target.port());
        RawHost io = new RawHost("127.0.0.1", target.port())) {
      admin.handshake();
      RawHost.Frame ac = admin.connect(NQN, RAW_HOST, 0, 0xFFFF, 0);
      assertEquals(0, RawHost.responseStatus(ac), "admin Connect");
      assertEquals(0, admin.enable(), "CC.EN");
      assertEquals(0, io.connectIo(NQN, RAW_HOST, ac.u16(8), true), "I/O Connect");
      int status = BadInputTest.writeByR2t(io, 20, slba, data, 1, true);
      assertEquals(Nvme.SC_TRANSIENT_TRANSPORT, status & 0xFF, "a bad digest's status");
      assertArrayEquals(before, read((long) slba * BS, LEN), "nothing of the bad write");
      assertEquals(0, BadInputTest.writeByR2t(io, 21, slba, data, 1, false), "a good digest");
      assertArrayEquals(data, read((long) slba * BS, LEN), "the good write");
    }
    assertEquals(landedBefore, target.bytesLanded(), "bytes landed with data digests on");
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Connects a raw controller (admin queue on {@code admin}, I/O queue on {@code io}), sends a
   * write of {@link #LEN} bytes at {@code slba} by R2T, and returns the R2T's transfer tag.
   */
  private int openAndAskToWrite(RawHost admin, RawHost io, int cid, long slba) throws IOException {
    return openAndAskToWrite(admin, io, cid, slba, 0);
  }

  /** As above, with a keep-alive timeout of {@code katoMs} (0 for none) for the controller. */
  private int openAndAskToWrite(RawHost admin, RawHost io, int cid, long slba, int katoMs)
      throws IOException {
    admin.handshake();
    RawHost.Frame ac = admin.connect(NQN, RAW_HOST, 0, 0xFFFF, katoMs);
    assertEquals(0, RawHost.responseStatus(ac), "admin Connect");
    assertEquals(0, admin.enable(), "CC.EN");
    assertEquals(0, io.connectIo(NQN, RAW_HOST, ac.u16(8), false), "I/O Connect");
    io.send(
        RawHost.capsule(
            BadInputTest.io(Nvme.IO_WRITE, cid, 1, slba, LEN / BS).sgl(0, LEN, Nvme.SGL_TRANSPORT),
            null));
    RawHost.Frame r2t = io.read();
    assertEquals(Pdu.T_R2T, r2t.type(), "R2T");
    assertEquals(LEN, r2t.i32(16), "R2T length");
    return r2t.u16(10);
  }

  /** One H2CData PDU carrying all of {@code data}, without digests. */
  private static byte[] h2cData(int cid, int ttag, byte[] data) {
    return h2cData(cid, ttag, 0, data, 0, true);
  }

  /** As above, with {@code pad} bytes between the header and the data (PDO 24 + pad). */
  private static byte[] h2cData(int cid, int ttag, byte[] data, int pad) {
    return h2cData(cid, ttag, 0, data, pad, true);
  }

  /** An H2CData PDU carrying {@code data} as the transfer's bytes from {@code datao}. */
  private static byte[] h2cData(int cid, int ttag, int datao, byte[] data, int pad, boolean last) {
    assertTrue(data.length >= PduFrameDecoder.MIN_LANDING_BYTES, "large enough to land");
    byte[] pdu = new byte[24 + pad + data.length];
    ByteBuffer b = ByteBuffer.wrap(pdu).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    b.put((byte) Pdu.T_H2C_DATA)
        .put((byte) (last ? Pdu.F_LAST_PDU : 0))
        .put((byte) 24)
        .put((byte) (24 + pad))
        .putInt(pdu.length)
        .putShort((short) cid)
        .putShort((short) ttag)
        .putInt(datao)
        .putInt(data.length)
        .putInt(0)
        .position(24 + pad);
    b.put(data);
    return pdu;
  }

  private void awaitLanded(long atLeast) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (target.bytesLanded() < atLeast) {
      assertTrue(
          System.nanoTime() < deadline,
          "the target never took the data as landing: " + target.bytesLanded() + " bytes landed");
      Thread.sleep(5);
    }
  }

  private void write(long offset, byte[] data) throws Exception {
    ByteBuffer b = ByteBuffer.allocateDirect(data.length).put(data).flip();
    good.ioQueue(0).write(1, offset / BS, b).get(30, TimeUnit.SECONDS);
  }

  private byte[] read(long offset, int len) throws Exception {
    ByteBuffer b = ByteBuffer.allocateDirect(len);
    good.ioQueue(0).read(1, offset / BS, b).get(30, TimeUnit.SECONDS);
    byte[] got = new byte[len];
    b.get(got);
    return got;
  }
}
