package io.ember.nvmf;

import io.ember.nvmf.auth.DhchapSecret;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

/** Settings for connecting a host to a controller. Immutable; build with {@link #builder()}. */
public final class NvmfHostOptions {
  private final String hostNqn;
  private final UUID hostId;
  private final int ioQueues;
  private final int ioQueueSize;
  private final int adminQueueSize;
  private final Duration keepAlive;
  private final Duration commandTimeout;
  private final Duration connectTimeout;
  private final boolean headerDigest;
  private final boolean dataDigest;
  private final boolean disableSqFlowControl;
  private final int maxTransferSize;
  private final DhchapSecret dhchapSecret;
  private final DhchapSecret dhchapControllerSecret;
  private final Duration busyPoll;

  private NvmfHostOptions(Builder b) {
    this.hostNqn = b.hostNqn;
    this.hostId = b.hostId;
    this.ioQueues = b.ioQueues;
    this.ioQueueSize = b.ioQueueSize;
    this.adminQueueSize = b.adminQueueSize;
    this.keepAlive = b.keepAlive;
    this.commandTimeout = b.commandTimeout;
    this.connectTimeout = b.connectTimeout;
    this.headerDigest = b.headerDigest;
    this.dataDigest = b.dataDigest;
    this.disableSqFlowControl = b.disableSqFlowControl;
    this.maxTransferSize = b.maxTransferSize;
    this.dhchapSecret = b.dhchapSecret;
    this.dhchapControllerSecret = b.dhchapControllerSecret;
    this.busyPoll = b.busyPoll;
  }

  /**
   * Defaults: a host NQN derived from a random host id, 1 I/O queue of 128 entries, 10 s
   * keep-alive.
   */
  public static NvmfHostOptions defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Host NQN sent in every Connect. */
  public String hostNqn() {
    return hostNqn;
  }

  /** Host identifier sent in every Connect. */
  public UUID hostId() {
    return hostId;
  }

  /** I/O queues asked for (the controller may grant fewer). */
  public int ioQueues() {
    return ioQueues;
  }

  /** Entries per I/O queue asked for (capped by CAP.MQES). */
  public int ioQueueSize() {
    return ioQueueSize;
  }

  /** Entries of the admin queue. */
  public int adminQueueSize() {
    return adminQueueSize;
  }

  /** Keep Alive Timeout; zero disables keep-alive. */
  public Duration keepAlive() {
    return keepAlive;
  }

  /** Per-command timeout. */
  public Duration commandTimeout() {
    return commandTimeout;
  }

  /** Bound on connecting one queue. */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /** Whether header digests are requested. */
  public boolean headerDigest() {
    return headerDigest;
  }

  /** Whether data digests are requested. */
  public boolean dataDigest() {
    return dataDigest;
  }

  /** Whether I/O queues ask to disable SQ flow control. */
  public boolean disableSqFlowControl() {
    return disableSqFlowControl;
  }

  /** Largest transfer per command before splitting. */
  public int maxTransferSize() {
    return maxTransferSize;
  }

  /** The DH-HMAC-CHAP host secret, or null: this host cannot authenticate in-band. */
  public DhchapSecret dhchapSecret() {
    return dhchapSecret;
  }

  /**
   * The DH-HMAC-CHAP controller secret, or null: the host does not ask controllers to prove who
   * they are (unidirectional authentication).
   */
  public DhchapSecret dhchapControllerSecret() {
    return dhchapControllerSecret;
  }

  /**
   * How long the NVMe/TCP network threads keep polling their sockets after their last event before
   * they sleep; zero (the default) sleeps at once.
   */
  public Duration busyPoll() {
    return busyPoll;
  }

  /** Builder of {@link NvmfHostOptions}. */
  public static final class Builder {
    private UUID hostId = UUID.randomUUID();
    private String hostNqn;
    private int ioQueues = 1;
    private int ioQueueSize = 128;
    private int adminQueueSize = 32;
    private Duration keepAlive = Duration.ofSeconds(10);
    private Duration commandTimeout = Duration.ofSeconds(30);
    private Duration connectTimeout = Duration.ofSeconds(10);
    private boolean headerDigest;
    private boolean dataDigest;
    private boolean disableSqFlowControl = true;
    private int maxTransferSize = 1 << 20;
    private DhchapSecret dhchapSecret;
    private DhchapSecret dhchapControllerSecret;
    private Duration busyPoll = Duration.ZERO;

    private Builder() {}

    /** Host NQN; default {@code nqn.2014-08.org.nvmexpress:uuid:<host id>}. At most 223 bytes. */
    public Builder hostNqn(String v) {
      if (v.getBytes(StandardCharsets.UTF_8).length > 223) {
        throw new IllegalArgumentException("host NQN longer than 223 bytes: " + v);
      }
      this.hostNqn = v;
      return this;
    }

    /** Host identifier sent in Connect; the same for every queue of a controller. */
    public Builder hostId(UUID v) {
      this.hostId = v;
      return this;
    }

    /** Number of I/O queues (each is one TCP connection), 1..65534. */
    public Builder ioQueues(int v) {
      if (v < 1 || v > 65534) {
        throw new IllegalArgumentException("ioQueues must be 1..65534, got " + v);
      }
      this.ioQueues = v;
      return this;
    }

