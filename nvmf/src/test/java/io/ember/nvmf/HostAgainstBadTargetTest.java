package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.tcp.Pdu;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Our host against a scripted target that answers the Connect and then misbehaves: the host must
 * fail with a clear message and, for malformed PDUs, tell the target why with an H2CTermReq.
 */
@ExtendWith(LeakCheck.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HostAgainstBadTargetTest {
  /** What the fake target sends instead of answering the first command after Connect. */
  interface Misbehaviour {
    byte[] reply(int cid);
  }

  /**
   * Runs a one-connection fake target; completes with the first PDU the host sends after the
   * misbehaviour.
   */
  static CompletableFuture<byte[]> fakeTarget(ServerSocket server, Misbehaviour m) {
    CompletableFuture<byte[]> after = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try (Socket s = server.accept()) {
                s.setSoTimeout(5000);
                DataInputStream in = new DataInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                readPdu(in); // ICReq
                ByteBuffer ic = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
                ic.put((byte) 1)
                    .put((byte) 0)
                    .put((byte) 128)
                    .put((byte) 0)
                    .putInt(128)
                    .putShort((short) 0)
                    .put((byte) 0)
                    .put((byte) 0)
                    .putInt(65536);
                out.write(ic.array());
                ByteBuffer connect = readPdu(in);
                out.write(resp(connect.getShort(10) & 0xFFFF, 1));
                ByteBuffer next = readPdu(in);
                out.write(m.reply(next.getShort(10) & 0xFFFF));
                out.flush();
                try {
                  ByteBuffer p = readPdu(in);
                  byte[] bytes = new byte[p.remaining()];
                  p.duplicate().get(bytes);
                  after.complete(bytes);
                } catch (Exception e) {
                  after.complete(null);
                }
              } catch (Exception e) {
                after.completeExceptionally(e);
              }
            });
    t.setDaemon(true);
    t.start();
    return after;
  }

  static ByteBuffer readPdu(DataInputStream in) throws Exception {
    byte[] ch = new byte[8];
    in.readFully(ch);
    int plen = ByteBuffer.wrap(ch).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
    byte[] all = new byte[plen];
    System.arraycopy(ch, 0, all, 0, 8);
    in.readFully(all, 8, plen - 8);
    return ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
  }

  static byte[] resp(int cid, int dw0) {
    ByteBuffer b = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 5)
        .put((byte) 0)
        .put((byte) 24)
        .put((byte) 0)
        .putInt(24)
        .putInt(dw0)
        .putInt(0)
        .putShort((short) 0)
        .putShort((short) 0)
        .putShort((short) cid)
        .putShort((short) 0);
    return b.array();
  }

  static NvmfException connectFails(ServerSocket server) {
    return assertThrows(
        NvmfException.class,
        () ->
            NvmfHost.connect(
                    "nvmf+tcp://127.0.0.1:" + server.getLocalPort() + "/nqn.2024-01.io.ember:fake",
                    NvmfHostOptions.builder()
                        .connectTimeout(Duration.ofSeconds(5))
                        .commandTimeout(Duration.ofSeconds(5))
                        .build())
                .close());
  }

  @Test
  void c2hTermReqIsReportedInWords() throws Exception {
    try (ServerSocket server = new ServerSocket(0)) {
      CompletableFuture<byte[]> after =
          fakeTarget(
              server,
              cid -> {
                ByteBuffer b = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
                b.put((byte) Pdu.T_C2H_TERM)
                    .put((byte) 0)
                    .put((byte) 24)
                    .put((byte) 0)
                    .putInt(24)
                    .putShort((short) Pdu.FES_INVALID_HEADER_FIELD)
                    .putInt(4);
                return b.array();
              });
      NvmfException e = connectFails(server);
      assertTrue(e.getMessage().contains("C2HTermReq Invalid PDU Header Field"), e.getMessage());
      after.get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void dataForAnUnknownCommandIsAProtocolError() throws Exception {
    try (ServerSocket server = new ServerSocket(0)) {
      CompletableFuture<byte[]> after =
          fakeTarget(
              server,
              cid -> {
                ByteBuffer b = ByteBuffer.allocate(24 + 8).order(ByteOrder.LITTLE_ENDIAN);
                b.put((byte) Pdu.T_C2H_DATA)
                    .put((byte) Pdu.F_LAST_PDU)
                    .put((byte) 24)
                    .put((byte) 24)
                    .putInt(32)
                    .putShort((short) (cid + 50))
                    .putShort((short) 0)
                    .putInt(0)
                    .putInt(8)
                    .putInt(0)
                    .putLong(1);
                return b.array();
              });
      NvmfException e = connectFails(server);
      assertTrue(e.getMessage().contains("protocol error from target"), e.getMessage());
      byte[] term = after.get(10, TimeUnit.SECONDS);
      assertEquals(Pdu.T_H2C_TERM, term[0], "host answers with H2CTermReq");
      assertEquals(
          Pdu.FES_INVALID_HEADER_FIELD,
          ByteBuffer.wrap(term).order(ByteOrder.LITTLE_ENDIAN).getShort(8));
    }
  }

  @Test
  void malformedPduGetsH2CTermReqWithTheFieldOffset() throws Exception {
    try (ServerSocket server = new ServerSocket(0)) {
      CompletableFuture<byte[]> after =
          fakeTarget(
              server,
              cid -> {
                byte[] r = resp(cid, 0);
                r[2] = 40; // HLEN of a CapsuleResp is 24
                return r;
              });
      NvmfException e = connectFails(server);
      assertTrue(e.getMessage().contains("HLEN 40"), e.getMessage());
      ByteBuffer term =
          ByteBuffer.wrap(after.get(10, TimeUnit.SECONDS)).order(ByteOrder.LITTLE_ENDIAN);
      assertEquals(Pdu.T_H2C_TERM, term.get(0));
      assertEquals(Pdu.FES_INVALID_HEADER_FIELD, term.getShort(8));
      assertEquals(2, term.getInt(10), "FEI points at HLEN");
    }
  }

  @Test
  void targetThatNeverAnswersTimesOutTheConnect() throws Exception {
    try (ServerSocket server = new ServerSocket(0)) {
      CompletableFuture<byte[]> after = fakeTarget(server, cid -> new byte[0]);
      NvmfException e =
          assertThrows(
              NvmfException.class,
              () ->
                  NvmfHost.connect(
                          "nvmf+tcp://127.0.0.1:"
                              + server.getLocalPort()
                              + "/nqn.2024-01.io.ember:fake",
                          NvmfHostOptions.builder().commandTimeout(Duration.ofMillis(500)).build())
                      .close());
      assertTrue(e instanceof NvmfTimeoutException, String.valueOf(e));
      // Bounded by the command timeout given, not by a default or none.
      assertTrue(e.getMessage().contains("500 ms"), e.getMessage());
      after.get(10, TimeUnit.SECONDS);
    }
  }
}
