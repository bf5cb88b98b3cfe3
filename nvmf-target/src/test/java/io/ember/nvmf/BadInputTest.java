package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.nvmf.tcp.Pdu;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Malformed and out-of-order input sent to the embedded target from a raw socket: each must get the
 * right C2HTermReq (fatal) or NVMe status (non-fatal), and a well-behaved host connected alongside
 * must keep working after every one of them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BadInputTest {
  static final String NQN = "nqn.2024-01.io.ember:bad-input";
  static final String RAW_HOST = "nqn.2024-01.io.ember:raw";

  /** Namespace 1: memory, 512-byte blocks. */
  static final int MEMORY_NS = 1;

  /** Namespace 2: a file, 4 KiB blocks (its I/O runs on the target's worker pool). */
  static final int FILE_NS = 2;

  NvmfTarget target;
  NvmfController good;
  Path dir;
  final ByteBuffer goodData = ByteBuffer.allocateDirect(4096);

  @BeforeAll
  void start() throws Exception {
    dir = Files.createTempDirectory("nvmf-bad-input");
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(16L << 20, 512));
    s.addNamespace(new FileNamespace(dir.resolve("ns2.img"), 4L << 20, 4096, true));
    target =
        NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).maxH2CData(8192).build().start();
    good = NvmfHost.connect(target.uri(NQN), NvmfHostOptions.defaults());
    byte[] b = new byte[4096];
    new Random(1).nextBytes(b);
    goodData.put(b).flip();
    good.ioQueue(0).write(1, 100, goodData).get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  void stop() throws IOException {
    if (good != null) {
      good.close();
    }
    if (target != null) {
      target.close();
    }
    if (dir != null) {
      Files.deleteIfExists(dir.resolve("ns2.img"));
      Files.delete(dir);
    }
  }

  @AfterEach
  void goodHostStillServed() throws Exception {
    ByteBuffer back = ByteBuffer.allocateDirect(4096);
    good.ioQueue(0).read(1, 100, back).get(10, TimeUnit.SECONDS);
    byte[] want = new byte[4096];
    goodData.duplicate().get(want);
    byte[] got = new byte[4096];
    back.get(got);
    assertArrayEquals(want, got, "the well-behaved host's data");
  }

  private RawHost raw() throws Exception {
    return new RawHost("127.0.0.1", target.port());
  }

  /**
   * Reads the next PDU, asserts it is a C2HTermReq with {@code fes}/{@code fei}, and that the
   * target closes.
   */
  static void expectTerm(RawHost h, int fes, int fei) throws Exception {
    RawHost.Frame f = h.read();
    assertEquals(Pdu.T_C2H_TERM, f.type(), "expected C2HTermReq");
    assertEquals(fes, f.u16(8), "FES");
    assertEquals(fei, f.i32(10), "FEI");
    assertTrue(
        f.b().capacity() >= 24 && f.b().capacity() <= 152, "C2HTermReq PLEN " + f.b().capacity());
    assertTrue(h.closedByPeer(), "target closes after C2HTermReq");
  }

  @Test
  void pduBeforeIcReqIsSequenceError() throws Exception {
    try (RawHost h = raw()) {
      h.send(RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL), null));
      expectTerm(h, Pdu.FES_PDU_SEQUENCE, 0);
    }
  }

  @Test
  void secondIcReqIsSequenceError() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      h.send(RawHost.icReq(false, false));
      expectTerm(h, Pdu.FES_PDU_SEQUENCE, 0);
    }
  }

  @Test
  void badPduTypeIsInvalidHeaderField() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] pdu = new byte[24];
      RawHost.le(pdu).put((byte) 0x0F).put((byte) 0).put((byte) 24).put((byte) 0).putInt(24);
      h.send(pdu);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 0);
    }
  }

  @Test
  void controllerToHostTypeFromHostIsInvalid() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] pdu = new byte[24];
      RawHost.le(pdu)
          .put((byte) Pdu.T_CAPSULE_RESP)
          .put((byte) 0)
          .put((byte) 24)
          .put((byte) 0)
          .putInt(24);
      h.send(pdu);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 0);
    }
  }

  @Test
  void wrongHlenIsInvalidHeaderField() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] c =
          RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL), null);
      c[2] = 24;
      h.send(c);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 2);
    }
  }

  @Test
  void icReqWithLyingPlenIsInvalidHeaderField() throws Exception {
    try (RawHost h = raw()) {
      byte[] ic = RawHost.icReq(false, false);
      ByteBuffer.wrap(ic).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(4, 200);
      h.send(ic);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 4);
    }
  }

  @Test
  void hugePlenIsRejectedBeforeBuffering() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] c =
          RawHost.capsule(new Sqe().opcode(Nvme.IO_WRITE).flags(Nvme.PSDT_SGL), new byte[16]);
      ByteBuffer.wrap(c).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(4, 0x7FFFFFF0);
      // Only the header is sent: the target must not wait for 2 GiB.
      h.send(java.util.Arrays.copyOf(c, 72));
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 4);
    }
  }

  @Test
  void plenShorterThanHeaderIsInvalid() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] c =
          RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL), null);
      ByteBuffer.wrap(c).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(4, 40);
      h.send(c);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 4);
    }
  }

  @Test
  void dataOffsetBeyondThePduIsInvalid() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] c =
          RawHost.capsule(new Sqe().opcode(Nvme.IO_WRITE).flags(Nvme.PSDT_SGL), new byte[64]);
      c[3] = (byte) 200; // PDO past PLEN (136)
      h.send(c);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 3);
    }
  }

  @Test
  void headerDigestMismatchIsHeaderDigestError() throws Exception {
    try (RawHost h = raw()) {
      h.send(RawHost.icReq(true, false));
      RawHost.Frame r = h.read();
      assertEquals(Pdu.T_ICRESP, r.type());
      assertEquals(1, r.b().get(11) & 3, "header digest granted");
      Sqe sqe = new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL);
      byte[] pdu = new byte[76];
      ByteBuffer b =
          RawHost.le(pdu)
              .put((byte) 4)
              .put((byte) Pdu.F_HDGST)
              .put((byte) 72)
              .put((byte) 0)
              .putInt(76)
              .put(sqe.array());
      b.putInt(72, RawHost.crc(pdu, 0, 72) ^ 1);
      h.send(pdu);
      expectTerm(h, Pdu.FES_HEADER_DIGEST, 0);
    }
  }

  @Test
  void dataDigestMismatchIsTransientTransportErrorAndNotFatal() throws Exception {
    try (RawHost h = raw()) {
      h.send(RawHost.icReq(false, true));
      assertEquals(2, h.read().b().get(11) & 3, "data digest granted");
      byte[] data = new byte[1024];
      Sqe sqe =
          new Sqe()
              .opcode(Nvme.FABRICS)
              .flags(Nvme.PSDT_SGL)
              .cid(3)
              .fctype(Nvme.FCTYPE_CONNECT)
              .shortAt(44, 31)
              .sgl(0, 1024, Nvme.SGL_INCAPSULE);
      byte[] pdu = new byte[72 + 1024 + 4];
      RawHost.le(pdu)
          .put((byte) 4)
          .put((byte) Pdu.F_DDGST)
          .put((byte) 72)
          .put((byte) 72)
          .putInt(72 + 1024 + 4)
          .put(sqe.array())
          .put(data)
          .putInt(RawHost.crc(data, 0, 1024) + 1);
      h.send(pdu);
      int status = RawHost.responseStatus(h.read());
      assertEquals(Nvme.SC_TRANSIENT_TRANSPORT, status & 0xFF, "SC");
      assertEquals(0, (status >> 8) & 7, "SCT");
      h.s.setSoTimeout(300);
      assertTrue(!h.closedByPeer(), "a data digest error is not fatal");
    }
  }

  /**
   * A write whose data comes by R2T and fails its data digest is refused with a transient transport
   * error and lands nothing, whether the data came in one H2CData PDU (handed on without a copy of
   * its own) or in two; the same write with good digests then lands.
   */
  @Test
  void h2cDataWithABadDigestLandsNothing() throws Exception {
    int slba = 1000;
    for (int pdus = 1; pdus <= 2; pdus++) {
      int len = 8192 * pdus; // MAXH2CDATA is 8 KiB
      try (RawHost admin = raw();
          RawHost h = raw()) {
        admin.handshake();
        RawHost.Frame ac = admin.connect(NQN, RAW_HOST, 0, 0xFFFF, 0);
        assertEquals(0, RawHost.responseStatus(ac), "admin Connect");
        assertEquals(0, admin.enable(), "CC.EN");
        assertEquals(0, h.connectIo(NQN, RAW_HOST, ac.u16(8), true), "I/O Connect");
        byte[] before = readBack(slba, len);
        byte[] data = new byte[len];
        new Random(pdus).nextBytes(data);

        int status = writeByR2t(h, 20, slba, data, pdus, true);
        assertEquals(Nvme.SC_TRANSIENT_TRANSPORT, status & 0xFF, pdus + " PDU(s): SC");
        assertEquals(0, (status >> 8) & 7, pdus + " PDU(s): SCT");
        assertArrayEquals(before, readBack(slba, len), pdus + " PDU(s): nothing landed");

        assertEquals(0, writeByR2t(h, 21, slba, data, pdus, false), pdus + " PDU(s), good");
        assertArrayEquals(data, readBack(slba, len), pdus + " PDU(s): the good write landed");
      }
    }
  }

  /**
   * Writes {@code data} at {@code slba} of namespace 1 (512-byte blocks) on I/O queue {@code h},
   * which has data digests on, answering the R2T with {@code pdus} H2CData PDUs, the last one's
   * digest wrong if {@code corrupt}; returns the completion's status.
   */
  static int writeByR2t(RawHost h, int cid, int slba, byte[] data, int pdus, boolean corrupt)
      throws IOException {
    h.send(
        RawHost.capsule(
            io(Nvme.IO_WRITE, cid, MEMORY_NS, slba, data.length / 512)
                .sgl(0, data.length, Nvme.SGL_TRANSPORT),
            null));
    RawHost.Frame r2t = h.read();
    assertEquals(Pdu.T_R2T, r2t.type(), "R2T");
    int each = data.length / pdus;
    for (int i = 0; i < pdus; i++) {
      boolean last = i == pdus - 1;
      int crc = RawHost.crc(data, i * each, each) ^ (corrupt && last ? 1 : 0);
      byte[] pdu = new byte[24 + each + 4];
      RawHost.le(pdu)
          .put((byte) Pdu.T_H2C_DATA)
          .put((byte) (Pdu.F_DDGST | (last ? Pdu.F_LAST_PDU : 0)))
          .put((byte) 24)
          .put((byte) 24)
          .putInt(pdu.length)
          .putShort((short) cid)
          .putShort((short) r2t.u16(10))
          .putInt(i * each)
          .putInt(each)
          .putInt(0)
          .put(data, i * each, each)
          .putInt(crc);
      h.send(pdu);
    }
    return RawHost.responseStatus(h.read());
  }

  private byte[] readBack(int slba, int len) throws Exception {
    ByteBuffer back = ByteBuffer.allocateDirect(len);
    good.ioQueue(0).read(MEMORY_NS, slba, back).get(10, TimeUnit.SECONDS);
    byte[] got = new byte[len];
    back.get(got);
    return got;
  }

  @Test
  void h2cDataForUnknownCommandIsFatal() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      byte[] pdu = new byte[24 + 16];
      RawHost.le(pdu)
          .put((byte) Pdu.T_H2C_DATA)
          .put((byte) Pdu.F_LAST_PDU)
          .put((byte) 24)
          .put((byte) 24)
          .putInt(40)
          .putShort((short) 5)
          .putShort((short) 77)
          .putInt(0)
          .putInt(16)
          .putInt(0)
          .put(new byte[16]);
      h.send(pdu);
      expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 10);
    }
  }

  @Test
  void h2cDataBeyondTheTransferIsOutOfRange() throws Exception {
    // Connect's 1024 bytes of data may come by R2T too: the smallest R2T flow there is.
    try (RawHost h = raw()) {
      h.handshake();
      byte[] data = new byte[1024];
      ByteBuffer d = ByteBuffer.wrap(data).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      d.putShort(16, (short) 0xFFFF);
      d.put(256, NQN.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      Sqe sqe =
          new Sqe()
              .opcode(Nvme.FABRICS)
              .flags(Nvme.PSDT_SGL)
              .cid(9)
              .fctype(Nvme.FCTYPE_CONNECT)
              .shortAt(44, 31)
              .sgl(0, 1024, Nvme.SGL_TRANSPORT);
      h.send(RawHost.capsule(sqe, null));
      RawHost.Frame r2t = h.read();
      assertEquals(Pdu.T_R2T, r2t.type(), "Connect data by R2T");
      assertEquals(9, r2t.u16(8));
      assertEquals(1024, r2t.i32(16), "R2TL");
      int ttag = r2t.u16(10);
      byte[] pdu = new byte[24 + 16];
      RawHost.le(pdu)
          .put((byte) Pdu.T_H2C_DATA)
          .put((byte) 0)
          .put((byte) 24)
          .put((byte) 24)
          .putInt(40)
          .putShort((short) 9)
          .putShort((short) ttag)
          .putInt(1020)
          .putInt(16)
          .putInt(0)
          .put(new byte[16]);
      h.send(pdu);
      expectTerm(h, Pdu.FES_DATA_OUT_OF_RANGE, 12);
    }
  }

  @Test
  void commandBeforeConnectIsCommandSequenceError() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      h.send(
          RawHost.capsule(
              new Sqe()
                  .opcode(Nvme.ADMIN_IDENTIFY)
                  .flags(Nvme.PSDT_SGL)
                  .cid(4)
                  .cdw(10, 1)
                  .sgl(0, 4096, Nvme.SGL_TRANSPORT),
              null));
      RawHost.Frame f = h.read();
      assertEquals(4, f.u16(20), "CID");
      assertEquals(Nvme.SC_CMD_SEQ_ERROR, RawHost.responseStatus(f) & 0xFF);
    }
  }

  @Test
  void prpInsteadOfSglIsInvalidField() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      assertEquals(0, h.connectAdmin(NQN, "nqn.2024-01.io.ember:raw", 0));
      h.send(RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(0).cid(5), null));
      int st = RawHost.responseStatus(h.read());
      assertEquals(Nvme.SC_INVALID_FIELD, st & 0xFF);
      assertTrue((st & Nvme.STATUS_DNR) != 0, "DNR");
    }
  }

  @Test
  void unknownAdminOpcodeIsInvalidOpcode() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      assertEquals(0, h.connectAdmin(NQN, "nqn.2024-01.io.ember:raw", 0));
      assertEquals(0, h.enable());
      h.send(RawHost.capsule(new Sqe().opcode(0xC3).flags(Nvme.PSDT_SGL).cid(6), null));
      assertEquals(Nvme.SC_INVALID_OPCODE, RawHost.responseStatus(h.read()) & 0xFF);
      h.send(
          RawHost.capsule(
              new Sqe()
                  .opcode(Nvme.ADMIN_IDENTIFY)
                  .flags(Nvme.PSDT_SGL)
                  .cid(7)
                  .cdw(10, 0x55)
                  .sgl(0, 4096, Nvme.SGL_TRANSPORT),
              null));
      assertEquals(Nvme.SC_INVALID_FIELD, RawHost.responseStatus(h.read()) & 0xFF, "unknown CNS");
      h.send(
          RawHost.capsule(
              new Sqe()
                  .opcode(Nvme.ADMIN_GET_LOG_PAGE)
                  .flags(Nvme.PSDT_SGL)
                  .cid(8)
                  .cdw(10, 0x6F | (127 << 16))
                  .sgl(0, 512, Nvme.SGL_TRANSPORT),
              null));
      int st = RawHost.responseStatus(h.read());
      assertEquals(1, (st >> 8) & 7, "SCT command specific");
      assertEquals(Nvme.SC_INVALID_LOG_PAGE, st & 0xFF);
    }
  }

  @Test
  void keepAliveExpiryTearsTheControllerDown() throws Exception {
    try (RawHost h = raw()) {
      h.handshake();
      // Before the connect: the target's keep-alive clock starts while it is answered.
      long t0 = System.nanoTime();
      assertEquals(0, h.connectAdmin(NQN, "nqn.2024-01.io.ember:raw", 300));
      assertTrue(h.closedByPeer(), "target closes a controller that sends no Keep Alive");
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms >= 250, "not before KATO: " + ms + " ms");
    }
  }

  // ------------------------------------------------------------------------------------ LBA range
  // checks

  /** A raw controller: its admin connection (enabled) and one I/O queue connection. */
  private record RawController(RawHost admin, RawHost io) implements AutoCloseable {
    @Override
    public void close() throws IOException {
      io.close();
      admin.close();
    }
  }

  private RawController rawController() throws Exception {
    RawHost a = raw();
    RawHost io = null;
    try {
      a.handshake();
      RawHost.Frame r = a.connect(NQN, RAW_HOST, 0, 0xFFFF, 0);
      assertEquals(0, RawHost.responseStatus(r), "admin Connect");
      assertEquals(0, a.enable(), "CC.EN");
      io = raw();
      io.handshake();
      assertEquals(
          0, RawHost.responseStatus(io.connect(NQN, RAW_HOST, 1, r.u16(8), 0)), "I/O Connect");
      return new RawController(a, io);
    } catch (Exception | AssertionError e) {
      a.close();
      if (io != null) {
        io.close();
      }
      throw e;
    }
  }

  /**
   * {SLBA, NLB} pairs that end past a namespace of {@code nsze} blocks: plainly, and with SLBA +
   * NLB wrapping as a signed or an unsigned 64-bit sum (SLBA is unsigned on the wire).
   */
  static long[][] pastTheEnd(long nsze) {
    return new long[][] {
      {nsze, 1},
      {nsze - 1, 2},
      {Long.MAX_VALUE, 1},
      {Long.MAX_VALUE - 1, 4},
      {Long.MAX_VALUE - 100, 65536},
      {Long.MIN_VALUE, 1},
      {-1L, 1},
      {-4L, 4},
      {-1L, 65536},
    };
  }

  /**
   * DSM ranges {SLBA, NLB (32 bits)} past the end of {@code nsze} blocks, plainly and by wrapping.
   */
  static long[][] dsmPastTheEnd(long nsze) {
    return new long[][] {
      {nsze, 1},
      {nsze - 1, 2},
      {0, nsze + 1},
      {Long.MAX_VALUE, 1},
      {Long.MAX_VALUE - 5, 100},
      {Long.MAX_VALUE - 0xFFFFFFFEL, 0xFFFFFFFFL},
      {Long.MIN_VALUE, 1},
      {-1L, 1},
      {-1L, 0},
      {-0xFFFFFFFFL, 0xFFFFFFFFL},
    };
  }

  static Sqe io(int opcode, int cid, int nsid, long slba, int nlb) {
    return new Sqe()
        .opcode(opcode)
        .flags(Nvme.PSDT_SGL)
        .cid(cid)
        .nsid(nsid)
        .cdw(10, (int) slba)
        .cdw(11, (int) (slba >>> 32))
        .cdw(12, nlb - 1);
  }

  static byte[] dsmRanges(long[]... ranges) {
    ByteBuffer b = ByteBuffer.allocate(16 * ranges.length).order(ByteOrder.LITTLE_ENDIAN);
    for (long[] r : ranges) {
      b.putInt(0).putInt((int) r[1]).putLong(r[0]);
    }
    return b.array();
  }

  /** Sends {@code sqe} and returns its status; a command that gets no answer fails the test. */
  static int answer(RawHost h, Sqe sqe, byte[] data, String what) {
    try {
      return h.command(sqe, data);
    } catch (IOException e) {
      return fail(what + " got no answer: " + e);
    }
  }

  static void assertLbaOutOfRange(int status, String what) {
    assertEquals(
        Nvme.SCT_GENERIC,
        (status >> 8) & 7,
        what + ": SCT of status 0x" + Integer.toHexString(status));
    assertEquals(
        Nvme.SC_LBA_RANGE, status & 0xFF, what + ": SC of status 0x" + Integer.toHexString(status));
    assertTrue((status & Nvme.STATUS_DNR) != 0, what + ": DNR");
  }

  /** Reads block 0 on the raw I/O queue: the connection still works. */
  static void assertStillServed(RawHost io, int nsid, int bs, String after) {
    Sqe read = io(Nvme.IO_READ, 99, nsid, 0, 1).sgl(0, bs, Nvme.SGL_TRANSPORT);
    assertEquals(
        0,
        answer(io, read, null, "Read of block 0 after " + after),
        "Read of block 0 after " + after);
  }

  private void lbaRangesThatWrapAreOutOfRange(int nsid) throws Exception {
    IdentifyNamespace ns = good.namespace(nsid);
    long nsze = ns.size();
    int bs = ns.blockSize();
    try (RawController c = rawController()) {
      int cid = 10;
      for (long[] r : pastTheEnd(nsze)) {
        long slba = r[0];
        int nlb = (int) r[1];
        int len = nlb * bs;
        String at = " nsid " + nsid + " slba " + Long.toUnsignedString(slba) + " nlb " + nlb;
        assertLbaOutOfRange(
            answer(
                c.io(),
                io(Nvme.IO_READ, ++cid, nsid, slba, nlb).sgl(0, len, Nvme.SGL_TRANSPORT),
                null,
                "Read" + at),
            "Read" + at);
        assertStillServed(c.io(), nsid, bs, "Read" + at);
        boolean inCapsule = len <= 8192;
        assertLbaOutOfRange(
            answer(
                c.io(),
                io(Nvme.IO_WRITE, ++cid, nsid, slba, nlb)
                    .sgl(0, len, inCapsule ? Nvme.SGL_INCAPSULE : Nvme.SGL_TRANSPORT),
                inCapsule ? new byte[len] : null,
                "Write" + at),
            "Write" + at);
        assertStillServed(c.io(), nsid, bs, "Write" + at);
        assertLbaOutOfRange(
            answer(
                c.io(),
                io(Nvme.IO_WRITE_ZEROES, ++cid, nsid, slba, nlb).sgl(0, 0, Nvme.SGL_TRANSPORT),
                null,
                "Write Zeroes" + at),
            "Write Zeroes" + at);
        assertStillServed(c.io(), nsid, bs, "Write Zeroes" + at);
      }
      for (long[] r : dsmPastTheEnd(nsze)) {
        String at = " nsid " + nsid + " range slba " + Long.toUnsignedString(r[0]) + " nlb " + r[1];
        Sqe dsm =
            new Sqe()
                .opcode(Nvme.IO_DSM)
                .flags(Nvme.PSDT_SGL)
                .cid(++cid)
                .nsid(nsid)
                .cdw(10, 0)
                .cdw(11, 1 << 2)
                .sgl(0, 16, Nvme.SGL_INCAPSULE);
        assertLbaOutOfRange(
            answer(c.io(), dsm, dsmRanges(r), "Deallocate" + at), "Deallocate" + at);
        assertStillServed(c.io(), nsid, bs, "Deallocate" + at);
      }
      // One bad range refuses the whole command: the good range before it keeps its data.
      byte[] block = new byte[bs];
      new Random(nsid).nextBytes(block);
      assertEquals(
          0,
          answer(
              c.io(),
              io(Nvme.IO_WRITE, ++cid, nsid, 0, 1).sgl(0, bs, Nvme.SGL_INCAPSULE),
              block,
              "Write of block 0"));
      Sqe dsm =
          new Sqe()
              .opcode(Nvme.IO_DSM)
              .flags(Nvme.PSDT_SGL)
              .cid(++cid)
              .nsid(nsid)
              .cdw(10, 1)
              .cdw(11, 1 << 2)
              .sgl(0, 32, Nvme.SGL_INCAPSULE);
      assertLbaOutOfRange(
          answer(
              c.io(),
              dsm,
              dsmRanges(new long[] {0, 1}, new long[] {Long.MAX_VALUE - 1, 4}),
              "two-range Deallocate"),
          "two-range Deallocate");
      ByteBuffer back = ByteBuffer.allocateDirect(bs);
      good.ioQueue(0).read(nsid, 0, back).get(10, TimeUnit.SECONDS);
      byte[] got = new byte[bs];
      back.get(got);
      assertArrayEquals(block, got, "block 0 after a refused Deallocate");
    }
  }

  @Test
  void lbaRangesThatWrapAreOutOfRangeOnAMemoryNamespace() throws Exception {
    lbaRangesThatWrapAreOutOfRange(MEMORY_NS);
  }

  @Test
  void lbaRangesThatWrapAreOutOfRangeOnAFileNamespace() throws Exception {
    lbaRangesThatWrapAreOutOfRange(FILE_NS);
  }
}
