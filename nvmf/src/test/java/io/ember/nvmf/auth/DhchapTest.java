package io.ember.nvmf.auth;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.NvmfException;
import io.ember.nvmf.host.ControllerSetup.AdminPort;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.UnaryOperator;
import javax.crypto.spec.DHPrivateKeySpec;
import javax.crypto.spec.DHPublicKeySpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * DH-HMAC-CHAP's pieces against reference values, and the host's and controller's exchanges against
 * each other. The reference values were computed with Python's hmac and hashlib following Linux's
 * algorithm (drivers/nvme/common/auth.c, host/auth.c, target/auth.c), not with this code; the
 * secret V1 is the example of nvme-cli's documentation. The interoperability proof with Linux's own
 * host and target is {@code KernelDhchapTest}.
 */
class DhchapTest {
  private static final HexFormat HEX = HexFormat.of();
  static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
  static final String SUB = "nqn.2024-01.io.ember:test-subsys";
  private static final String HOST_KEY =
      "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  private static final String CTRL_KEY =
      "DHHC-1:01:QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl9YjiZe:";

  private static byte[] hex(String s) {
    return HEX.parseHex(s);
  }

  private static byte[] fill(int n, int b) {
    byte[] a = new byte[n];
    Arrays.fill(a, (byte) b);
    return a;
  }

  @Test
  void secretsParseAndEncodeAsNvmeCliWritesThem() {
    DhchapSecret doc =
        DhchapSecret.parse("DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:");
    assertEquals(null, doc.transformHash());
    assertArrayEquals(
        hex("89aeb31a874eaf84841b46736b0dfdf2ba58d30aa2a545a3e235a3521e07594c"),
        doc.transformed("any nqn"));
    assertEquals(HOST_KEY, DhchapSecret.parse(HOST_KEY).encoded());
    assertEquals(HOST_KEY, DhchapSecret.parse("  " + HOST_KEY + "\n").encoded());
    String xx3 =
        "DHHC-1:03:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P4zODhA=:";
    assertEquals(xx3, DhchapSecret.parse(xx3).encoded());
    assertEquals(DhchapHash.SHA512, DhchapSecret.parse(xx3).transformHash());
    assertEquals(64, DhchapSecret.parse(xx3).length());
    String xx2 =
        "DHHC-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:";
    assertEquals(xx2, DhchapSecret.parse(xx2).encoded());
    assertFalse(DhchapSecret.parse(HOST_KEY).toString().contains("AAEC"));
    DhchapSecret fresh = DhchapSecret.generate(DhchapHash.SHA384, 48, new SecureRandom());
    assertTrue(DhchapSecret.parse(fresh.encoded()).sameAs(fresh));
  }

  @Test
  void keysAreBoundToTheirNqn() {
    assertArrayEquals(
        hex("6c7b81cb2a746f74454b1d7140f3153b51ca99459fcef7a86a17f27695b87cd8"),
        DhchapSecret.parse(HOST_KEY).transformed(HOST));
    assertArrayEquals(
        hex("56b14dc483c4e33c1d8322b370630cbf29018b30233e43ccded47b134b3a1495"),
        DhchapSecret.parse(CTRL_KEY).transformed(SUB));
  }

