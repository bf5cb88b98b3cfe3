package io.ember.nvmf.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ember.nvmf.LeakCheck;
import io.ember.nvmf.RawHost;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Seeded random fuzzing for a bounded time. The PDU decoders get random byte streams and mutations
 * of valid PDUs: they may accept, wait for more bytes, or throw {@link PduException}; any other
 * exception, an unreleased buffer, or a PDU whose data exceeds the negotiated limits is a bug. The
 * embedded target gets well-framed I/O commands with fields from {@link #LBA_DICTIONARY}: every one
 * must be answered, on a connection that stays open, with LBA Out of Range exactly when its blocks
 * are not all in the namespace. Failures print the seed and iteration to reproduce.
 */
@ExtendWith(LeakCheck.class)
class PduFuzzTest {
  static final long SEED = 0x5EED_E3BE_2026L;
  static final long BUDGET_NANOS = TimeUnit.SECONDS.toNanos(3);
  static final int MAX_CAPSULE = 8192;
  static final int MAX_DATA = 16384;

  /**
   * SLBA, NLB and DSM range values that broke range checks before or sit on an edge: SLBAs near
   * 2^63 and 2^64 (SLBA is unsigned on the wire, a Java long is not), lengths that make SLBA + NLB
   * wrap, the edges of the fuzzed namespaces (1024 and 8192 blocks) and of the NLB and DSM length
   * fields.
   */
  static final long[] LBA_DICTIONARY = {
    0,
    1,
    1023,
    1024,
    1025,
    8191,
    8192,
    8193,
    0xFFFF,
    0x10000,
    0xFFFFFFFFL,
    0x100000000L,
    Long.MAX_VALUE,
    Long.MAX_VALUE - 1,
    Long.MAX_VALUE - 0xFFFF,
    Long.MAX_VALUE - 0xFFFFFFFEL,
    Long.MIN_VALUE,
    Long.MIN_VALUE + 1,
    -1L,
    -2L,
    -0x10000L,
    -0xFFFFFFFFL,
  };

  static long lbaValue(Random r) {
    return r.nextInt(4) == 0 ? r.nextLong() : LBA_DICTIONARY[r.nextInt(LBA_DICTIONARY.length)];
  }

  /**
   * A random SQE; half of them shaped like an LBA-taking I/O command with dictionary SLBA and NLB.
   */
  static Sqe fuzzSqe(Random r) {
    byte[] b = new byte[64];
    r.nextBytes(b);
    Sqe sqe = new Sqe(b);
    if (r.nextBoolean()) {
      int[] ops = {Nvme.IO_READ, Nvme.IO_WRITE, Nvme.IO_WRITE_ZEROES, Nvme.IO_DSM};
      long slba = lbaValue(r);
      sqe.opcode(ops[r.nextInt(ops.length)])
          .cdw(10, (int) slba)
          .cdw(11, (int) (slba >>> 32))
          .cdw(12, (int) lbaValue(r));
    }
    return sqe;
  }

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
        if (k == 0) {
          w.capsuleCmd(fuzzSqe(r), r.nextBoolean() ? Unpooled.wrappedBuffer(data) : null);
        } else if (k == 1) {
          w.h2cData(
              r.nextInt(65536),
              r.nextInt(65536),
              r.nextInt(1 << 20),
              Unpooled.wrappedBuffer(data),
              r.nextBoolean());
        } else {
          w.termReq(Pdu.T_H2C_TERM, r.nextInt(7), r.nextInt(), new byte[r.nextInt(129)]);
        }
      } else {
        if (k == 0) {
          w.capsuleResp(
              new Cqe(
                  r.nextInt(),
                  r.nextInt(),
                  r.nextInt(65536),
                  r.nextInt(65536),
                  r.nextInt(65536),
                  r.nextInt(32768)));
        } else if (k == 1) {
          w.c2hData(
              r.nextInt(65536),
              r.nextInt(1 << 20),
              Unpooled.wrappedBuffer(data),
              true,
              r.nextBoolean());
        } else {
          w.r2t(r.nextInt(65536), r.nextInt(65536), r.nextInt(1 << 20), 1 + r.nextInt(1 << 20));
        }
      }
    }
    ByteBuf all = PduRoundTripTest.drain(w, ch);
    ch.finishAndReleaseAll();
    return all;
  }

  static void mutate(Random r, ByteBuf b) {
    int len = b.writerIndex();
    switch (r.nextInt(7)) {
      case 0:
        { // flip bits
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
      case 2:
        { // lie in a common header field of some PDU start (first one is at 128)
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
      case 4:
        { // overwrite a PSH field with extremes
          if (len > 160) {
            int at = 128 + 8 + r.nextInt(16);
            b.setIntLE(at, r.nextBoolean() ? -1 : Integer.MAX_VALUE);
          }
          break;
        }
      case 5:
        { // a dictionary value anywhere in the first PDU's header (SLBA of a capsule: byte 48)
          if (len > 200) {
            int at = 128 + 8 + r.nextInt(57);
            b.setLongLE(at, lbaValue(r));
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
          assertTrue(
              d.data().readableBytes() == d.datal() && d.datal() <= MAX_DATA, "H2CData length");
        } else if (p instanceof Pdu.C2HData d) {
          assertTrue(
              d.data().readableBytes() == d.datal() && d.datal() <= MAX_DATA, "C2HData length");
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
    assertTrue(
        rejected > iterations / 10,
        "mutations should be rejected often: " + rejected + "/" + iterations);
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

  // ------------------------------------------------------------------------------------ the target

  @TempDir Path dir;

  /**
   * Whether {@code nlb} blocks from {@code slba} fit in {@code nsze} blocks, in exact arithmetic:
   * the oracle the target's overflow-safe check is held to.
   */
  static boolean fits(long slba, long nlb, long nsze) {
    BigInteger end = new BigInteger(Long.toUnsignedString(slba)).add(BigInteger.valueOf(nlb));
    return end.compareTo(BigInteger.valueOf(nsze)) <= 0;
  }

  @Test
  void targetAnswersEveryFuzzedIoCommand() throws Exception {
    String nqn = "nqn.2024-01.io.ember:fuzz";
    Subsystem s = new Subsystem(nqn);
    s.addNamespace(new MemoryNamespace(4L << 20, 512));
    s.addNamespace(new FileNamespace(dir.resolve("ns2.img"), 4L << 20, 4096, true));
    Namespace[] ns = {null, s.namespaces().get(1), s.namespaces().get(2)};
    long seed = SEED + 2;
    Random r = new Random(seed);
    int iterations = 0;
    int outOfRange = 0;
    try (NvmfTarget t = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
        RawHost admin = new RawHost("127.0.0.1", t.port());
        RawHost io = new RawHost("127.0.0.1", t.port())) {
      admin.handshake();
      RawHost.Frame c = admin.connect(nqn, "nqn.2024-01.io.ember:fuzzer", 0, 0xFFFF, 0);
      assertEquals(0, RawHost.responseStatus(c), "admin Connect");
      assertEquals(0, admin.enable(), "CC.EN");
      io.handshake();
      assertEquals(
          0,
          RawHost.responseStatus(io.connect(nqn, "nqn.2024-01.io.ember:fuzzer", 1, c.u16(8), 0)),
          "I/O Connect");
      // A floor of commands however slow the machine, then as many as the time budget allows.
      long end = System.nanoTime() + BUDGET_NANOS;
      while (iterations < 500 || (System.nanoTime() - end < 0 && iterations < 20_000)) {
        iterations++;
        int nsid = r.nextInt(16) == 0 ? r.nextInt() : 1 + r.nextInt(2);
        int bs = nsid == 1 ? 512 : 4096;
        int kind = r.nextInt(5);
        long slba = r.nextInt(4) == 0 ? r.nextInt(9000) : lbaValue(r);
        int nlb = 1 + (r.nextInt(4) == 0 ? r.nextInt(64) : (int) lbaValue(r) & 0xFFFF);
        Sqe sqe =
            new Sqe()
                .flags(Nvme.PSDT_SGL)
                .cid(iterations & 0xFFFF)
                .nsid(nsid)
                .cdw(10, (int) slba)
                .cdw(11, (int) (slba >>> 32))
                .cdw(12, nlb - 1);
        byte[] data = null;
        String what;
        boolean inside;
        if (kind == 0 || kind == 1) {
          int len = nlb * bs;
          sqe.opcode(kind == 0 ? Nvme.IO_READ : Nvme.IO_WRITE);
          if (kind == 1 && len <= 8192) {
            data = new byte[len];
            sqe.sgl(0, len, Nvme.SGL_INCAPSULE);
          } else {
            sqe.sgl(0, len, Nvme.SGL_TRANSPORT);
          }
          what =
              (kind == 0 ? "Read" : "Write")
                  + " slba "
                  + Long.toUnsignedString(slba)
                  + " nlb "
                  + nlb;
          inside = nsid > 2 || nsid < 1 || fits(slba, nlb, ns[nsid].blockCount());
        } else if (kind == 2) {
          sqe.opcode(Nvme.IO_WRITE_ZEROES).sgl(0, 0, Nvme.SGL_TRANSPORT);
          what = "Write Zeroes slba " + Long.toUnsignedString(slba) + " nlb " + nlb;
          inside = nsid > 2 || nsid < 1 || fits(slba, nlb, ns[nsid].blockCount());
        } else if (kind == 3) {
          int ranges = 1 + r.nextInt(4);
          ByteBuffer d = ByteBuffer.allocate(16 * ranges).order(ByteOrder.LITTLE_ENDIAN);
          StringBuilder sb = new StringBuilder("Deallocate");
          inside = true;
          for (int i = 0; i < ranges; i++) {
            long start = r.nextInt(4) == 0 ? r.nextInt(9000) : lbaValue(r);
            long count = (r.nextInt(4) == 0 ? r.nextInt(64) : lbaValue(r)) & 0xFFFFFFFFL;
            d.putInt(0).putInt((int) count).putLong(start);
            sb.append(" [")
                .append(Long.toUnsignedString(start))
                .append(" +")
                .append(count)
                .append(']');
            inside &= nsid > 2 || nsid < 1 || fits(start, count, ns[nsid].blockCount());
          }
          data = d.array();
          sqe.opcode(Nvme.IO_DSM)
              .cdw(10, ranges - 1)
              .cdw(11, 1 << 2)
              .sgl(0, data.length, Nvme.SGL_INCAPSULE);
          what = sb.toString();
        } else {
          sqe.opcode(r.nextInt(256)).sgl(0, 0, Nvme.SGL_TRANSPORT);
          what = String.format("opcode 0x%02x", sqe.opcode());
          inside = true;
        }
        String where =
            "seed "
                + seed
                + " iteration "
                + iterations
                + ": "
                + what
                + " nsid "
                + Integer.toUnsignedString(nsid);
        int status;
        try {
          status = io.command(sqe, data);
        } catch (IOException e) {
          status = fail(where + " got no answer: " + e);
        }
        boolean lbaRange = (status & 0x7FF) == Nvme.SC_LBA_RANGE;
        if (!inside) {
          outOfRange++;
          assertTrue(
              lbaRange,
              where + ": status 0x" + Integer.toHexString(status) + ", not LBA Out of Range");
        } else if (kind < 4) {
          assertFalse(lbaRange, where + ": LBA Out of Range for blocks inside the namespace");
        }
      }
    }
    assertTrue(
        outOfRange > iterations / 10,
        "few commands out of range: " + outOfRange + "/" + iterations);
  }
}
