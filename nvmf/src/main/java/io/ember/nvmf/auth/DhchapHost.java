package io.ember.nvmf.auth;

import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfTimeoutException;
import io.ember.nvmf.host.ControllerSetup.AdminPort;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host's side of DH-HMAC-CHAP on one queue, run right after a Connect whose answer asks for
 * authentication (AUTHREQ.ATR): AUTH_Negotiate, the controller's challenge, the host's reply and,
 * when a controller secret is configured, the check that the controller knows it (bidirectional
 * authentication). The host offers every hash and group, as Linux's host does, because Linux's
 * target answers with the ones its configuration names.
 */
public final class DhchapHost {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final AtomicInteger SEQUENCE = new AtomicInteger(RANDOM.nextInt());

  private final String hostNqn;
  private final String subNqn;
  private final DhchapSecret hostKey;
  private final DhchapSecret ctrlKey;

  /**
   * @param hostNqn this host's NQN (the host secret is bound to it)
   * @param subNqn the subsystem's NQN (the controller secret is bound to it)
   * @param hostKey the host secret
   * @param ctrlKey the controller secret, or null for unidirectional authentication
   */
  public DhchapHost(String hostNqn, String subNqn, DhchapSecret hostKey, DhchapSecret ctrlKey) {
    this.hostNqn = hostNqn;
    this.subNqn = subNqn;
    this.hostKey = hostKey;
    this.ctrlKey = ctrlKey;
  }

  /**
   * Authenticates the queue that {@code port} sends on, as transaction {@code tid}.
   *
   * @param where the queue, for messages (e.g. "qid 1 of nvmf+tcp://...")
   * @return the hash and group the controller chose, e.g. {@code sha256/ffdhe2048}
   * @throws DhchapException when the controller refuses this host's response, no hash or group is
   *     common, the controller's messages are malformed, or (bidirectional) the controller's
   *     response is wrong: the reason is in the message
   * @throws NvmfException when an AUTH command fails or gets no answer
   */
  public String authenticate(AdminPort port, String where, int tid) throws NvmfException {
    List<Integer> hashes = new ArrayList<>();
    for (DhchapHash h : DhchapHash.values()) {
      hashes.add(h.id());
    }
    List<Integer> groups = new ArrayList<>();
    for (DhGroup g : DhGroup.values()) {
      groups.add(g.id());
    }
    send(port, new Dhchap.Negotiate(tid, 0, hashes, groups).encode());
    byte[] m = receive(port);
    refused(m, where, "the negotiation");
    if (Dhchap.type(m) != Dhchap.TYPE_DHCHAP || Dhchap.id(m) != Dhchap.ID_CHALLENGE) {
      throw abort(port, tid, Dhchap.INCORRECT_MESSAGE, where, "the controller sent no challenge");
    }
    Dhchap.Challenge c = Dhchap.Challenge.parse(m);
    DhchapHash h = DhchapHash.byId(c.hashId());
    DhGroup g = DhGroup.byId(c.groupId());
    if (c.tid() != tid) {
      throw abort(
          port, tid, Dhchap.INCORRECT_PAYLOAD, where, "the challenge names transaction " + c.tid());
    }
    if (h == null || c.hl() != h.length()) {
      throw abort(
          port,
          tid,
          Dhchap.HASH_UNUSABLE,
          where,
          "the challenge names hash " + c.hashId() + " of " + c.hl() + " bytes");
    }
    if (g == null || (g == DhGroup.NULL) != (c.dhValue().length == 0)) {
      throw abort(
          port,
          tid,
          Dhchap.DHGROUP_UNUSABLE,
          where,
          "the challenge names DH group "
              + c.groupId()
              + " with a value of "
              + c.dhValue().length
              + " bytes");
    }
    if (c.seq() == 0 || c.dhValue().length > g.valueBytes()) {
      throw abort(port, tid, Dhchap.INCORRECT_PAYLOAD, where, "the challenge is malformed");
    }
    byte[] shared = null;
    byte[] ownValue = new byte[0];
    if (g != DhGroup.NULL) {
      KeyPair pair = g.generate(RANDOM);
      ownValue = g.publicValue(pair);
      try {
        shared = g.agree(pair, c.dhValue());
      } catch (GeneralSecurityException e) {
        throw abort(port, tid, Dhchap.DHGROUP_UNUSABLE, where, e.getMessage());
      }
    }
    byte[] kh = hostKey.transformed(hostNqn);
    byte[] r1 = Dhchap.hostResponse(h, kh, c.c1(), c.seq(), tid, hostNqn, subNqn, shared);
    Arrays.fill(kh, (byte) 0);
    boolean bidirectional = ctrlKey != null;
    int s2 = bidirectional ? nextSequence() : 0;
    byte[] c2 = new byte[h.length()];
    if (bidirectional) {
      RANDOM.nextBytes(c2);
    }
    send(port, new Dhchap.Reply(tid, h.length(), bidirectional, s2, r1, c2, ownValue).encode());
    try {
      m = receive(port);
    } catch (NvmeStatusException | NvmfTimeoutException | DhchapException e) {
      throw e;
    } catch (NvmfException closed) {
      // Linux's target ends the association when it refuses an admin queue's response, and its
      // teardown can overtake the Failure1 it queued: the host then sees only the close.
      DhchapException refused =
          new DhchapException(
              "DH-HMAC-CHAP on "
                  + where
                  + ": the controller closed the connection instead of answering this host's"
                  + " response, as Linux's target does when it refused it: check the host secret"
                  + " and the host NQN it is bound to ("
                  + closed.getMessage()
                  + ")",
              Dhchap.FAILED);
      refused.initCause(closed);
      throw refused;
    }
    refused(m, where, "this host's response");
    if (Dhchap.type(m) != Dhchap.TYPE_DHCHAP || Dhchap.id(m) != Dhchap.ID_SUCCESS1) {
      throw abort(port, tid, Dhchap.INCORRECT_MESSAGE, where, "the controller sent no Success1");
    }
    Dhchap.Success1 s = Dhchap.Success1.parse(m);
    if (s.tid() != tid || s.hl() != h.length()) {
      throw abort(
          port, tid, Dhchap.INCORRECT_PAYLOAD, where, "Success1 does not match the transaction");
    }
    if (bidirectional) {
      byte[] kc = ctrlKey.transformed(subNqn);
      byte[] expected = Dhchap.controllerResponse(h, kc, c2, s2, tid, subNqn, hostNqn, shared);
      Arrays.fill(kc, (byte) 0);
      if (s.r2() == null || !MessageDigest.isEqual(expected, s.r2())) {
        throw abort(
            port,
            tid,
            Dhchap.FAILED,
            where,
            "the controller did not prove that it holds the controller secret (bidirectional"
                + " authentication); it may not be the subsystem it claims to be");
      }
      send(port, Dhchap.success2(tid));
    }
    if (shared != null) {
      Arrays.fill(shared, (byte) 0);
    }
    return h.label() + "/" + g.label();
  }

