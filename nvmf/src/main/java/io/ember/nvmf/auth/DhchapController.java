package io.ember.nvmf.auth;

import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The controller's side of DH-HMAC-CHAP on one queue: the target feeds it each AUTH_Send's data and
 * asks it for each AUTH_Receive's. A protocol failure is not a command error: the commands succeed,
 * the next AUTH_Receive carries AUTH_Failure1, and then {@link #failed()} tells the target to drop
 * the queue. One step at a time: the target runs each on a worker thread (Diffie-Hellman takes
 * milliseconds), and reads {@link #authenticated()} from its event loop.
 */
public final class DhchapController {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final AtomicInteger SEQUENCE = new AtomicInteger(RANDOM.nextInt());

  private enum Step {
    NEGOTIATE,
    CHALLENGE,
    REPLY,
    SUCCESS1,
    SUCCESS2,
    FAILURE1,
    DONE,
    FAILED
  }

  private final String hostNqn;
  private final String subNqn;
  private final DhchapSecret hostKey;
  private final DhchapSecret ctrlKey;
  private final List<DhchapHash> hashes;
  private final List<DhGroup> groups;

  private volatile Step step = Step.NEGOTIATE;
  private volatile boolean authenticated;
  private int tid;
  private DhchapHash hash;
  private DhGroup group;
  private int s1;
  private byte[] c1;
  private KeyPair pair;
  private byte[] r2;
  private int reason;
  private String failure;
  private int attempts;

  /** Negotiations a queue may start before it first authenticates. */
  private static final int MAX_ATTEMPTS = 3;

  /**
   * @param hostNqn the host's NQN, from its Connect
   * @param subNqn the subsystem's NQN
   * @param hostKey the secret this host must prove it holds
   * @param ctrlKey the controller secret this target proves it holds when the host asks, or null (a
   *     host asking for it is then refused)
   * @param hashes the hashes this target accepts, most preferred first
   * @param groups the DH groups this target accepts, most preferred first
   * @throws IllegalArgumentException when a list is empty
   */
  public DhchapController(
      String hostNqn,
      String subNqn,
      DhchapSecret hostKey,
      DhchapSecret ctrlKey,
      List<DhchapHash> hashes,
      List<DhGroup> groups) {
    if (hashes.isEmpty() || groups.isEmpty()) {
      throw new IllegalArgumentException("DH-HMAC-CHAP needs at least one hash and one DH group");
    }
    this.hostNqn = hostNqn;
    this.subNqn = subNqn;
    this.hostKey = hostKey;
    this.ctrlKey = ctrlKey;
    this.hashes = List.copyOf(hashes);
    this.groups = List.copyOf(groups);
  }

  /** Whether the host has authenticated on this queue. */
  public boolean authenticated() {
    return authenticated;
  }

  /** Whether the exchange failed and Failure1 was sent: the queue should be dropped. */
  public boolean failed() {
    return step == Step.FAILED;
  }

  /** Why the exchange failed, for the target's log, or null. */
  public String failure() {
    return failure;
  }

  /** The hash and group of the last exchange, for the log (e.g. {@code sha256/ffdhe2048}). */
  public String negotiated() {
    return hash == null || group == null ? "none" : hash.label() + "/" + group.label();
  }

  /** Takes the data of an AUTH_Send. */
  public void send(byte[] m) {
    if (step == Step.FAILED || step == Step.FAILURE1) {
      return;
    }
    try {
      if (Dhchap.type(m) == Dhchap.TYPE_COMMON && Dhchap.id(m) == Dhchap.ID_NEGOTIATE) {
        negotiate(Dhchap.Negotiate.parse(m));
      } else if (Dhchap.failureReason(m) >= 0 && Dhchap.id(m) == Dhchap.ID_FAILURE2) {
        failure = "the host gave up: " + Dhchap.reason(Dhchap.failureReason(m));
        authenticated = false;
        step = Step.FAILED;
      } else if (Dhchap.tid(m) != tid) {
        fail(Dhchap.INCORRECT_PAYLOAD, "a message of transaction " + Dhchap.tid(m));
      } else if (step == Step.REPLY
          && Dhchap.type(m) == Dhchap.TYPE_DHCHAP
          && Dhchap.id(m) == Dhchap.ID_REPLY) {
        reply(Dhchap.Reply.parse(m));
      } else if (step == Step.SUCCESS2
          && Dhchap.type(m) == Dhchap.TYPE_DHCHAP
          && Dhchap.id(m) == Dhchap.ID_SUCCESS2) {
        authenticated = true;
        step = Step.DONE;
      } else {
        fail(Dhchap.INCORRECT_MESSAGE, "an unexpected message in step " + step);
      }
    } catch (DhchapException e) {
      fail(e.reason(), e.getMessage());
    }
  }

  /** The data of an AUTH_Receive (at most {@code allocation} bytes are sent of it). */
  public byte[] receive(int allocation) {
    switch (step) {
      case CHALLENGE:
        {
          byte[] value = new byte[0];
          if (group != DhGroup.NULL) {
            pair = group.generate(RANDOM);
            value = group.publicValue(pair);
          }
          s1 = nextSequence();
          c1 = new byte[hash.length()];
          RANDOM.nextBytes(c1);
          byte[] m =
              new Dhchap.Challenge(tid, hash.id(), hash.length(), group.id(), s1, c1, value)
                  .encode();
          if (m.length > allocation) {
            fail(Dhchap.INCORRECT_PAYLOAD, "an AUTH_Receive of " + allocation + " bytes");
            return receive(allocation);
          }
          step = Step.REPLY;
          return m;
        }
      case SUCCESS1:
        {
          byte[] m = new Dhchap.Success1(tid, hash.length(), r2).encode();
          step = r2 == null ? Step.DONE : Step.SUCCESS2;
          authenticated = r2 == null;
          r2 = null;
          return m;
        }
      case FAILURE1:
        step = Step.FAILED;
        return Dhchap.failure(true, tid, reason);
      default:
        fail(Dhchap.INCORRECT_MESSAGE, "an AUTH_Receive in step " + step);
        step = Step.FAILED;
        return Dhchap.failure(true, tid, reason);
    }
  }

  private void negotiate(Dhchap.Negotiate n) throws DhchapException {
    // A queue that authenticated stays usable while its host authenticates again (Linux's host does
    // when its secret changes), as on Linux's target; a failed attempt drops it. Before the first
    // success, a host gets a few attempts: each costs this target a DH key pair.
    tid = n.tid();
    if (!authenticated && ++attempts > MAX_ATTEMPTS) {
      throw new DhchapException(
          "the host started " + attempts + " exchanges without authenticating", Dhchap.FAILED);
    }
    if (n.scc() != 0) {
      throw new DhchapException(
          "the host asks for secure channel concatenation", Dhchap.CONCAT_MISMATCH);
    }
    hash = null;
    for (DhchapHash h : hashes) {
      if (n.hashIds().contains(h.id())) {
        hash = h;
        break;
      }
    }
    if (hash == null) {
      throw new DhchapException(
          "the host offers hashes " + n.hashIds() + ", none of " + hashes, Dhchap.HASH_UNUSABLE);
    }
    group = null;
    for (DhGroup g : groups) {
      if (n.groupIds().contains(g.id())) {
        group = g;
        break;
      }
    }
    if (group == null) {
      throw new DhchapException(
          "the host offers DH groups " + n.groupIds() + ", none of " + groups,
          Dhchap.DHGROUP_UNUSABLE);
    }
    step = Step.CHALLENGE;
  }

  private void reply(Dhchap.Reply r) throws DhchapException {
    if (r.hl() != hash.length()) {
      throw new DhchapException("a reply of hash length " + r.hl(), Dhchap.INCORRECT_PAYLOAD);
    }
    if ((group == DhGroup.NULL) != (r.dhValue().length == 0)
        || r.dhValue().length > group.valueBytes()) {
      throw new DhchapException(
          "a reply with a DH value of " + r.dhValue().length + " bytes", Dhchap.INCORRECT_PAYLOAD);
    }
    byte[] shared = null;
    if (group != DhGroup.NULL) {
      try {
        shared = group.agree(pair, r.dhValue());
      } catch (GeneralSecurityException e) {
        throw new DhchapException(e.getMessage(), Dhchap.DHGROUP_UNUSABLE);
      } finally {
        pair = null;
      }
    }
    try {
      byte[] kh = hostKey.transformed(hostNqn);
      byte[] expected = Dhchap.hostResponse(hash, kh, c1, s1, tid, hostNqn, subNqn, shared);
      Arrays.fill(kh, (byte) 0);
      if (!MessageDigest.isEqual(expected, r.r1())) {
        throw new DhchapException("the host's response does not match its secret", Dhchap.FAILED);
      }
      r2 = null;
      if (r.cvalid() && r.seq() != 0) {
        if (ctrlKey == null) {
          throw new DhchapException(
              "the host asks the controller to authenticate, and no controller secret is"
                  + " configured for it",
              Dhchap.FAILED);
        }
        byte[] kc = ctrlKey.transformed(subNqn);
        r2 = Dhchap.controllerResponse(hash, kc, r.c2(), r.seq(), tid, subNqn, hostNqn, shared);
        Arrays.fill(kc, (byte) 0);
      }
      step = Step.SUCCESS1;
    } finally {
      if (shared != null) {
        Arrays.fill(shared, (byte) 0);
      }
    }
  }

  private void fail(int code, String why) {
    authenticated = false;
    reason = code;
    failure = why + " (" + Dhchap.reason(code) + ")";
    step = Step.FAILURE1;
  }

  private static int nextSequence() {
    int s;
    do {
      s = SEQUENCE.incrementAndGet();
    } while (s == 0);
    return s;
  }
}
