package io.ember.nvmf.tcp;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ember.nvmf.LeakCheck;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Seeded random fuzzing of the PDU decoders for a bounded time: random byte streams and mutations of valid
 * PDUs. The decoders may accept, wait for more bytes, or throw {@link PduException}; any other exception,
 * an unreleased buffer, or a PDU whose data exceeds the negotiated limits is a bug. Failures print the
 * seed and iteration to reproduce.
 */
@ExtendWith(LeakCheck.class)
class PduFuzzTest {
    static final long SEED = 0x5EED_E3BE_2026L;
    static final long BUDGET_NANOS = TimeUnit.SECONDS.toNanos(3);
    static final int MAX_CAPSULE = 8192;
    static final int MAX_DATA = 16384;

    /** A valid stream of one IC PDU and a few PDUs of the given direction. */
    static ByteBuf validStream(Random r, boolean controllerSide, boolean hd, boolean dd, int pda) {
        EmbeddedChannel ch = new EmbeddedChannel();
        PduWriter w = new PduWriter(ch);
        if (controllerSide) {
            w.icReq(pda, hd, dd, 0);
        } else {
            w.icResp(pda, hd, dd, MAX_DATA);
        }
        w.negotiated(hd, dd, pda);
        int n = 1 + r.nextInt(4);
        for (int i = 0; i < n; i++) {
            byte[] data = new byte[1 + r.nextInt(controllerSide ? MAX_CAPSULE : MAX_DATA)];
            r.nextBytes(data);
            int k = r.nextInt(3);
            if (controllerSide) {
                byte[] sqe = new byte[64];
                r.nextBytes(sqe);
                if (k == 0) {
                    w.capsuleCmd(new Sqe(sqe), r.nextBoolean() ? Unpooled.wrappedBuffer(data) : null);
                } else if (k == 1) {
                    w.h2cData(r.nextInt(65536), r.nextInt(65536), r.nextInt(1 << 20), Unpooled.wrappedBuffer(data),
                            r.nextBoolean());
                } else {
                    w.termReq(Pdu.T_H2C_TERM, r.nextInt(7), r.nextInt(), new byte[r.nextInt(129)]);
                }
            } else {
                if (k == 0) {
                    w.capsuleResp(new Cqe(r.nextInt(), r.nextInt(), r.nextInt(65536), r.nextInt(65536),
                            r.nextInt(65536), r.nextInt(32768)));
                } else if (k == 1) {
                    w.c2hData(r.nextInt(65536), r.nextInt(1 << 20), Unpooled.wrappedBuffer(data), true,
                            r.nextBoolean());
                } else {
                    w.r2t(r.nextInt(65536), r.nextInt(65536), r.nextInt(1 << 20), 1 + r.nextInt(1 << 20));
                }
            }
        }
        ByteBuf all = PduRoundTripTest.drain(ch);
        ch.finishAndReleaseAll();
        return all;
    }

    static void mutate(Random r, ByteBuf b) {
        int len = b.writerIndex();
        switch (r.nextInt(6)) {
            case 0: { // flip bits
                int flips = 1 + r.nextInt(4);
                for (int i = 0; i < flips && len > 0; i++) {
                    int at = r.nextInt(len);
                    b.setByte(at, b.getByte(at) ^ (1 << r.nextInt(8)));
                }
                break;
            }
            case 1: // truncate
                b.writerIndex(r.nextInt(len + 1));
                break;
            case 2: { // lie in a common header field of some PDU start (first one is at 128)
                int at = len > 136 && r.nextBoolean() ? 128 : 0;
                int field = r.nextInt(4);
                if (field == 0) {
                    b.setByte(at + 2, r.nextInt(256));
                } else if (field == 1) {
                    b.setByte(at + 3, r.nextInt(256));
                } else if (field == 2) {
                    b.setIntLE(at + 4, r.nextInt());
                } else {
                    b.setByte(at, r.nextInt(256));
                }
                break;
            }
            case 3: // random tail
                for (int i = 0, n = r.nextInt(64); i < n; i++) {
                    b.writeByte(r.nextInt(256));
                }
                break;
            case 4: { // overwrite a PSH field with extremes
                if (len > 160) {
                    int at = 128 + 8 + r.nextInt(16);
                    b.setIntLE(at, r.nextBoolean() ? -1 : Integer.MAX_VALUE);
                }
                break;
            }
            default: // random bytes everywhere after the IC PDU
                for (int i = Math.min(128, len); i < len; i++) {
                    if (r.nextInt(16) == 0) {
                        b.setByte(i, r.nextInt(256));
                    }
                }
        }
    }

