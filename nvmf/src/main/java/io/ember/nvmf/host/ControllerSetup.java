package io.ember.nvmf.host;

import io.ember.nvmf.IdentifyController;
import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfTimeoutException;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.auth.DhchapException;
import io.ember.nvmf.auth.DhchapHost;
import io.ember.nvmf.spec.Cqe;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin-queue steps of bringing a controller up and down, the same over every transport:
 * Connect's capsule, properties, enabling, Identify, the namespaces, the number of I/O queues and
 * the shutdown notification.
 */
public final class ControllerSetup {
  private static final Logger LOG = LoggerFactory.getLogger(ControllerSetup.class);

  /** Size of the Fabrics Connect command's data. */
  public static final int CONNECT_DATA = 1024;

  /** CC with IOCQES=4 (16-byte CQEs), IOSQES=6 (64-byte SQEs), MPS=0 (4 KiB), CSS=0 (NVM). */
  private static final int CC_BASE = (4 << 20) | (6 << 16);

  private ControllerSetup() {}

  /** Sends one admin command and waits for its completion. */
  @FunctionalInterface
  public interface AdminPort {
    /**
     * Sends {@code sqe} with {@code data} (or null) and returns its completion.
     *
     * @throws NvmeStatusException when the controller answers with an error status
     * @throws NvmfException when the command cannot be sent or gets no answer in time
     */
    Cqe call(Sqe sqe, ByteBuffer data, boolean dataOut) throws NvmfException;
  }

  /** The Fabrics Connect command for queue {@code qid} of {@code qsize} entries. */
  public static Sqe connect(int qid, int qsize, int kato, boolean disableSqFlow) {
    return new Sqe()
        .opcode(Nvme.FABRICS)
        .fctype(Nvme.FCTYPE_CONNECT)
        .shortAt(40, 0)
        .shortAt(42, qid)
        .shortAt(44, qsize - 1)
        .byteAt(46, disableSqFlow ? 1 << 2 : 0)
        .intAt(48, kato);
  }

  /** The 1024 bytes of data that go with Connect (a heap buffer, positioned at 0). */
  public static ByteBuffer connectData(UUID hostId, int cntlid, String subNqn, String hostNqn) {
    ByteBuffer d = ByteBuffer.allocate(CONNECT_DATA);
    d.order(ByteOrder.BIG_ENDIAN)
        .putLong(0, hostId.getMostSignificantBits())
        .putLong(8, hostId.getLeastSignificantBits());
    d.order(ByteOrder.LITTLE_ENDIAN).putShort(16, (short) cntlid);
    d.put(256, Nvme.ascii(subNqn, 256, (byte) 0));
    d.put(512, Nvme.ascii(hostNqn, 256, (byte) 0));
    return d;
  }

  /**
   * Authenticates a queue in-band (DH-HMAC-CHAP) when its Connect answer asks for it (AUTHREQ.ATR),
   * before anything else is sent on it. The transaction id is the queue id: each queue runs one
   * transaction per association.
   *
   * @return the hash and group chosen (with ", bidirectional" when the controller proved itself
   *     too), or null when the controller did not ask
   * @param port sends a command on the queue that was just connected
   * @param connect the Connect command's completion
   * @throws io.ember.nvmf.auth.DhchapException when the controller asks for authentication and the
   *     options have no host secret, when it asks for a secure channel, or when authentication
   *     fails
   * @throws NvmfException when an authentication command fails or gets no answer
   */
  public static String authenticateIfAsked(
      AdminPort port, Cqe connect, NvmfHostOptions opts, NvmfUri uri, int qid)
      throws NvmfException {
    int authreq = connect.dw0() & (Nvme.CONNECT_ATR | Nvme.CONNECT_ASCR);
    String where = "qid " + qid + " of " + uri;
    if (authreq == 0) {
      if (opts.dhchapControllerSecret() != null && !uri.subsystemNqn().equals(Nvme.DISCOVERY_NQN)) {
        // The host wanted the controller to prove itself; one that skips authentication cannot.
        throw new DhchapException(
            "DH-HMAC-CHAP on "
                + where
                + ": the controller does not ask for authentication, so it cannot prove it holds"
                + " the controller secret this host is configured with",
            DhchapException.FAILED);
      }
      return null;
    }
    if ((authreq & Nvme.CONNECT_ASCR) != 0) {
      throw new DhchapException(
          "DH-HMAC-CHAP on "
              + where
              + ": the controller requires a secure channel (TLS after authentication), which this"
              + " host does not support",
          DhchapException.CONCAT_MISMATCH);
    }
    if (opts.dhchapSecret() == null) {
      throw new DhchapException(
          "the controller at "
              + uri
              + " requires in-band authentication (DH-HMAC-CHAP) and this host has no secret;"
              + " set the host's DHHC-1 secret",
          DhchapException.FAILED);
    }
    String chosen =
        new DhchapHost(
                opts.hostNqn(),
                uri.subsystemNqn(),
                opts.dhchapSecret(),
                opts.dhchapControllerSecret())
            .authenticate(port, where, qid);
    if (opts.dhchapControllerSecret() != null) {
      chosen += ", bidirectional";
    }
    LOG.debug("{}: authenticated with DH-HMAC-CHAP ({})", where, chosen);
    return chosen;
  }

