package io.ember.nvmf.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.LeakCheck;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Sqe;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every PDU type through {@link PduWriter} and back through {@link PduFrameDecoder}, with and
 * without digests.
 */
@ExtendWith(LeakCheck.class)
class PduRoundTripTest {
  /** Everything written to {@code ch} so far, as one buffer (caller releases). */
  static ByteBuf drain(PduWriter w, EmbeddedChannel ch) {
    w.flush();
    ch.flushOutbound();
    ByteBuf all = Unpooled.buffer();
    ByteBuf b;
    while ((b = ch.readOutbound()) != null) {
      all.writeBytes(b);
      b.release();
    }
    return all;
  }

  static byte[] bytes(ByteBuf b) {
    return ByteBufUtil.getBytes(b);
  }

  @ParameterizedTest(name = "hdgst={0} ddgst={1} pda={2}")
  @CsvSource({
    "false,false,0",
    "true,false,0",
    "false,true,0",
    "true,true,0",
    "true,true,3",
    "false,false,7"
  })
  void hostToController(boolean hd, boolean dd, int cpda) {
    EmbeddedChannel ch = new EmbeddedChannel();
    PduWriter w = new PduWriter(ch);
    PduFrameDecoder dec = new PduFrameDecoder(true, 8192, 65536);
    w.icReq(5, hd, dd, 3);
    ByteBuf in = drain(w, ch);
    try {
      Pdu.IcReq ic = (Pdu.IcReq) dec.decodeOne(in);
      assertEquals(new Pdu.IcReq(0, 5, hd, dd, 3), ic);
      dec.digests(hd, dd);
      w.negotiated(hd, dd, cpda);
      Random r = new Random(1);
      byte[] sqeBytes = new byte[64];
      r.nextBytes(sqeBytes);
      byte[] data = new byte[3000];
      r.nextBytes(data);
      w.capsuleCmd(new Sqe(sqeBytes.clone()), Unpooled.wrappedBuffer(data));
      w.capsuleCmd(new Sqe(sqeBytes.clone()), null);
      w.h2cData(17, 33, 4096, Unpooled.wrappedBuffer(data, 0, 1000), true);
      w.termReq(Pdu.T_H2C_TERM, 2, 77, new byte[] {1, 2, 3});
      in.writeBytes(drain(w, ch).touch("written"));
      Pdu.CapsuleCmd c1 = (Pdu.CapsuleCmd) dec.decodeOne(in);
      assertArrayEquals(sqeBytes, c1.sqe().array());
      assertArrayEquals(data, bytes(c1.data()));
      assertTrue(c1.dataDigestOk());
      c1.release();
      Pdu.CapsuleCmd c2 = (Pdu.CapsuleCmd) dec.decodeOne(in);
      assertNull(c2.data());
      Pdu.H2CData h = (Pdu.H2CData) dec.decodeOne(in);
      assertEquals(17, h.cccid());
      assertEquals(33, h.ttag());
      assertEquals(4096, h.datao());
      assertEquals(1000, h.datal());
      assertTrue(h.last());
      assertArrayEquals(java.util.Arrays.copyOf(data, 1000), bytes(h.data()));
      h.release();
      Pdu.TermReq t = (Pdu.TermReq) dec.decodeOne(in);
      assertEquals(2, t.fes());
      assertEquals(77, t.fei());
      assertArrayEquals(new byte[] {1, 2, 3}, t.header());
      assertNull(dec.decodeOne(in));
      assertFalse(in.isReadable());
    } finally {
      in.release();
      ch.finishAndReleaseAll();
    }
  }

  @ParameterizedTest(name = "hdgst={0} ddgst={1} pda={2}")
  @CsvSource({"false,false,0", "true,true,0", "true,false,2", "false,true,31"})
  void controllerToHost(boolean hd, boolean dd, int hpda) {
    EmbeddedChannel ch = new EmbeddedChannel();
    PduWriter w = new PduWriter(ch);
    PduFrameDecoder dec = new PduFrameDecoder(false, 0, 1 << 20);
    w.icResp(0, hd, dd, 131072);
    ByteBuf in = drain(w, ch);
    try {
      assertEquals(new Pdu.IcResp(0, 0, hd, dd, 131072), dec.decodeOne(in));
      dec.digests(hd, dd);
      w.negotiated(hd, dd, hpda);
      byte[] data = new byte[5000];
      new Random(2).nextBytes(data);
      w.capsuleResp(new Cqe(0x12345678, 0x9abcdef0, 7, 1, 99, 0x4080));
      w.c2hData(99, 512, Unpooled.wrappedBuffer(data), true, true);
      w.r2t(3, 4, 8192, 16384);
      w.termReq(Pdu.T_C2H_TERM, 1, 3, new byte[128]);
      in.writeBytes(drain(w, ch));
      assertEquals(
          new Cqe(0x12345678, 0x9abcdef0, 7, 1, 99, 0x4080),
          ((Pdu.CapsuleResp) dec.decodeOne(in)).cqe());
      Pdu.C2HData d = (Pdu.C2HData) dec.decodeOne(in);
      assertEquals(99, d.cccid());
      assertEquals(512, d.datao());
      assertTrue(d.last() && d.success());
      assertArrayEquals(data, bytes(d.data()));
      d.release();
      assertEquals(new Pdu.R2T(3, 4, 8192, 16384), dec.decodeOne(in));
      Pdu.TermReq t = (Pdu.TermReq) dec.decodeOne(in);
      assertEquals(128, t.header().length);
      assertFalse(in.isReadable());
    } finally {
      in.release();
      ch.finishAndReleaseAll();
    }
  }