    static void decodeAll(PduFrameDecoder dec, ByteBuf in, boolean hd, boolean dd) {
        boolean first = true;
        while (true) {
            Pdu p = dec.decodeOne(in);
            if (p == null) {
                return;
            }
            try {
                if (first) {
                    dec.digests(hd, dd);
                    first = false;
                }
                if (p instanceof Pdu.CapsuleCmd c && c.data() != null) {
                    assertTrue(c.data().readableBytes() <= MAX_CAPSULE, "capsule data over the limit");
                } else if (p instanceof Pdu.H2CData d) {
                    assertTrue(d.data().readableBytes() == d.datal() && d.datal() <= MAX_DATA, "H2CData length");
                } else if (p instanceof Pdu.C2HData d) {
                    assertTrue(d.data().readableBytes() == d.datal() && d.datal() <= MAX_DATA, "C2HData length");
                } else if (p instanceof Pdu.TermReq t) {
                    assertTrue(t.header().length <= 128, "TermReq data");
                }
            } finally {
                p.release();
            }
        }
    }

    @Test
    void decodersSurviveMutatedAndRandomInput() {
        Random r = new Random(SEED);
        long end = System.nanoTime() + BUDGET_NANOS;
        int iterations = 0;
        int rejected = 0;
        while (System.nanoTime() - end < 0 && iterations < 200_000) {
            iterations++;
            boolean controllerSide = r.nextBoolean();
            boolean hd = r.nextBoolean();
            boolean dd = r.nextBoolean();
            int pda = r.nextInt(4) == 0 ? r.nextInt(32) : 0;
            ByteBuf in;
            if (r.nextInt(8) == 0) {
                in = Unpooled.buffer();
                for (int i = 0, n = r.nextInt(512); i < n; i++) {
                    in.writeByte(r.nextInt(256));
                }
            } else {
                in = validStream(r, controllerSide, hd, dd, pda);
                mutate(r, in);
            }
            PduFrameDecoder dec = new PduFrameDecoder(controllerSide, MAX_CAPSULE, MAX_DATA);
            try {
                decodeAll(dec, in, hd, dd);
            } catch (PduException expected) {
                rejected++;
            } catch (RuntimeException | AssertionError e) {
                fail("seed " + SEED + " iteration " + iterations + ": " + e, e);
            } finally {
                in.release();
            }
        }
        assertTrue(iterations > 100, "only " + iterations + " iterations ran");
        assertTrue(rejected > iterations / 10, "mutations should be rejected often: " + rejected + "/" + iterations);
    }

    @Test
    void validStreamsDecodeCompletely() {
        Random r = new Random(SEED + 1);
        for (int i = 0; i < 500; i++) {
            boolean controllerSide = r.nextBoolean();
            boolean hd = r.nextBoolean();
            boolean dd = r.nextBoolean();
            ByteBuf in = validStream(r, controllerSide, hd, dd, r.nextInt(4));
            try {
                decodeAll(new PduFrameDecoder(controllerSide, MAX_CAPSULE, MAX_DATA), in, hd, dd);
                assertTrue(!in.isReadable(), "iteration " + i + " left " + in.readableBytes() + " bytes");
            } finally {
                in.release();
            }
        }
    }
}
