package io.ember.datanode;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.LifeCycle;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcClients;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A data node's side of the name node protocol: registers, heartbeats on a timer, registers again
 * when the name node forgets it (a restart, or it was marked lost), and deallocates the blocks the
 * name node hands back for trimming. Shared by every kind of data node.
 *
 * <p>Deallocation runs on a thread of its own and is reported at the first heartbeat after it ends:
 * a target slow to deallocate must not hold up heartbeats, or the name node would mark a node lost
 * that serves its blocks well.
 *
 * <p>A node the name node marked lost only because its heartbeats were late (a stalled JVM, a
 * loaded machine) registers again as the same node and gets its blocks back. While {@code healthy}
 * says no (an NVMf target that went away), no heartbeat is sent, so the name node marks the node
 * lost; once healthy again the node registers as a new node, since it cannot vouch for what the
 * target holds, unless its {@link Stamp} shows the storage still records its incarnation (the
 * contents survived), in which case it asks to come back under it.
 *
 * <p>Every registration first offers the incarnation the storage records, asking only to come back
 * ({@link Messages.RegisterRequest#reviving}); a name node that does not know it (it restarted)
 * refuses, and the node records a new incarnation on the storage and registers as a new node. So a
 * block location names contents the storage holds, never an older node's.
 */
public final class NameNodeLink implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NameNodeLink.class);

  private final String name;
  private final HostPort namenode;
  private final RpcClients connections;
  private final Messages.RegisterRequest registration;
  private final Function<List<Long>, List<Long>> trimmer;
  private final BooleanSupplier healthy;
  private final Stamp stamp;
  private final ScheduledExecutorService timer;

  /** The heartbeat task, once started. */
  private volatile ScheduledFuture<?> heartbeats;

  private final long intervalMillis;
  private final LifeCycle lifeCycle;
  private volatile int datanodeId = -1;

  /** While set, no heartbeat or registration is sent, as from a stalled process. */
  private volatile boolean suspended;

  private volatile int blockSize;

  /** The greeting whose exchange masked the block keys; null when they come in the clear. */
  private final io.ember.protocol.Greeting.Password unmasker;

  /**
   * The keys the name node signs block tokens with, by id, as its last registration or heartbeat
   * answer named them (none on a cluster without TLS or SCRAM).
   */
  private volatile java.util.Map<Integer, io.ember.protocol.BlockKey> blockKeys =
      java.util.Map.of();

  /** A block report is owed to the name node (heartbeat thread only). */
  private boolean reportPending;

  /** Runs {@link #trimmer}, one batch at a time. */
  private final ExecutorService deallocator;

  /**
   * Guards the deallocation hand-offs below: the heartbeat thread hands slots over and takes the
   * report, the deallocator works through them.
   */
  private final Object deallocation = new Object();

  /** Slots the latest heartbeat answer sent that no batch has taken yet. */
  private final Set<Long> toDeallocate = new LinkedHashSet<>();

  /** Slots deallocated and not yet reported, oldest first. */
  private final List<Long> deallocated = new ArrayList<>();

  /** A batch is running or about to: slots handed over now go once it ends. */
  private boolean deallocating;

  /**
   * Counts registrations: a batch that ends after the node registered again is not reported, as the
   * name node sends again what it had not heard back about.
   */
  private long registrations;

  /**
   * Where a data node records which incarnation its storage's contents belong to. Clients that
   * reach the storage without the data node check it against the incarnation their block locations
   * name.
   */
  public interface Stamp {
    /**
     * The incarnation the storage records, or 0 when it records none.
     *
     * @throws EmberException when the storage cannot be asked; the node does not register
     */
    long held() throws EmberException;

    /**
     * Records {@code incarnation}, which replaces {@code replacing} (0 for none), before the node
     * registers under it.
     *
     * @throws EmberException when it cannot; the node does not register until it can
     */
    void record(long incarnation, long replacing) throws EmberException;

    /** The node could not serve its blocks for a while; storage that cannot tell forgets. */
    default void cannotVouch() {}

    /**
     * What the storage can say block by block of the contents it holds: each written slot and the
     * generation written there; empty when it cannot tell (the stamp vouches for all or nothing).
     */
    default List<Messages.HeldBlock> heldBlocks() {
      return List.of();
    }
  }

  /**
   * A stamp kept in the data node's memory, for storage that lives and dies with the process
   * (DRAM). It is forgotten if the node's health check ever fails, since memory cannot tell whether
   * its contents survived.
   */
  public static final class MemoryStamp implements Stamp {
    private volatile long incarnation;
    private final java.util.function.Supplier<List<Messages.HeldBlock>> blocks;

    /** A stamp whose storage reports no blocks. */
    public MemoryStamp() {
      this(List::of);
    }

    /** A stamp whose storage reports {@code blocks} (called on the heartbeat thread). */
    public MemoryStamp(java.util.function.Supplier<List<Messages.HeldBlock>> blocks) {
      this.blocks = blocks;
    }

    @Override
    public List<Messages.HeldBlock> heldBlocks() {
      return blocks.get();
    }

    @Override
    public long held() {
      return incarnation;
    }

    @Override
    public void record(long incarnation, long replacing) {
      this.incarnation = incarnation;
    }

    @Override
    public void cannotVouch() {
      incarnation = 0;
    }
  }

  /**
   * A link that registers {@code registration} with the name node of {@code config}.
   *
   * @param name how logs name this data node, e.g. "DRAM data node at 127.0.0.1:4000"
   * @param trimmer deallocates the given block slots and returns those it did; runs on a thread of
   *     its own, one batch at a time, and should stop early when that thread is interrupted (the
   *     link is closing)
   * @param healthy whether the node can serve its blocks now (heartbeat thread)
   * @param stamp where the storage records its incarnation (heartbeat thread)
   */
  public NameNodeLink(
      EmberConfig config,
      String name,
      Messages.RegisterRequest registration,
      Function<List<Long>, List<Long>> trimmer,
      BooleanSupplier healthy,
      Stamp stamp) {
    this.name = name;
    this.stamp = stamp;
    this.namenode =
        HostPort.parse(config.get(EmberKeys.NAMENODE_ADDRESS), EmberKeys.DEFAULT_NAMENODE_PORT);
    this.registration = registration;
    this.trimmer = trimmer;
    this.healthy = healthy;
    io.ember.protocol.Greeting greeting = EmberKeys.greeting(config);
    this.connections = new RpcClients(config, "datanode-namenode", 1);
    if (greeting != null) {
      // A data node with a password proves it as each name node connection opens.
      connections.greet(namenode, greeting);
    }
    // Without TLS, the name node masks its block keys with what the password exchange agreed.
    this.unmasker =
        greeting instanceof io.ember.protocol.Greeting.Password password
                && !EmberKeys.secured(config)
            ? password
            : null;
    Duration interval = config.get(EmberKeys.HEARTBEAT_INTERVAL);
    this.intervalMillis = interval.toMillis();
    this.lifeCycle = new LifeCycle(name + " link");
    this.timer = Executors.newSingleThreadScheduledExecutor(daemon("datanode-heartbeat"));
    this.deallocator = Executors.newSingleThreadExecutor(daemon("datanode-deallocate"));
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /** Registers now (or keeps trying in the background) and starts heartbeats. */
  public void start() {
    lifeCycle.beginStart();
    try {
      register();
    } catch (EmberException e) {
      LOG.warn(
          "{}: not registered with name node {} yet ({}); retrying every {} ms",
          name,
          namenode,
          e.getMessage(),
          intervalMillis);
    }
    heartbeats =
        timer.scheduleWithFixedDelay(
            this::beat, intervalMillis, intervalMillis, TimeUnit.MILLISECONDS);
    lifeCycle.started();
  }

  /** The id the name node gave this node, or -1 while unregistered. */
  public int datanodeId() {
    return datanodeId;
  }

  /** The cluster block size learnt at registration, or 0 before. */
  public int blockSize() {
    return blockSize;
  }

  private void register() throws EmberException {
    awaitDeallocationsEnded();
    long held = stamp.held();
    if (held != 0) {
      boolean revived = false;
      try {
        registered(send(registration.reviving(held)));
        revived = true;
      } catch (EmberException e) {
        if (e.code() != ErrorCode.UNKNOWN_DATANODE) {
          throw e;
        }
        LOG.info(
            "{}: the name node does not know the contents it holds; registering as a new " + "node",
            name);
      }
      if (revived) {
        // Outside the try: a report that fails must not make the node give up its contents.
        reportPending = true;
        reportIfPending();
        return;
      }
      // A report owed for contents the name node no longer knows is owed no more.
      reportPending = false;
    }
    long fresh = newIncarnation();
    stamp.record(fresh, held);
    registered(send(registration.withIncarnation(fresh)));
  }

  /**
   * Tells the name node, which took this node back with contents it knew, which generation each
   * written slot holds: one it does not know of means a block of its namespace was overwritten. A
   * report that fails is sent again after the next heartbeat; the node stays registered.
   */
  private void reportIfPending() {
    if (!reportPending) {
      return;
    }
    try {
      reportBlocks(stamp.held());
      reportPending = false;
    } catch (EmberException e) {
      if (e.code() == ErrorCode.UNKNOWN_MESSAGE) {
        reportPending = false;
        LOG.warn("{}: the name node takes no block reports ({})", name, e.getMessage());
      } else {
        LOG.info(
            "{}: block report failed ({}); sent again after the next heartbeat",
            name,
            e.getMessage());
      }
    }
  }

  private void reportBlocks(long incarnation) throws EmberException {
    List<Messages.HeldBlock> blocks = stamp.heldBlocks();
    int id = datanodeId;
    for (int from = 0; from < blocks.size(); from += Messages.BlockReportRequest.MAX_REPORTED) {
      Messages.BlockReportRequest part =
          new Messages.BlockReportRequest(
              id,
              incarnation,
              blocks.subList(
                  from, Math.min(blocks.size(), from + Messages.BlockReportRequest.MAX_REPORTED)));
      callNamenode(MessageType.BLOCK_REPORT, part, io.ember.protocol.ResponseDecoder.EMPTY);
    }
    if (!blocks.isEmpty()) {
      LOG.info("{}: reported {} written blocks to the name node", name, blocks.size());
    }
  }

  /** One call to the name node, waited for on this (the heartbeat) thread. */
  private <T> T callNamenode(
      MessageType type,
      io.ember.protocol.Message body,
      io.ember.protocol.ResponseDecoder<T> decoder)
      throws EmberException {
    return Futures.await(
        connections.get(namenode, "name node").thenCompose(c -> c.call(type, body, decoder)));
  }

  private Messages.RegisterResponse send(Messages.RegisterRequest request) throws EmberException {
    return callNamenode(MessageType.REGISTER_DATANODE, request, Messages.RegisterResponse::decode);
  }

  private void registered(Messages.RegisterResponse r) {
    blockSize = r.blockSize();
    useKeys(r.blockKeys());
    datanodeId = r.datanodeId();
    synchronized (deallocation) {
      // The name node sends again whatever it had not heard back about.
      registrations++;
      toDeallocate.clear();
      deallocated.clear();
    }
    LOG.info(
        "{}: registered as data node {} with {} blocks of {} bytes",
        name,
        r.datanodeId(),
        r.blockCount(),
        r.blockSize());
  }

  /**
   * Adds the name node's keys to those held, and drops held keys at their own expiry: a name node
   * that restarted names only its new keys, and tokens signed with the old ones still hold.
   */
  private synchronized void useKeys(List<io.ember.protocol.BlockKey> keys) {
    long now = System.currentTimeMillis();
    java.util.Map<Integer, io.ember.protocol.BlockKey> byId = new java.util.HashMap<>();
    for (io.ember.protocol.BlockKey k : blockKeys.values()) {
      if (k.expiresMillis() >= now) {
        byId.put(k.id(), k);
      }
    }
    byte[] wrap = unmasker == null ? null : unmasker.blockKeyWrap();
    for (io.ember.protocol.BlockKey k : keys) {
      byId.put(k.id(), wrap == null ? k : k.masked(wrap));
    }
    blockKeys = java.util.Map.copyOf(byId);
  }

  /**
   * The name node's block token key {@code id}, or null when it has not named it (or dropped it).
   */
  public io.ember.protocol.BlockKey blockKey(int id) {
    return blockKeys.get(id);
  }

  /**
   * Sends nothing more until {@link #resume}, as a process that stalled would: the name node marks
   * the node lost after its timeout. For tests of a data node that stops answering.
   */
  public void suspend() {
    suspended = true;
  }

  /** Heartbeats again after {@link #suspend} (registering again if the name node forgot it). */
  public void resume() {
    suspended = false;
  }

  private void beat() {
    if (suspended) {
      return;
    }
    try {
      if (!healthy.getAsBoolean()) {
        if (datanodeId >= 0) {
          LOG.warn("{}: cannot serve its blocks; heartbeats stop until it can", name);
          datanodeId = -1;
        }
        // Whatever comes back (a restarted target, say) may not hold what was written.
        stamp.cannotVouch();
        return;
      }
      if (datanodeId < 0) {
        register();
        return;
      }
      int id = datanodeId;
      List<Long> report;
      synchronized (deallocation) {
        // No more than the name node reads in one report; the rest go with the next heartbeats.
        report =
            List.copyOf(
                deallocated.subList(0, Math.min(deallocated.size(), Messages.MAX_TRIM_SLOTS)));
      }
      Messages.HeartbeatResponse r =
          callNamenode(
              MessageType.HEARTBEAT,
              new Messages.HeartbeatRequest(id, report),
              Messages.HeartbeatResponse::decode);
      synchronized (deallocation) {
        // Only this thread registers (which clears the list), and the deallocator only appends.
        deallocated.subList(0, report.size()).clear();
      }
      if (!r.toTrim().isEmpty()) {
        deallocateLater(r.toTrim());
      }
      useKeys(r.blockKeys());
      reportIfPending();
    } catch (EmberException e) {
      if (e.code() == ErrorCode.UNKNOWN_DATANODE) {
        LOG.warn(
            "{}: the name node does not know data node {}; registering again", name, datanodeId);
        datanodeId = -1;
        try {
          register();
        } catch (EmberException again) {
          LOG.warn("{}: registration failed: {}", name, again.getMessage());
        }
      } else {
        LOG.debug("{}: heartbeat failed: {}", name, e.getMessage());
      }
    } catch (RuntimeException e) {
      LOG.error("{}: heartbeat failed", name, e);
    }
  }

  /**
   * Hands {@code slots} to the deallocator: a batch running now takes them when it ends. They
   * replace slots an earlier heartbeat handed over that no batch has taken yet: those are left out
   * of the report and the name node sends them again after its retry delay, which assumes that a
   * deallocation goes out within seconds of its heartbeat. Kept in a queue behind a slow target,
   * one could go out after the name node sent it again, its second copy was done and the block was
   * reused, and zero the new data.
   */
  private void deallocateLater(List<Long> slots) {
    synchronized (deallocation) {
      toDeallocate.clear();
      toDeallocate.addAll(slots);
      if (deallocating) {
        return;
      }
      deallocating = true;
    }
    try {
      deallocator.execute(this::deallocatePending);
    } catch (RejectedExecutionException e) {
      // Closing: the slots are the name node's to send again.
      synchronized (deallocation) {
        idle();
      }
    }
  }

  /** No batch runs now; call holding {@link #deallocation}. */
  private void idle() {
    deallocating = false;
    deallocation.notifyAll();
  }

  /** Deallocates what the name node sent, a batch at a time, until nothing is left. */
  private void deallocatePending() {
    boolean ended = false;
    try {
      while (true) {
        List<Long> batch;
        long registration;
        synchronized (deallocation) {
          if (toDeallocate.isEmpty() || Thread.currentThread().isInterrupted()) {
            ended = true;
            idle();
            return;
          }
          batch = new ArrayList<>(toDeallocate);
          toDeallocate.clear();
          registration = registrations;
        }
        List<Long> done;
        try {
          done = trimmer.apply(batch);
        } catch (RuntimeException e) {
          LOG.error("{}: deallocating {} block slot(s) failed", name, batch.size(), e);
          done = List.of();
        }
        synchronized (deallocation) {
          if (registration == registrations) {
            deallocated.addAll(done);
          }
        }
      }
    } finally {
      if (!ended) {
        // An Error from the trimmer: the next heartbeat's slots start a batch again.
        synchronized (deallocation) {
          idle();
        }
      }
    }
  }

  /** The longest a registration waits for a batch of deallocations still running. */
  private static final Duration DEALLOCATION_DRAIN = Duration.ofSeconds(15);

  /**
   * Drops the slots no batch has taken and waits, up to {@link #DEALLOCATION_DRAIN}, for the batch
   * that runs, if any: a node that registers as new offers every block as free, and a deallocation
   * that went out after that could zero a block already written again.
   */
  private void awaitDeallocationsEnded() {
    long deadline = System.nanoTime() + DEALLOCATION_DRAIN.toNanos();
    synchronized (deallocation) {
      toDeallocate.clear();
      try {
        long left;
        while (deallocating && (left = deadline - System.nanoTime()) > 0) {
          TimeUnit.NANOSECONDS.timedWait(deallocation, left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (deallocating) {
        LOG.warn(
            "{}: registering while a batch of deallocations still runs after {} s",
            name,
            DEALLOCATION_DRAIN.toSeconds());
      }
    }
  }

  private static long newIncarnation() {
    long n;
    do {
      n = ThreadLocalRandom.current().nextLong();
    } while (n == 0);
    return n;
  }

  /** Stops heartbeats and closes the connection. Idempotent. */
  @Override
  public void close() {
    if (!lifeCycle.beginClose()) {
      return;
    }
    ScheduledFuture<?> beating = heartbeats;
    if (beating != null) {
      beating.cancel(false);
    }
    timer.shutdownNow();
    deallocator.shutdownNow();
    try {
      timer.awaitTermination(5, TimeUnit.SECONDS);
      deallocator.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    connections.close();
    lifeCycle.closed();
  }
}