  /** Reads a controller property (4 or 8 bytes). */
  public static long propGet(AdminPort a, int offset, boolean eight) throws NvmfException {
    Cqe r =
        a.call(
            new Sqe()
                .opcode(Nvme.FABRICS)
                .fctype(Nvme.FCTYPE_PROPERTY_GET)
                .byteAt(40, eight ? 1 : 0)
                .intAt(44, offset),
            null,
            false);
    return eight ? r.value64() : r.dw0() & 0xFFFFFFFFL;
  }

  /** Writes a 4-byte controller property. */
  public static void propSet(AdminPort a, int offset, int value) throws NvmfException {
    a.call(
        new Sqe()
            .opcode(Nvme.FABRICS)
            .fctype(Nvme.FCTYPE_PROPERTY_SET)
            .byteAt(40, 0)
            .intAt(44, offset)
            .longAt(48, value & 0xFFFFFFFFL),
        null,
        false);
  }

  /**
   * Enables a freshly connected controller (CC.EN=1) and waits for CSTS.RDY within CAP.TO.
   *
   * @return CAP
   * @throws NvmfException when the controller was already enabled, reports a fatal status or does
   *     not become ready in time
   */
  public static long enable(AdminPort a, NvmfUri uri, int cntlid) throws NvmfException {
    long cap = propGet(a, Nvme.PROP_CAP, true);
    if ((propGet(a, Nvme.PROP_CSTS, false) & 1) != 0) {
      throw new NvmfException(
          "controller "
              + cntlid
              + " at "
              + uri
              + " is already enabled (CSTS.RDY=1)"
              + " right after Connect; it is not a fresh dynamic controller");
    }
    propSet(a, Nvme.PROP_CC, CC_BASE | 1);
    waitReady(a, uri, cap, true);
    return cap;
  }

  /** Polls CSTS until RDY is {@code ready}, for at most CAP.TO. */
  public static void waitReady(AdminPort a, NvmfUri uri, long cap, boolean ready)
      throws NvmfException {
    long toMs = Math.max(500, ((cap >>> 24) & 0xFF) * 500L);
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(toMs);
    while (true) {
      long csts = propGet(a, Nvme.PROP_CSTS, false);
      if ((csts & 2) != 0) {
        throw new NvmfException(
            "controller at " + uri + " reports Controller Fatal Status (CSTS.CFS)");
      }
      if (((csts & 1) != 0) == ready) {
        return;
      }
      if (System.nanoTime() - end > 0) {
        throw new NvmfTimeoutException(
            "controller at "
                + uri
                + " did not set CSTS.RDY="
                + (ready ? 1 : 0)
                + " within CAP.TO ("
                + toMs
                + " ms)");
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new NvmfException("interrupted while waiting for CSTS.RDY of " + uri, e);
      }
    }
  }

