package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.tcp.Pdu;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.nio.ByteBuffer;
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
 * Malformed and out-of-order input sent to the embedded target from a raw socket: each must get the right
 * C2HTermReq (fatal) or NVMe status (non-fatal), and a well-behaved host connected alongside must keep
 * working after every one of them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(LeakCheck.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BadInputTest {
    static final String NQN = "nqn.2024-01.io.ember:bad-input";
    NvmfTarget target;
    NvmfController good;
    final ByteBuffer goodData = ByteBuffer.allocateDirect(4096);

    @BeforeAll
    void start() throws Exception {
        Subsystem s = new Subsystem(NQN);
        s.addNamespace(new MemoryNamespace(16L << 20, 512));
        target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).maxH2CData(8192).build().start();
        good = NvmfHost.connect(target.uri(NQN), NvmfHostOptions.defaults());
        byte[] b = new byte[4096];
        new Random(1).nextBytes(b);
        goodData.put(b).flip();
        good.ioQueue(0).write(1, 100, goodData).get(10, TimeUnit.SECONDS);
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

    /** Reads the next PDU, asserts it is a C2HTermReq with {@code fes}/{@code fei}, and that the target closes. */
    private static void expectTerm(RawHost h, int fes, int fei) throws Exception {
        RawHost.Frame f = h.read();
        assertEquals(Pdu.T_C2H_TERM, f.type(), "expected C2HTermReq");
        assertEquals(fes, f.u16(8), "FES");
        assertEquals(fei, f.i32(10), "FEI");
        assertTrue(f.b().capacity() >= 24 && f.b().capacity() <= 152, "C2HTermReq PLEN " + f.b().capacity());
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
            ByteBuffer b = RawHost.le(24).put((byte) 0x0F).put((byte) 0).put((byte) 24).put((byte) 0).putInt(24);
            h.send(b.array());
            expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 0);
        }
    }

    @Test
    void controllerToHostTypeFromHostIsInvalid() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            ByteBuffer b = RawHost.le(24).put((byte) Pdu.T_CAPSULE_RESP).put((byte) 0).put((byte) 24).put((byte) 0)
                    .putInt(24);
            h.send(b.array());
            expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 0);
        }
    }

    @Test
    void wrongHlenIsInvalidHeaderField() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            byte[] c = RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL), null);
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
            byte[] c = RawHost.capsule(new Sqe().opcode(Nvme.IO_WRITE).flags(Nvme.PSDT_SGL), new byte[16]);
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
            byte[] c = RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_KEEP_ALIVE).flags(Nvme.PSDT_SGL), null);
            ByteBuffer.wrap(c).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(4, 40);
            h.send(c);
            expectTerm(h, Pdu.FES_INVALID_HEADER_FIELD, 4);
        }
    }

    @Test
    void dataOffsetBeyondThePduIsInvalid() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            byte[] c = RawHost.capsule(new Sqe().opcode(Nvme.IO_WRITE).flags(Nvme.PSDT_SGL), new byte[64]);
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
            ByteBuffer b = RawHost.le(76).put((byte) 4).put((byte) Pdu.F_HDGST).put((byte) 72).put((byte) 0)
                    .putInt(76).put(sqe.array());
            b.putInt(72, RawHost.crc(b.array(), 0, 72) ^ 1);
            h.send(b.array());
            expectTerm(h, Pdu.FES_HEADER_DIGEST, 0);
        }
    }

    @Test
    void dataDigestMismatchIsTransientTransportErrorAndNotFatal() throws Exception {
        try (RawHost h = raw()) {
            h.send(RawHost.icReq(false, true));
            assertEquals(2, h.read().b().get(11) & 3, "data digest granted");
            byte[] data = new byte[1024];
            Sqe sqe = new Sqe().opcode(Nvme.FABRICS).flags(Nvme.PSDT_SGL).cid(3).fctype(Nvme.FCTYPE_CONNECT)
                    .shortAt(44, 31).sgl(0, 1024, Nvme.SGL_INCAPSULE);
            ByteBuffer b = RawHost.le(72 + 1024 + 4).put((byte) 4).put((byte) Pdu.F_DDGST).put((byte) 72)
                    .put((byte) 72).putInt(72 + 1024 + 4).put(sqe.array()).put(data);
            b.putInt(RawHost.crc(data, 0, 1024) + 1);
            h.send(b.array());
            int status = RawHost.responseStatus(h.read());
            assertEquals(Nvme.SC_TRANSIENT_TRANSPORT, status & 0xFF, "SC");
            assertEquals(0, (status >> 8) & 7, "SCT");
            h.s.setSoTimeout(300);
            assertTrue(!h.closedByPeer(), "a data digest error is not fatal");
        }
    }

    @Test
    void h2cDataForUnknownCommandIsFatal() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            ByteBuffer b = RawHost.le(24 + 16).put((byte) Pdu.T_H2C_DATA).put((byte) Pdu.F_LAST_PDU).put((byte) 24)
                    .put((byte) 24).putInt(40).putShort((short) 5).putShort((short) 77).putInt(0).putInt(16).putInt(0)
                    .put(new byte[16]);
            h.send(b.array());
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
            Sqe sqe = new Sqe().opcode(Nvme.FABRICS).flags(Nvme.PSDT_SGL).cid(9).fctype(Nvme.FCTYPE_CONNECT)
                    .shortAt(44, 31).sgl(0, 1024, Nvme.SGL_TRANSPORT);
            h.send(RawHost.capsule(sqe, null));
            RawHost.Frame r2t = h.read();
            assertEquals(Pdu.T_R2T, r2t.type(), "Connect data by R2T");
            assertEquals(9, r2t.u16(8));
            assertEquals(1024, r2t.i32(16), "R2TL");
            int ttag = r2t.u16(10);
            ByteBuffer b = RawHost.le(24 + 16).put((byte) Pdu.T_H2C_DATA).put((byte) 0).put((byte) 24)
                    .put((byte) 24).putInt(40).putShort((short) 9).putShort((short) ttag).putInt(1020).putInt(16)
                    .putInt(0).put(new byte[16]);
            h.send(b.array());
            expectTerm(h, Pdu.FES_DATA_OUT_OF_RANGE, 12);
        }
    }

    @Test
    void commandBeforeConnectIsCommandSequenceError() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            h.send(RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_IDENTIFY).flags(Nvme.PSDT_SGL).cid(4)
                    .cdw(10, 1).sgl(0, 4096, Nvme.SGL_TRANSPORT), null));
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
            Sqe cc = new Sqe().opcode(Nvme.FABRICS).flags(Nvme.PSDT_SGL).cid(2).fctype(Nvme.FCTYPE_PROPERTY_SET)
                    .intAt(44, Nvme.PROP_CC).longAt(48, (4 << 20) | (6 << 16) | 1).sgl(0, 0, Nvme.SGL_TRANSPORT);
            h.send(RawHost.capsule(cc, null));
            assertEquals(0, RawHost.responseStatus(h.read()));
            h.send(RawHost.capsule(new Sqe().opcode(0xC3).flags(Nvme.PSDT_SGL).cid(6), null));
            assertEquals(Nvme.SC_INVALID_OPCODE, RawHost.responseStatus(h.read()) & 0xFF);
            h.send(RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_IDENTIFY).flags(Nvme.PSDT_SGL).cid(7)
                    .cdw(10, 0x55).sgl(0, 4096, Nvme.SGL_TRANSPORT), null));
            assertEquals(Nvme.SC_INVALID_FIELD, RawHost.responseStatus(h.read()) & 0xFF, "unknown CNS");
            h.send(RawHost.capsule(new Sqe().opcode(Nvme.ADMIN_GET_LOG_PAGE).flags(Nvme.PSDT_SGL).cid(8)
                    .cdw(10, 0x6F | (127 << 16)).sgl(0, 512, Nvme.SGL_TRANSPORT), null));
            int st = RawHost.responseStatus(h.read());
            assertEquals(1, (st >> 8) & 7, "SCT command specific");
            assertEquals(Nvme.SC_INVALID_LOG_PAGE, st & 0xFF);
        }
    }

    @Test
    void keepAliveExpiryTearsTheControllerDown() throws Exception {
        try (RawHost h = raw()) {
            h.handshake();
            assertEquals(0, h.connectAdmin(NQN, "nqn.2024-01.io.ember:raw", 300));
            long t0 = System.nanoTime();
            assertTrue(h.closedByPeer(), "target closes a controller that sends no Keep Alive");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 250, "not before KATO: " + ms + " ms");
        }
    }
}