    /**
     * Entries per I/O queue, 2..65536; capped by the controller's CAP.MQES. At most size-1 in
     * flight.
     */
    public Builder ioQueueSize(int v) {
      if (v < 2 || v > 65536) {
        throw new IllegalArgumentException("ioQueueSize must be 2..65536, got " + v);
      }
      this.ioQueueSize = v;
      return this;
    }

    /** Entries of the admin queue, 2..4096 (fabrics controllers accept at least 32). */
    public Builder adminQueueSize(int v) {
      if (v < 2 || v > 4096) {
        throw new IllegalArgumentException("adminQueueSize must be 2..4096, got " + v);
      }
      this.adminQueueSize = v;
      return this;
    }

    /**
     * Keep Alive Timeout sent in Connect; Keep Alive goes out at half of it. A Keep Alive without
     * an answer within this time means the target (or the path to it) is gone: every queue is
     * closed, its commands fail with {@link NvmfException} and {@link NvmfController#isConnected()}
     * turns false. Zero disables it, and with it the only way to notice a target that vanished
     * without closing the connections.
     */
    public Builder keepAlive(Duration v) {
      this.keepAlive = v;
      return this;
    }

    /**
     * How long a command may stay outstanding before it fails with {@link NvmfTimeoutException}.
     * Only that command fails; the connection stays open.
     */
    public Builder commandTimeout(Duration v) {
      this.commandTimeout = v;
      return this;
    }

    /** Bound on TCP connect plus ICReq/Connect of one queue. */
    public Builder connectTimeout(Duration v) {
      this.connectTimeout = v;
      return this;
    }

    /** Ask for CRC32C header digests. */
    public Builder headerDigest(boolean v) {
      this.headerDigest = v;
      return this;
    }

    /** Ask for CRC32C data digests. */
    public Builder dataDigest(boolean v) {
      this.dataDigest = v;
      return this;
    }

    /**
     * Ask I/O queues to disable SQ flow control (Connect CATTR bit 2), which lets the target
     * complete reads with the C2HData SUCCESS flag and no response capsule. Default on.
     */
    public Builder disableSqFlowControl(boolean v) {
      this.disableSqFlowControl = v;
      return this;
    }

    /**
     * Largest transfer of one command when the controller's MDTS allows more (or has no limit);
     * larger requests are split. Default 1 MiB.
     */
    public Builder maxTransferSize(int v) {
      if (v < 4096) {
        throw new IllegalArgumentException("maxTransferSize must be at least 4096, got " + v);
      }
      this.maxTransferSize = v;
      return this;
    }

    /**
     * The host's DH-HMAC-CHAP secret ({@code DHHC-1:XX:...:}, as {@code nvme gen-dhchap-key} writes
     * it), for controllers that ask for in-band authentication; null for none. A controller that
     * asks while none is set is refused with a {@link io.ember.nvmf.auth.DhchapException}.
     *
     * @throws IllegalArgumentException when the text is not a valid secret
     */
    public Builder dhchapSecret(String v) {
      this.dhchapSecret = v == null || v.isBlank() ? null : DhchapSecret.parse(v);
      return this;
    }

    /**
     * The controller's DH-HMAC-CHAP secret: with it the host also makes each controller prove that
     * it holds this secret (bidirectional authentication) and refuses one that does not. Needs
     * {@link #dhchapSecret(String)}; null for unidirectional authentication.
     *
     * @throws IllegalArgumentException when the text is not a valid secret
     */
    public Builder dhchapControllerSecret(String v) {
      this.dhchapControllerSecret = v == null || v.isBlank() ? null : DhchapSecret.parse(v);
      return this;
    }

    /**
     * How long an NVMe/TCP controller's network threads keep polling their sockets, without
     * sleeping, after their last event (a command handed to them, data that arrived); zero (the
     * default) sleeps at once. A command handed to a thread, or a completion that arrives, while it
     * polls is taken without waking it: at queue depth 1 that saves two of the three wake-ups of
     * each command on the host (the caller waiting for its completion is still woken). The price is
     * up to this much of a core's time per network thread after each burst of commands, and nothing
     * while the controller is idle. The window must outlast the pauses between commands to help: on
     * a 2-CPU VM 10 ms did, 200 µs hardly. RDMA controllers ignore it.
     *
     * @throws IllegalArgumentException when {@code v} is negative
     */
    public Builder busyPoll(Duration v) {
      if (v.isNegative()) {
        throw new IllegalArgumentException("busyPoll must not be negative, got " + v);
      }
      this.busyPoll = v;
      return this;
    }

    /**
     * The options.
     *
     * @throws IllegalArgumentException when a controller secret is set without a host secret
     */
    public NvmfHostOptions build() {
      if (dhchapControllerSecret != null && dhchapSecret == null) {
        throw new IllegalArgumentException(
            "a DH-HMAC-CHAP controller secret needs a host secret too (bidirectional"
                + " authentication starts with the host's)");
      }
      if (hostNqn == null) {
        hostNqn = "nqn.2014-08.org.nvmexpress:uuid:" + hostId;
      }
      return new NvmfHostOptions(this);
    }
  }
}
