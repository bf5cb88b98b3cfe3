package io.ember.datanode.nvmf;

import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.Messages;
import io.ember.protocol.NameNodeLink;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An NVMf data node: connects to a target as an admin host, reads the namespace's size and LBA
 * format, registers the namespace as blocks of storage class NVMf, and heartbeats. It is never on
 * the data path: clients talk to the target directly. Freed blocks come back through heartbeats
 * and are deallocated on the target (Dataset Management) before the name node reuses them. When
 * the target stops answering, heartbeats stop and the name node marks the blocks lost; when it
 * answers again, the node reconnects and registers anew.
 *
 * <p>Without a target URI it starts an embedded target backed by a file or by memory.
 */
public final class NvmfDataNode implements AutoCloseable {
  /** The tier name clients look up to read and write this node's blocks. */
  public static final String TIER = "nvmf";
  /** Subsystem NQN of the embedded target. */
  public static final String EMBEDDED_NQN = "nqn.2026-11.io.ember:embedded";

  private static final Logger LOG = LoggerFactory.getLogger(NvmfDataNode.class);

  private final NvmfTarget embedded;
  private final NvmfUri uri;
  private final NvmfHostOptions options;
  private final int nsid;
  private final IdentifyNamespace namespace;
  private final NameNodeLink link;
  private final LifeCycle lifeCycle = new LifeCycle("NVMf data node");
  private volatile NvmfController controller;
  private volatile boolean dsmWarned;

  private NvmfDataNode(EmberConfig config) throws EmberException {
    lifeCycle.beginStart();
    String target = config.get(NvmfDataNodeKeys.TARGET);
    options = NvmfHostOptions.builder().ioQueues(1).ioQueueSize(32)
        .commandTimeout(Duration.ofSeconds(10))
        .connectTimeout(config.get(EmberKeys.CONNECT_TIMEOUT)).build();
    try {
      if (target.isBlank()) {
        embedded = startEmbedded(config);
        uri = NvmfUri.parse(embedded.uri(EMBEDDED_NQN) + "/1");
      } else {
        embedded = null;
        uri = NvmfUri.parse(target);
      }
    } catch (IllegalArgumentException e) {
      throw new EmberException(ErrorCode.INVALID_ARGUMENT, e.getMessage(), e);
    }
    try {
      controller = NvmfHost.connect(uri, options);
    } catch (NvmfException e) {
      closeEmbedded();
      throw new EmberException(ErrorCode.UNREACHABLE,
          "cannot reach NVMf target " + uri + ": " + e.getMessage(), e);
    }
    nsid = uri.nsid() != 0 ? uri.nsid() : controller.namespaces().get(0).nsid();
    namespace = controller.namespace(nsid);
    long blockSize = config.get(EmberKeys.BLOCK_SIZE);
    if (blockSize % namespace.blockSize() != 0) {
      controller.close();
      closeEmbedded();
      throw new EmberException(ErrorCode.INVALID_ARGUMENT, "the cluster block size " + blockSize
          + " is not a multiple of " + uri + "'s LBA size " + namespace.blockSize());
    }
    String endpoint = new NvmfUri(uri.transport(), uri.host(), uri.port(), uri.subsystemNqn(),
        nsid).toString();
    link = new NameNodeLink(config, "NVMf data node for " + endpoint,
        new Messages.RegisterRequest(StorageClass.NVMF, TIER, endpoint, namespace.sizeBytes(),
            true),
        this::deallocate, this::healthy);
    link.start();
    LOG.info("NVMf data node: {} bytes of {} (LBA {} bytes)", namespace.sizeBytes(), endpoint,
        namespace.blockSize());
    lifeCycle.started();
  }

  /**
   * Starts an NVMf data node for {@link NvmfDataNodeKeys#TARGET}, or for an embedded target when
   * it is empty, and registers it with the name node.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when the target cannot be reached,
   *     {@link ErrorCode#INVALID_ARGUMENT} for a bad URI or an LBA size the block size does not fit
   */
  public static NvmfDataNode start(EmberConfig config) throws EmberException {
    return new NvmfDataNode(config);
  }

  /** The target namespace, as clients address it. */
  public NvmfUri target() {
    return uri;
  }

  /** The embedded target, or null when the node exports an external one. */
  public NvmfTarget embeddedTarget() {
    return embedded;
  }

  /** The namespace's size in bytes. */
  public long capacity() {
    return namespace.sizeBytes();
  }

  /** The id the name node gave this node, or -1 while unregistered. */
  public int datanodeId() {
    return link.datanodeId();
  }

  private static NvmfTarget startEmbedded(EmberConfig config) throws EmberException {
    long size = config.get(NvmfDataNodeKeys.EMBEDDED_SIZE);
    String file = config.get(NvmfDataNodeKeys.EMBEDDED_FILE);
    try {
      Namespace ns = file.isBlank()
          ? new MemoryNamespace(size, 4096)
          : new FileNamespace(Path.of(file), size, 4096, true);
      return NvmfTarget.builder().listen("127.0.0.1", 0)
          .subsystem(new Subsystem(EMBEDDED_NQN).namespace(1, ns)).build().start();
    } catch (IOException e) {
      throw new EmberException(ErrorCode.INVALID_ARGUMENT,
          "cannot start the embedded NVMf target" + (file.isBlank() ? "" : " on " + file) + ": "
              + e.getMessage(), e);
    }
  }

  /** Reads one LBA: the target answers, or this node is unhealthy (and tries to reconnect). */
  private boolean healthy() {
    NvmfController c = controller;
    if (c != null) {
      ByteBuffer probe = ByteBuffer.allocateDirect(namespace.blockSize());
      try {
        c.ioQueue(0).read(nsid, 0, probe).get(5, TimeUnit.SECONDS);
        return true;
      } catch (Exception e) {
        LOG.warn("NVMf target {} does not answer: {}", uri, e.getMessage());
        controller = null;
        c.close();
      }
    }
    try {
      controller = NvmfHost.connect(uri, options);
      LOG.info("NVMf target {} answers again", uri);
      return true;
    } catch (NvmfException e) {
      return false;
    }
  }

  /** Deallocates freed blocks on the target; returns the slots done. */
  private List<Long> deallocate(List<Long> slots) {
    NvmfController c = controller;
    int blockSize = link.blockSize();
    if (c == null || blockSize == 0) {
      return List.of();
    }
    long sectorsPerBlock = blockSize / namespace.blockSize();
    if (!c.identify().supportsDsm()) {
      if (!dsmWarned) {
        dsmWarned = true;
        LOG.warn("NVMf target {} lacks Dataset Management: freed blocks are reused as they are",
            uri);
      }
      return slots;
    }
    List<CompletableFuture<Void>> calls = new ArrayList<>(slots.size());
    for (long slot : slots) {
      calls.add(c.ioQueue(0).deallocate(nsid, slot * sectorsPerBlock, sectorsPerBlock));
    }
    List<Long> done = new ArrayList<>(slots.size());
    for (int i = 0; i < slots.size(); i++) {
      try {
        calls.get(i).get(10, TimeUnit.SECONDS);
        done.add(slots.get(i));
      } catch (Exception e) {
        LOG.warn("deallocating block slot {} on {} failed: {}", slots.get(i), uri, e.toString());
      }
    }
    return done;
  }

  /** Stops heartbeats, disconnects and stops the embedded target, if any. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    link.close();
    NvmfController c = controller;
    if (c != null) {
      c.close();
    }
    closeEmbedded();
    lifeCycle.closed();
  }

  private void closeEmbedded() {
    if (embedded != null) {
      embedded.close();
    }
  }
}