  private static int nextSequence() {
    int s;
    do {
      s = SEQUENCE.incrementAndGet();
    } while (s == 0);
    return s;
  }

  private static void refused(byte[] m, String where, String what) throws DhchapException {
    int reason = Dhchap.failureReason(m);
    if (reason >= 0) {
      throw new DhchapException(
          "DH-HMAC-CHAP on "
              + where
              + ": the controller refused "
              + what
              + " ("
              + Dhchap.reason(reason)
              + "); check the host secret, hash and DH group configured for this host NQN",
          reason);
    }
  }

  /** Tells the controller why this host gives up (best effort), and returns the error to throw. */
  private static DhchapException abort(
      AdminPort port, int tid, int reason, String where, String why) {
    try {
      send(port, Dhchap.failure(false, tid, reason));
    } catch (NvmfException e) {
      // The controller may already have dropped the queue; the error below says why.
    }
    return new DhchapException("DH-HMAC-CHAP on " + where + ": " + why, reason);
  }

  private static void send(AdminPort port, byte[] m) throws NvmfException {
    port.call(authCommand(Nvme.FCTYPE_AUTH_SEND, m.length), ByteBuffer.wrap(m), true);
  }

  private static byte[] receive(AdminPort port) throws NvmfException {
    ByteBuffer b = ByteBuffer.allocate(Dhchap.RECEIVE_LENGTH);
    port.call(authCommand(Nvme.FCTYPE_AUTH_RECEIVE, Dhchap.RECEIVE_LENGTH), b, false);
    return b.array();
  }

  private static Sqe authCommand(int fctype, int length) {
    return new Sqe()
        .opcode(Nvme.FABRICS)
        .fctype(fctype)
        .byteAt(41, 1)
        .byteAt(42, 1)
        .byteAt(43, Nvme.AUTH_SECP)
        .intAt(44, length);
  }
}