  @Test
  void badSecretsAreRefusedWithoutShowingThem() {
    String[] bad = {
      "",
      "DHHC-2:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
      "DHHC-1:04:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
      "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", // CRC off by one
      "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd:", // too short
      "DHHC-1:01:!!!!:"
    };
    for (String s : bad) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> DhchapSecret.parse(s), s);
      assertFalse(e.getMessage().contains("AAEC"), e.getMessage());
    }
    assertThrows(
        IllegalArgumentException.class, () -> DhchapSecret.generate(null, 40, new SecureRandom()));
  }

  @Test
  void nullGroupResponsesMatchTheReference() {
    byte[] kh = DhchapSecret.parse(HOST_KEY).transformed(HOST);
    byte[] kc = DhchapSecret.parse(CTRL_KEY).transformed(SUB);
    assertArrayEquals(
        hex("607c0826938737f0ce085474baf3ef48e511788d7ef69194309ac02f878638b2"),
        Dhchap.hostResponse(DhchapHash.SHA256, kh, fill(32, 0xa5), 0x01020304, 1, HOST, SUB, null));
    assertArrayEquals(
        hex("6bf004c90ddb6ac3b8db23370385930acd713d8f1abdd2b68b6890c84c837b1a"),
        Dhchap.controllerResponse(
            DhchapHash.SHA256, kc, fill(32, 0x5a), 0x0a0b0c0d, 1, SUB, HOST, null));
    // SHA-512 negotiated with a key transformed by SHA-256: the key's own hash binds it.
    assertArrayEquals(
        hex(
            "fc5daa620b273a52506eaf61d4cf8b54e2984e7da66a043b83596756bc1049e4"
                + "e5c09ce40e19a517d516b387c4ee085722ae2f1cdfdb9067453b2370022c64c7"),
        Dhchap.hostResponse(DhchapHash.SHA512, kh, fill(64, 0xa5), 0x01020304, 1, HOST, SUB, null));
  }

  @Test
  void ffdhe2048ResponsesMatchTheReference() throws Exception {
    DhGroup g = DhGroup.FFDHE2048;
    KeyPair host = fixedPair(g, new BigInteger("1234567890abcdef1234567890abcdef", 16));
    KeyPair ctrl = fixedPair(g, new BigInteger("fedcba0987654321fedcba0987654321", 16));
    byte[] yHost = g.publicValue(host);
    assertEquals(256, yHost.length);
    assertEquals("903234f8e6a5f76d", HEX.formatHex(yHost, 0, 8));
    assertEquals(
        "01fada54fb79d1b32365bb5c114c38dd09458b0eab7b54892ffa0c4534361a3f",
        HEX.formatHex(DhchapHash.SHA256.digest(yHost)));
    assertEquals(
        "2055f0fd56fd7889feeab17d83f31227c7ed52d4ab40bc444ee45a69bbd00e7a",
        HEX.formatHex(DhchapHash.SHA256.digest(g.publicValue(ctrl))));
    byte[] z = g.agree(host, g.publicValue(ctrl));
    assertArrayEquals(z, g.agree(ctrl, yHost));
    assertEquals(256, z.length);
    assertEquals("6499a29d5967ba5d", HEX.formatHex(z, 0, 8));
    byte[] kh = DhchapSecret.parse(HOST_KEY).transformed(HOST);
    byte[] kc = DhchapSecret.parse(CTRL_KEY).transformed(SUB);
    assertArrayEquals(
        hex("0a0d61886802027b203f01f324ebce63a38081dc99b54f03c721c7a7e0695ee1"),
        Dhchap.hostResponse(DhchapHash.SHA256, kh, fill(32, 0xa5), 0x01020304, 1, HOST, SUB, z));
    assertArrayEquals(
        hex("ad0b15e6f0501be5074b83d489a2d80c45133069bfdc30c02bcbaac5e5b6a62f"),
        Dhchap.controllerResponse(
            DhchapHash.SHA256, kc, fill(32, 0x5a), 0x0a0b0c0d, 1, SUB, HOST, z));
  }

  @Test
  void invalidPublicValuesAreRefused() {
    DhGroup g = DhGroup.FFDHE2048;
    KeyPair own = g.generate(new SecureRandom());
    BigInteger p = g.prime();
    for (BigInteger y : List.of(BigInteger.ZERO, BigInteger.ONE, p.subtract(BigInteger.ONE), p)) {
      assertThrows(
          java.security.GeneralSecurityException.class,
          () -> g.agree(own, DhGroup.fixed(y, 256)),
          y.bitLength() + " bits");
    }
  }

  @Test
  void primesAreRfc7919s() {
    String[] sha = {
      "9cd3b7f336872f46c09428d1bbc19877a4d440512cda8d1c1cf0cd6e33698966",
      "0eaf67db3a839156d5013494a5318a772b5697d270d721f37f092efc69ea5a17",
      "4648414224ac881b3d0dc59b466f96d06a558278776807797ecf1f66ff397b3e",
      "227ac9066b3ddd9e193670cda2388fa884f65ba0cf98b742d1fe77a6687c79c7",
      "770b14efaf6f049929c523113b3fa99a8d11dab1b18af3609590122075d19833"
    };
    for (int i = 1; i <= 5; i++) {
      DhGroup g = DhGroup.byId(i);
      assertEquals(g.valueBytes() * 8, g.prime().bitLength());
      assertEquals(
          sha[i - 1],
          HEX.formatHex(DhchapHash.SHA256.digest(DhGroup.fixed(g.prime(), g.valueBytes()))));
    }
  }

  @Test
  void messagesAreLaidOutAsLinuxLaysThemOut() throws Exception {
    assertEquals(
        "000000000000000101000306010203000000000000000000000000000000000000000000000000000000000102030405"
            + "000000000000000000000000000000000000000000000000",
        HEX.formatHex(
            new Dhchap.Negotiate(0, 0, List.of(1, 2, 3), List.of(0, 1, 2, 3, 4, 5)).encode()));
    Dhchap.Negotiate n =
        Dhchap.Negotiate.parse(new Dhchap.Negotiate(7, 0, List.of(2), List.of(0, 5)).encode());
    assertEquals(List.of(2), n.hashIds());
    assertEquals(List.of(0, 5), n.groupIds());
    assertEquals(7, n.tid());
    assertEquals(
        "01010000010020000100000004030201" + "a5".repeat(32),
        HEX.formatHex(
            new Dhchap.Challenge(1, 1, 32, 0, 0x01020304, fill(32, 0xa5), new byte[0]).encode()));
    byte[] r1 = hex("607c0826938737f0ce085474baf3ef48e511788d7ef69194309ac02f878638b2");
    assertEquals(
        "0102000001002000010000000d0c0b0a" + HEX.formatHex(r1) + "5a".repeat(32),
        HEX.formatHex(
            new Dhchap.Reply(1, 32, true, 0x0a0b0c0d, r1, fill(32, 0x5a), new byte[0]).encode()));
    assertEquals(
        "01030000010020000100000000000000" + "11".repeat(32),
        HEX.formatHex(new Dhchap.Success1(1, 32, fill(32, 0x11)).encode()));
    assertEquals("01040000010000000000000000000000", HEX.formatHex(Dhchap.success2(1)));
    assertEquals("00f1000001000101", HEX.formatHex(Dhchap.failure(true, 1, Dhchap.FAILED)));
    assertThrows(DhchapException.class, () -> Dhchap.Negotiate.parse(new byte[20]));
    byte[] truncated =
        Arrays.copyOf(new Dhchap.Challenge(1, 1, 32, 0, 5, fill(32, 1), new byte[0]).encode(), 30);
    assertThrows(DhchapException.class, () -> Dhchap.Challenge.parse(truncated));
  }

  // ------------------------------------------------------------------------------------------
  // the two sides against each other, through the commands a queue would carry

  /** A queue whose AUTH commands go straight to a controller session, optionally tampered with. */
  static class Wire implements AdminPort {
    final DhchapController ctrl;
    UnaryOperator<byte[]> toController = UnaryOperator.identity();
    UnaryOperator<byte[]> toHost = UnaryOperator.identity();

    Wire(DhchapController ctrl) {
      this.ctrl = ctrl;
    }

    @Override
    public Cqe call(io.ember.nvmf.spec.Sqe sqe, ByteBuffer data, boolean dataOut)
        throws NvmfException {
      assertEquals(Nvme.FABRICS, sqe.opcode());
      assertEquals(Nvme.AUTH_SECP, sqe.byteAt(43) & 0xFF);
      int length = sqe.intAt(44);
      if (sqe.fctype() == Nvme.FCTYPE_AUTH_SEND) {
        assertTrue(dataOut);
        byte[] m = new byte[length];
        data.get(0, m);
        ctrl.send(toController.apply(m));
      } else {
        assertEquals(Nvme.FCTYPE_AUTH_RECEIVE, sqe.fctype());
        byte[] m = toHost.apply(ctrl.receive(length));
        data.put(0, m, 0, Math.min(m.length, data.capacity()));
      }
      return new Cqe(0, 0, 0, 0, sqe.cid(), 0);
    }
  }

  private static DhchapController controller(String ctrlKey, List<DhchapHash> h, List<DhGroup> g) {
    return new DhchapController(
        HOST,
        SUB,
        DhchapSecret.parse(HOST_KEY),
        ctrlKey == null ? null : DhchapSecret.parse(ctrlKey),
        h,
        g);
  }

  @ParameterizedTest
  @EnumSource(DhchapHash.class)
  void bothSidesAgreeForEveryHash(DhchapHash h) throws Exception {
    for (DhGroup g : List.of(DhGroup.NULL, DhGroup.FFDHE2048, DhGroup.FFDHE3072)) {
      DhchapController ctrl = controller(CTRL_KEY, List.of(h), List.of(g));
      new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), DhchapSecret.parse(CTRL_KEY))
          .authenticate(new Wire(ctrl), "test", 3);
      assertTrue(ctrl.authenticated(), h + "/" + g);
      assertEquals(h.label() + "/" + g.label(), ctrl.negotiated());
      DhchapController uni = controller(null, List.of(h), List.of(g));
      new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
          .authenticate(new Wire(uni), "test", 4);
      assertTrue(uni.authenticated(), "unidirectional " + h + "/" + g);
    }
  }

  @Test
  void theLargerGroupsWorkToo() throws Exception {
    for (DhGroup g : List.of(DhGroup.FFDHE4096, DhGroup.FFDHE6144, DhGroup.FFDHE8192)) {
      DhchapController ctrl = controller(CTRL_KEY, List.of(DhchapHash.SHA512), List.of(g));
      new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), DhchapSecret.parse(CTRL_KEY))
          .authenticate(new Wire(ctrl), "test", 1);
      assertTrue(ctrl.authenticated(), g.label());
    }
  }

  @Test
  void aWrongHostSecretIsRefused() {
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, new SecureRandom());
    DhchapException e =
        assertThrows(
            DhchapException.class,
            () -> new DhchapHost(HOST, SUB, wrong, null).authenticate(new Wire(ctrl), "qid 0", 1));
    assertEquals(Dhchap.FAILED, e.reason());
    assertTrue(e.getMessage().contains("refused this host's response"), e.getMessage());
    assertFalse(ctrl.authenticated());
    assertTrue(ctrl.failed());
    // The same key bound to another host NQN does not pass either.
    DhchapController other = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    assertThrows(
        DhchapException.class,
        () ->
            new DhchapHost(HOST + "x", SUB, DhchapSecret.parse(HOST_KEY), null)
                .authenticate(new Wire(other), "qid 0", 1));
    assertFalse(other.authenticated());
  }

  @Test
  void aControllerThatClosesInsteadOfRefusingIsReportedAsARefusal() {
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, new SecureRandom());
    // As Linux's target may: the association's teardown overtakes the Failure1 it queued.
    Wire closing =
        new Wire(ctrl) {
          int sends;

          @Override
          public Cqe call(io.ember.nvmf.spec.Sqe sqe, ByteBuffer data, boolean dataOut)
              throws NvmfException {
            if (sqe.fctype() == Nvme.FCTYPE_AUTH_SEND) {
              sends++;
            } else if (sends == 2) { // the answer to the host's response (Negotiate, Reply)
              throw new NvmfException("connection to test qid 0 closed by the target");
            }
            return super.call(sqe, data, dataOut);
          }
        };
    DhchapException e =
        assertThrows(
            DhchapException.class,
            () -> new DhchapHost(HOST, SUB, wrong, null).authenticate(closing, "qid 0", 1));
    assertEquals(Dhchap.FAILED, e.reason());
    assertTrue(
        e.getMessage().contains("closed the connection instead of answering"), e.getMessage());
    assertTrue(e.getMessage().contains("check the host secret"), e.getMessage());
    // A controller that goes away before the response was judged is not called a refusal.
    DhchapController early = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    Wire gone =
        new Wire(early) {
          @Override
          public Cqe call(io.ember.nvmf.spec.Sqe sqe, ByteBuffer data, boolean dataOut)
              throws NvmfException {
            throw new NvmfException("connection to test qid 0 closed by the target");
          }
        };
    NvmfException plain =
        assertThrows(
            NvmfException.class,
            () ->
                new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
                    .authenticate(gone, "qid 0", 1));
    assertFalse(plain instanceof DhchapException, plain.toString());
  }

  @Test
  void aControllerThatAnswersWronglyIsRefusedInBidirectionalMode() {
    // The controller holds a different controller secret: it cannot answer the host's challenge.
    String impostor = DhchapSecret.generate(DhchapHash.SHA256, 32, new SecureRandom()).encoded();
    DhchapController ctrl =
        controller(impostor, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    DhchapException e =
        assertThrows(
            DhchapException.class,
            () ->
                new DhchapHost(
                        HOST, SUB, DhchapSecret.parse(HOST_KEY), DhchapSecret.parse(CTRL_KEY))
                    .authenticate(new Wire(ctrl), "qid 0", 1));
    assertTrue(e.getMessage().contains("did not prove"), e.getMessage());
    // The host told the controller (Failure2), which must not count the queue as authenticated.
    assertFalse(ctrl.authenticated());
    assertTrue(ctrl.failed());

    // A controller that leaves R2 out when asked for it is refused the same way.
    DhchapController silent =
        controller(CTRL_KEY, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    Wire w = new Wire(silent);
    w.toHost = m -> Dhchap.id(m) == Dhchap.ID_SUCCESS1 ? Arrays.copyOf(stripR2(m), 16) : m;
    assertThrows(
        DhchapException.class,
        () ->
            new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), DhchapSecret.parse(CTRL_KEY))
                .authenticate(w, "qid 0", 1));
    assertFalse(silent.authenticated());

    // A host asking for bidirectional authentication of a controller that has no controller secret.
    DhchapController none = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    assertThrows(
        DhchapException.class,
        () ->
            new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), DhchapSecret.parse(CTRL_KEY))
                .authenticate(new Wire(none), "qid 0", 1));
  }

  private static byte[] stripR2(byte[] success1) {
    byte[] m = success1.clone();
    m[8] = 0;
    return m;
  }

  @Test
  void noCommonHashOrGroupIsRefusedWithItsReason() {
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    Wire w = new Wire(ctrl);
    // A host offering only SHA-512 (the host offers all; the wire narrows its offer).
    w.toController =
        m -> {
          if (Dhchap.id(m) == Dhchap.ID_NEGOTIATE && Dhchap.type(m) == Dhchap.TYPE_COMMON) {
            return new Dhchap.Negotiate(Dhchap.tid(m), 0, List.of(3), List.of(0, 1)).encode();
          }
          return m;
        };
    DhchapException e =
        assertThrows(
            DhchapException.class,
            () ->
                new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
                    .authenticate(w, "qid 0", 1));
    assertEquals(Dhchap.HASH_UNUSABLE, e.reason());
    DhchapController g = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE8192));
    Wire w2 = new Wire(g);
    w2.toController =
        m ->
            Dhchap.id(m) == Dhchap.ID_NEGOTIATE && Dhchap.type(m) == Dhchap.TYPE_COMMON
                ? new Dhchap.Negotiate(Dhchap.tid(m), 0, List.of(1), List.of(0, 1)).encode()
                : m;
    assertEquals(
        Dhchap.DHGROUP_UNUSABLE,
        assertThrows(
                DhchapException.class,
                () ->
                    new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
                        .authenticate(w2, "qid 0", 1))
            .reason());
  }

  @Test
  void replayedTruncatedOrOutOfOrderMessagesAreRefused() throws Exception {
    // Record a good exchange's reply, then replay it against a fresh challenge.
    DhchapController first = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    Wire w = new Wire(first);
    byte[][] reply = new byte[1][];
    w.toController =
        m -> {
          if (Dhchap.id(m) == Dhchap.ID_REPLY) {
            reply[0] = m.clone();
          }
          return m;
        };
    new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null).authenticate(w, "qid 0", 9);
    assertTrue(first.authenticated());
    assertNotNull(reply[0]);

    DhchapController second = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    second.send(new Dhchap.Negotiate(9, 0, List.of(1), List.of(0)).encode());
    second.receive(4096); // a new challenge: new C1 and S1
    second.send(reply[0]);
    assertEquals(Dhchap.FAILED, Dhchap.failureReason(second.receive(4096)));
    assertFalse(second.authenticated());
    assertTrue(second.failed());

    DhchapController third = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    third.send(new Dhchap.Negotiate(9, 0, List.of(1), List.of(0)).encode());
    third.receive(4096);
    third.send(Arrays.copyOf(reply[0], 40)); // truncated
    assertEquals(Dhchap.INCORRECT_PAYLOAD, Dhchap.failureReason(third.receive(4096)));
    assertFalse(third.authenticated());

    DhchapController fourth = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    fourth.send(reply[0]); // a reply before any negotiation
    assertTrue(Dhchap.failureReason(fourth.receive(4096)) > 0);
    assertFalse(fourth.authenticated());

    DhchapController fifth = controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.NULL));
    fifth.send(new Dhchap.Negotiate(9, 0, List.of(1), List.of(0)).encode());
    fifth.receive(4096);
    fifth.send(Dhchap.success2(9)); // skipping the reply
    assertTrue(Dhchap.failureReason(fifth.receive(4096)) > 0);
    assertFalse(fifth.authenticated());
  }

  @Test
  void aQueueStaysAuthenticatedWhileItsHostAuthenticatesAgainAndIsDroppedIfThatFails()
      throws Exception {
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
        .authenticate(new Wire(ctrl), "q", 1);
    assertTrue(ctrl.authenticated());
    // Linux's host authenticates again when its secret is changed; I/O goes on meanwhile.
    ctrl.send(new Dhchap.Negotiate(2, 0, List.of(1), List.of(1)).encode());
    assertTrue(ctrl.authenticated(), "still authenticated during the new exchange");
    ctrl.receive(4096);
    assertTrue(ctrl.authenticated());
    new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
        .authenticate(new Wire(ctrl), "q", 3);
    assertTrue(ctrl.authenticated());
    // A new exchange with a wrong secret ends it.
    DhchapSecret wrong = DhchapSecret.generate(DhchapHash.SHA256, 32, new SecureRandom());
    assertThrows(
        DhchapException.class,
        () -> new DhchapHost(HOST, SUB, wrong, null).authenticate(new Wire(ctrl), "q", 4));
    assertFalse(ctrl.authenticated());
    assertTrue(ctrl.failed());
  }

  @Test
  void aHostThatKeepsRestartingWithoutAuthenticatingIsDropped() {
    // Each exchange costs the controller a DH key pair: an unknown host gets a few, not forever.
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    for (int i = 1; i <= 3; i++) {
      ctrl.send(new Dhchap.Negotiate(i, 0, List.of(1), List.of(1)).encode());
      assertEquals(Dhchap.ID_CHALLENGE, Dhchap.id(ctrl.receive(4096)), "attempt " + i);
    }
    ctrl.send(new Dhchap.Negotiate(4, 0, List.of(1), List.of(1)).encode());
    assertEquals(Dhchap.FAILED, Dhchap.failureReason(ctrl.receive(4096)));
    assertTrue(ctrl.failed());
  }

  @Test
  void aControllerChallengeWithBadParametersIsRefusedByTheHost() {
    DhchapController ctrl =
        controller(null, List.of(DhchapHash.SHA256), List.of(DhGroup.FFDHE2048));
    Wire w = new Wire(ctrl);
    // A public value of 1 would make the shared secret known to anyone.
    w.toHost =
        m -> {
          if (Dhchap.id(m) == Dhchap.ID_CHALLENGE && Dhchap.type(m) == Dhchap.TYPE_DHCHAP) {
            byte[] t = m.clone();
            Arrays.fill(t, 16 + 32, 16 + 32 + 256, (byte) 0);
            t[16 + 32 + 255] = 1;
            return t;
          }
          return m;
        };
    DhchapException e =
        assertThrows(
            DhchapException.class,
            () ->
                new DhchapHost(HOST, SUB, DhchapSecret.parse(HOST_KEY), null)
                    .authenticate(w, "qid 0", 1));
    assertEquals(Dhchap.DHGROUP_UNUSABLE, e.reason());
    assertTrue(ctrl.failed(), "the host's Failure2 reached the controller");
  }

  private static KeyPair fixedPair(DhGroup g, BigInteger x) throws Exception {
    KeyFactory f = KeyFactory.getInstance("DH");
    BigInteger p = g.prime();
    return new KeyPair(
        f.generatePublic(new DHPublicKeySpec(BigInteger.TWO.modPow(x, p), p, BigInteger.TWO)),
        f.generatePrivate(new DHPrivateKeySpec(x, p, BigInteger.TWO)));
  }

  static boolean same(byte[] a, byte[] b) {
    return MessageDigest.isEqual(a, b);
  }
}