  /** Sends the normal shutdown notification (CC.SHN=01b) and waits up to 2 s for it to finish. */
  public static void shutdown(AdminPort a) throws NvmfException {
    propSet(a, Nvme.PROP_CC, CC_BASE | 1 | (1 << 14));
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    try {
      while (((propGet(a, Nvme.PROP_CSTS, false) >> 2) & 3) != 2 && System.nanoTime() - end < 0) {
        Thread.sleep(5);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Reads {@code len} bytes of an admin command's data. */
  public static byte[] adminRead(AdminPort a, Sqe sqe, int len) throws NvmfException {
    ByteBuffer b = ByteBuffer.allocate(len);
    a.call(sqe, b, false);
    return b.array();
  }

  /** Identify Controller. */
  public static IdentifyController identifyController(AdminPort a) throws NvmfException {
    return IdentifyController.parse(
        adminRead(a, new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_CONTROLLER), 4096));
  }

  /** The largest transfer: the host's limit, MDTS (in units of CAP.MPSMIN pages). */
  public static int maxTransfer(long cap, IdentifyController id, int hostLimit) {
    long mps = 1L << (12 + ((cap >>> 48) & 0xF));
    long mdtsBytes = id.mdts() == 0 ? Long.MAX_VALUE : mps << id.mdts();
    return (int) Math.min(hostLimit, mdtsBytes);
  }

  /**
   * The active namespaces: the one {@code uri} names, or all of them.
   *
   * @throws NvmfException when the namespace {@code uri} names is not active
   */
  public static Map<Integer, IdentifyNamespace> identifyNamespaces(
      AdminPort a, NvmfUri uri, IdentifyController identify) throws NvmfException {
    List<Integer> ids = new ArrayList<>();
    if (uri.nsid() != 0) {
      ids.add(uri.nsid());
    } else {
      try {
        ByteBuffer list =
            ByteBuffer.wrap(
                    adminRead(
                        a,
                        new Sqe().opcode(Nvme.ADMIN_IDENTIFY).cdw(10, Nvme.CNS_ACTIVE_NS_LIST),
                        4096))
                .order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 1024; i++) {
          int id = list.getInt(i * 4);
          if (id == 0) {
            break;
          }
          ids.add(id);
        }
      } catch (NvmeStatusException e) {
        // Controllers before NVMe 1.1 lack CNS 02h: probe NSIDs 1..NN instead.
        for (int id = 1; id <= Math.min(identify.nn(), 1024); id++) {
          ids.add(id);
        }
      }
    }
    Map<Integer, IdentifyNamespace> m = new TreeMap<>();
    for (int id : ids) {
      IdentifyNamespace ns =
          IdentifyNamespace.parse(
              id,
              adminRead(
                  a,
                  new Sqe().opcode(Nvme.ADMIN_IDENTIFY).nsid(id).cdw(10, Nvme.CNS_NAMESPACE),
                  4096));
      if (ns.active()) {
        m.put(id, ns);
      } else if (uri.nsid() != 0) {
        throw new NvmfException(
            "namespace " + id + " named in " + uri + " is not active on the controller");
      }
    }
    return Collections.unmodifiableMap(m);
  }

  /**
   * Asks for {@code wanted} I/O queue pairs (Set Features, Number of Queues) and returns how many
   * may be used; a controller that refuses the feature gets {@code wanted}.
   */
  public static int negotiateIoQueues(AdminPort a, int wanted) throws NvmfException {
    try {
      Cqe r =
          a.call(
              new Sqe()
                  .opcode(Nvme.ADMIN_SET_FEATURES)
                  .cdw(10, Nvme.FEAT_NUM_QUEUES)
                  .cdw(11, ((wanted - 1) << 16) | (wanted - 1)),
              null,
              false);
      return Math.min(wanted, Math.min((r.dw0() & 0xFFFF) + 1, (r.dw0() >>> 16) + 1));
    } catch (NvmeStatusException e) {
      return wanted;
    }
  }

  /**
   * Waits for an admin or Connect command's future.
   *
   * @throws NvmfTimeoutException when it is not done within {@code ms}
   * @throws NvmfException with the command's own failure, or naming {@code what}
   */
  public static <T> T await(CompletableFuture<T> f, long ms, String what) throws NvmfException {
    try {
      return f.get(ms, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NvmfException("interrupted while waiting for " + what, e);
    } catch (TimeoutException e) {
      throw new NvmfTimeoutException(what + " got no answer within " + ms + " ms");
    } catch (ExecutionException e) {
      if (e.getCause() instanceof NvmfException n) {
        throw n;
      }
      throw new NvmfException(what + " failed: " + e.getCause(), e.getCause());
    }
  }

  /**
   * Namespace {@code nsid} of {@code active}.
   *
   * @throws IllegalArgumentException when it is not active, naming the ones that are
   */
  public static IdentifyNamespace namespace(
      Map<Integer, IdentifyNamespace> active, int nsid, NvmfUri uri) {
    IdentifyNamespace ns = active.get(nsid);
    if (ns == null) {
      throw new IllegalArgumentException(
          "namespace " + nsid + " is not active on " + uri + " (active: " + active.keySet() + ")");
    }
    return ns;
  }

  /**
   * What a Keep Alive's outcome means: a refusal is logged (the target answered, so it is there);
   * no answer, or a transport failure, means the association is gone and goes to {@code lose}.
   */
  public static NvmfCallback keepAliveOutcome(
      NvmfUri uri, int cntlid, BooleanSupplier closed, Consumer<NvmfException> lose) {
    return err -> {
      if (err == null || closed.getAsBoolean()) {
        return;
      }
      if (err instanceof NvmeStatusException) {
        LOG.warn("Keep Alive to {} failed: {}", uri, err.getMessage());
        return;
      }
      lose.accept(
          new NvmfException(
              "controller " + cntlid + " at " + uri + " is gone: " + err.getMessage(), err));
    };
  }

  /**
   * A short description of a command for error messages; {@code admin} tells the opcode spaces
   * apart.
   */
  public static String describe(Sqe s, boolean admin) {
    int op = s.opcode();
    if (op == Nvme.FABRICS) {
      switch (s.fctype()) {
        case Nvme.FCTYPE_CONNECT:
          return "Fabrics Connect qid " + s.shortAt(42);
        case Nvme.FCTYPE_PROPERTY_GET:
          return String.format("Property Get 0x%x", s.intAt(44));
        case Nvme.FCTYPE_PROPERTY_SET:
          return String.format("Property Set 0x%x", s.intAt(44));
        case Nvme.FCTYPE_AUTH_SEND:
          return "AUTH_Send";
        case Nvme.FCTYPE_AUTH_RECEIVE:
          return "AUTH_Receive";
        default:
          return String.format("Fabrics command type 0x%x", s.fctype());
      }
    }
    long slba = (s.cdw(10) & 0xFFFFFFFFL) | ((long) s.cdw(11) << 32);
    int nlb = (s.cdw(12) & 0xFFFF) + 1;
    String nsid = Integer.toUnsignedString(s.nsid());
    if (admin) {
      switch (op) {
        case Nvme.ADMIN_IDENTIFY:
          return "Identify CNS " + (s.cdw(10) & 0xFF) + " nsid " + nsid;
        case Nvme.ADMIN_GET_LOG_PAGE:
          return String.format("Get Log Page 0x%02x", s.cdw(10) & 0xFF);
        case Nvme.ADMIN_SET_FEATURES:
          return String.format("Set Features 0x%02x", s.cdw(10) & 0xFF);
        case Nvme.ADMIN_GET_FEATURES:
          return String.format("Get Features 0x%02x", s.cdw(10) & 0xFF);
        case Nvme.ADMIN_KEEP_ALIVE:
          return "Keep Alive";
        default:
          return String.format("admin command 0x%02x", op);
      }
    }
    switch (op) {
      case Nvme.IO_READ:
        return "Read nsid " + nsid + " slba " + slba + " nlb " + nlb;
      case Nvme.IO_WRITE:
        return "Write nsid " + nsid + " slba " + slba + " nlb " + nlb;
      case Nvme.IO_FLUSH:
        return "Flush nsid " + nsid;
      case Nvme.IO_WRITE_ZEROES:
        return "Write Zeroes nsid " + nsid + " slba " + slba + " nlb " + nlb;
      case Nvme.IO_DSM:
        return "Dataset Management (deallocate) nsid " + nsid;
      default:
        return String.format("I/O command 0x%02x nsid %s", op, nsid);
    }
  }
}