  /**
   * Far more than one gathering buffer's worth of headers between two flushes (about 40 KiB of
   * responses, R2Ts and data headers, a data digest after each datum), so PDUs and digests fall
   * across every boundary between buffers: all arrive whole and in the order written.
   */
  @ParameterizedTest(name = "hdgst={0} ddgst={1}")
  @CsvSource({"false,false", "true,true", "false,true", "true,false"})
  void manyPdusBetweenTwoFlushesArriveInOrder(boolean hd, boolean dd) {
    EmbeddedChannel ch = new EmbeddedChannel();
    PduWriter w = new PduWriter(ch);
    PduFrameDecoder dec = new PduFrameDecoder(false, 0, 1 << 20);
    w.icResp(0, hd, dd, 131072);
    ByteBuf in = drain(w, ch);
    try {
      dec.decodeOne(in);
      dec.digests(hd, dd);
      w.negotiated(hd, dd, 0);
      int n = 1200;
      byte[] data = new byte[97];
      for (int i = 0; i < n; i++) {
        switch (i % 3) {
          case 0 -> w.capsuleResp(new Cqe(i, 0, i, 1, i, 0));
          case 1 -> w.r2t(i, i + 1, i * 8, i + 16);
          default -> {
            Arrays.fill(data, (byte) i);
            w.c2hData(i, i, Unpooled.wrappedBuffer(data.clone(), 0, 1 + i % 97), true, false);
          }
        }
      }
      in.writeBytes(drain(w, ch));
      for (int i = 0; i < n; i++) {
        Pdu p = dec.decodeOne(in);
        switch (i % 3) {
          case 0 -> assertEquals(new Cqe(i, 0, i, 1, i, 0), ((Pdu.CapsuleResp) p).cqe(), "#" + i);
          case 1 -> assertEquals(new Pdu.R2T(i, i + 1, i * 8, i + 16), p, "#" + i);
          default -> {
            Pdu.C2HData d = (Pdu.C2HData) p;
            byte[] want = new byte[1 + i % 97];
            Arrays.fill(want, (byte) i);
            assertEquals(i, d.cccid(), "#" + i);
            assertTrue(d.dataDigestOk(), "#" + i + "'s data digest");
            assertArrayEquals(want, bytes(d.data()), "#" + i + "'s data");
            d.release();
          }
        }
      }
      assertFalse(in.isReadable(), "nothing after the last PDU");
    } finally {
      in.release();
      ch.finishAndReleaseAll();
    }
  }

  @ParameterizedTest(name = "corrupt byte {0}")
  @CsvSource({"80", "4000"})
  void dataDigestMismatchIsFlaggedNotFatal(int corruptAt) {
    EmbeddedChannel ch = new EmbeddedChannel();
    PduWriter w = new PduWriter(ch);
    PduFrameDecoder dec = new PduFrameDecoder(true, 8192, 65536);
    w.icReq(0, false, true, 0);
    ByteBuf in = drain(w, ch);
    try {
      dec.decodeOne(in);
      dec.digests(false, true);
      w.negotiated(false, true, 0);
      w.capsuleCmd(new Sqe(), Unpooled.wrappedBuffer(new byte[4096]));
      in.writeBytes(drain(w, ch));
      in.setByte(in.readerIndex() + corruptAt, in.getByte(in.readerIndex() + corruptAt) ^ 0x10);
      Pdu.CapsuleCmd c = (Pdu.CapsuleCmd) dec.decodeOne(in);
      assertFalse(c.dataDigestOk());
      c.release();
    } finally {
      in.release();
      ch.finishAndReleaseAll();
    }
  }

  @ParameterizedTest(name = "header byte {0}")
  @CsvSource({"0", "9", "40", "71"})
  void headerDigestMismatchIsFatal(int corruptAt) {
    EmbeddedChannel ch = new EmbeddedChannel();
    PduWriter w = new PduWriter(ch);
    PduFrameDecoder dec = new PduFrameDecoder(true, 8192, 65536);
    w.icReq(0, true, false, 0);
    ByteBuf in = drain(w, ch);
    try {
      dec.decodeOne(in);
      dec.digests(true, false);
      w.negotiated(true, false, 0);
      w.capsuleCmd(new Sqe(), null);
      in.writeBytes(drain(w, ch));
      int at = in.readerIndex() + corruptAt;
      in.setByte(at, in.getByte(at) ^ (corruptAt == 0 ? 0 : 0x01));
      if (corruptAt == 0) {
        // Corrupt the digest itself instead of the type byte.
        in.setByte(in.readerIndex() + 72, in.getByte(in.readerIndex() + 72) ^ 0x01);
      }
      PduException e = assertThrows(PduException.class, () -> dec.decodeOne(in));
      assertEquals(Pdu.FES_HEADER_DIGEST, e.fes());
      assertInstanceOf(byte[].class, e.header());
    } finally {
      in.release();
      ch.finishAndReleaseAll();
    }
  }
}
