package io.ember.datanode.dram;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.SVCPostRecv;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.rdma.CmEvents;
import io.ember.rdma.CompletionPoller;
import io.ember.rdma.RetryingConnParam;
import io.ember.rdma.Verbs;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided RDMA access to a DRAM data node's region, as Crail's DRAM tier serves it: clients post
 * RDMA READ and WRITE against the region, and the data node's CPU is not on the data path.
 *
 * <p>Access is granted per block slot. Each slot a client asks for is registered as its own memory
 * region, for the block generation the grant was checked against, and its key is handed out. When
 * the slot moves to another generation (the block was freed and given to a new file) or the node's
 * contents change, the registration is dropped, so a client that kept an old key is refused by the
 * device itself (a remote access error) instead of reaching the new file's bytes. The stale client
 * asks the name node again, as it would after a refused TCP read.
 *
 * <p>A slot is registered twice at most: a read grant hands out the key of a registration the
 * device lets clients only read, so a reader's key cannot write the block, whatever its holder
 * posts. Under block tokens each registration is also dropped once the last token it was granted
 * under has expired, so a key does not outlive the access the name node gave.
 *
 * <p>A client follows each RDMA WRITE with a small SEND on the same connection saying what it wrote
 * (the connection keeps them in order); the data node counts those bytes as written, for the name
 * node's lease recovery, as it counts TCP writes. One thread reads connection events and one reads
 * those notices.
 */
final class RdmaBlockServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockServer.class);

  /** Receives posted per connection: the most writes a client may have in flight on one. */
  static final int RECEIVES_PER_CONNECTION = 64;

  /** A write notice: incarnation, block id, generation, address (8 bytes each), length (4). */
  static final int NOTICE_BYTES = 36;

  private static final int NOTICE_SLOT = 64;
  private static final int MAX_CONNECTIONS = 256;

  /** What the data node does with a write notice. */
  interface Notices {
    void wrote(long incarnation, long blockId, long generation, long address, int length);
  }

  private final DramRegion region;
  private final Notices notices;
  private final String where;

  private final RdmaEventChannel events;
  private final RdmaCmId listenId;
  private final IbvPd pd;
  private final IbvCompChannel compChannel;
  private final IbvCQ cq;
  private final int port;

  /** What a client needs to reach a slot: its first byte's remote address and its key. */
  record Key(long remoteAddress, int rkey) {}

  /** How often registrations whose tokens have all expired are looked for. */
  private static final long EXPIRY_SWEEP_MILLIS = 1000;

  /**
   * A slot's registrations for one block generation, each made when first granted and kept until
   * the last token it was granted under expires: {@code reader} lets clients read the slot, {@code
   * writer} read and write it. Changed under the slot's stripe lock.
   */
  private static final class Registration {
    final long generation;
    IbvMr reader;
    long readerUntil;
    IbvMr writer;
    long writerUntil;

    Registration(long generation) {
      this.generation = generation;
    }

    void dropExpired(long nowMillis) {
      if (reader != null && readerUntil < nowMillis) {
        dropReader();
      }
      if (writer != null && writerUntil < nowMillis) {
        dropWriter();
      }
    }

    boolean isEmpty() {
      return reader == null && writer == null;
    }

    /** When the first of its registrations may be dropped. */
    long earliestUntil() {
      return Math.min(
          reader == null ? Long.MAX_VALUE : readerUntil,
          writer == null ? Long.MAX_VALUE : writerUntil);
    }

    void deregister() {
      if (reader != null) {
        dropReader();
      }
      if (writer != null) {
        dropWriter();
      }
    }

    private void dropReader() {
      Verbs.deregister(reader);
      reader = null;
    }

    private void dropWriter() {
      Verbs.deregister(writer);
      writer = null;
    }
  }

  /**
   * No registration expires before this: the sweep looks through the registrations only once it has
   * passed (never, on a node without block tokens).
   */
  private final AtomicLong earliestExpiry = new AtomicLong(Long.MAX_VALUE);

  /** Registered slots by their first byte's address; changed under the slot's stripe lock. */
  private final Map<Long, Registration> registrations = new ConcurrentHashMap<>();

  private final Object[] stripes = new Object[64];

  /** The contents grants are for; changed under every stripe lock. */
  private long currentIncarnation;

  private final Map<Integer, Connection> byNumber = new ConcurrentHashMap<>();
  private final IdentityHashMap<RdmaCmId, Connection> byId = new IdentityHashMap<>();
  private int nextNumber;
  private volatile boolean running = true;
  private volatile boolean paused;
  private final Object pauseLock = new Object();
  private final Thread cmThread;
  private final Thread noticeThread;
  private final Thread expiryThread;

  /** A client's connection: its queue pair and the receive buffers its notices land in. */
  private static final class Connection {
    final int number;
    final RdmaCmId id;
    IbvQP qp;
    ByteBuffer buffers;
    IbvMr buffersMr;
    final SVCPostRecv[] receives = new SVCPostRecv[RECEIVES_PER_CONNECTION];
    boolean closed;

    Connection(int number, RdmaCmId id) {
      this.number = number;
      this.id = id;
    }
  }

  private RdmaBlockServer(DramRegion region, InetSocketAddress bind, Notices notices, String where)
      throws IOException {
    this.region = region;
    this.notices = notices;
    this.where = where;
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Object();
    }
    events = RdmaEventChannel.createEventChannel();
    listenId = events.createId(RdmaCm.RDMA_PS_TCP);
    listenId.bindAddr(bind);
    if (listenId.getVerbs() == null) {
      throw new IOException(
          bind.getAddress().getHostAddress()
              + " is not an address of an RDMA device: bind the data node to one (--host)");
    }
    listenId.listen(128);
    port = ((InetSocketAddress) listenId.getSource()).getPort();
    pd = listenId.getVerbs().allocPd();
    compChannel = listenId.getVerbs().createCompChannel();
    cq = listenId.getVerbs().createCQ(compChannel, RECEIVES_PER_CONNECTION * MAX_CONNECTIONS, 0);
    cmThread = new Thread(this::readConnectionEvents, "dram-rdma-cm");
    cmThread.setDaemon(true);
    noticeThread = new Thread(this::readNotices, "dram-rdma-notices");
    noticeThread.setDaemon(true);
    expiryThread = new Thread(this::sweepExpired, "dram-rdma-expiry");
    expiryThread.setDaemon(true);
    cmThread.start();
    noticeThread.start();
    expiryThread.start();
  }

  /**
   * Listens for RDMA connections on {@code bind}, which must be an address of an RDMA device.
   *
   * @throws EmberException {@link ErrorCode#UNREACHABLE} when it cannot listen there
   */
  static RdmaBlockServer start(
      DramRegion region, InetSocketAddress bind, Notices notices, String where)
      throws EmberException {
    try {
      return new RdmaBlockServer(region, bind, notices, where);
    } catch (IOException | RuntimeException e) {
      throw new EmberException(
          ErrorCode.UNREACHABLE,
          "the DRAM data node cannot serve RDMA at " + bind + ": " + e.getMessage(),
          e);
    }
  }

  /** The RDMA connection manager's port clients connect to. */
  int port() {
    return port;
  }

  /**
   * Stops (or restarts) taking write notices, as a stalled process would; the device still serves
   * one-sided reads and writes meanwhile. For tests.
   */
  void pause(boolean pause) {
    synchronized (pauseLock) {
      paused = pause;
      pauseLock.notifyAll();
    }
  }

  /** Connections open now. */
  int connections() {
    return byNumber.size();
  }

  /** Slots registered now. */
  int registeredSlots() {
    return registrations.size();
  }

  private Object stripe(long slotAddress) {
    // Slot addresses are multiples of a power of two: spread them with a multiplicative hash.
    return stripes[(int) ((slotAddress * 0x9E3779B97F4A7C15L) >>> 58)];
  }

  /**
   * The key of the block slot of {@code blockSize} bytes at {@code slotAddress}, registered for
   * {@code generation} of contents {@code incarnation}, which the caller checked the slot holds
   * (under the generations' lock for the slot, so it cannot move meanwhile). An earlier
   * generation's registrations are dropped first.
   *
   * @param forWrite whether the key may write the slot; a read key only reads it
   * @param holdsUntilMillis when the token this grant was checked against expires ({@link
   *     Long#MAX_VALUE} without tokens): the key is dropped once every token it was granted under
   *     has expired
   * @return the remote address of the slot's first byte and its key
   * @throws EmberException {@link ErrorCode#STALE_LOCATION} when the node's contents changed since
   *     the check; {@link ErrorCode#INTERNAL} when the device refuses the registration
   */
  Key grant(
      long incarnation,
      long slotAddress,
      int blockSize,
      long generation,
      boolean forWrite,
      long holdsUntilMillis)
      throws EmberException {
    synchronized (stripe(slotAddress)) {
      if (incarnation != currentIncarnation) {
        // Checked against contents this node no longer serves: a key now would outlive them.
        throw new EmberException(
            ErrorCode.STALE_LOCATION,
            where + " registered anew while the grant was checked; ask the name node again");
      }
      Registration r = registrations.get(slotAddress);
      if (r == null || r.generation != generation) {
        if (r != null) {
          registrations.remove(slotAddress);
          r.deregister();
        }
        r = new Registration(generation);
        registrations.put(slotAddress, r);
      }
      IbvMr mr = forWrite ? r.writer : r.reader;
      if (mr == null) {
        try {
          mr =
              Verbs.register(
                  pd,
                  region.window(slotAddress, blockSize),
                  forWrite ? Verbs.ACCESS_ALL : IbvMr.IBV_ACCESS_REMOTE_READ);
        } catch (IOException e) {
          if (r.isEmpty()) {
            registrations.remove(slotAddress);
          }
          throw new EmberException(
              ErrorCode.INTERNAL,
              where + " could not register block memory for RDMA: " + e.getMessage(),
              e);
        }
        if (forWrite) {
          r.writer = mr;
        } else {
          r.reader = mr;
        }
      }
      if (forWrite) {
        r.writerUntil = Math.max(r.writerUntil, holdsUntilMillis);
      } else {
        r.readerUntil = Math.max(r.readerUntil, holdsUntilMillis);
      }
      earliestExpiry.accumulateAndGet(r.earliestUntil(), Math::min);
      return new Key(mr.getAddr(), mr.getRkey());
    }
  }

  /** Drops the registrations whose every token has expired by {@code nowMillis}. */
  void dropExpired(long nowMillis) {
    if (nowMillis < earliestExpiry.get()) {
      return;
    }
    // Reset first, then fold in what stays: a grant made meanwhile folds in its own expiry.
    earliestExpiry.set(Long.MAX_VALUE);
    for (Long slotAddress : List.copyOf(registrations.keySet())) {
      synchronized (stripe(slotAddress)) {
        Registration r = registrations.get(slotAddress);
        if (r != null) {
          r.dropExpired(nowMillis);
          if (r.isEmpty()) {
            registrations.remove(slotAddress);
          } else {
            earliestExpiry.accumulateAndGet(r.earliestUntil(), Math::min);
          }
        }
      }
    }
  }

  /**
   * Drops the registration of the slot at {@code slotAddress} unless it is for {@code generation}:
   * the slot now holds that generation under contents {@code incarnation}, and keys of any other
   * must stop working. A move in a table of earlier contents changes nothing.
   */
  void slotMoved(long incarnation, long slotAddress, long generation) {
    synchronized (stripe(slotAddress)) {
      if (incarnation != currentIncarnation) {
        return;
      }
      Registration r = registrations.get(slotAddress);
      if (r != null && r.generation != generation) {
        registrations.remove(slotAddress);
        r.deregister();
      }
    }
  }

  /**
   * Drops every slot's registration and grants keys for contents {@code incarnation} only from now
   * on: the node's contents changed, so every key handed out dies, and a grant checked against the
   * old contents that races this is refused.
   */
  void contentsChanged(long incarnation) {
    for (Object stripe : stripes) {
      synchronized (stripe) {
        // Set under every stripe, so a grant holding any one sees it.
        currentIncarnation = incarnation;
      }
    }
    for (Long slotAddress : List.copyOf(registrations.keySet())) {
      synchronized (stripe(slotAddress)) {
        Registration r = registrations.remove(slotAddress);
        if (r != null) {
          r.deregister();
        }
      }
    }
  }

  /** Drops expired registrations until the server closes, on a thread of its own. */
  private void sweepExpired() {
    while (running) {
      try {
        Thread.sleep(EXPIRY_SWEEP_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
      try {
        dropExpired(System.currentTimeMillis());
      } catch (RuntimeException e) {
        LOG.warn("{}: dropping expired RDMA registrations failed: {}", where, e.toString());
      }
    }
  }

  private void readConnectionEvents() {
    while (running) {
      RdmaCmEvent ev;
      try {
        ev = events.getCmEvent(100);
      } catch (IOException e) {
        if (running) {
          LOG.warn("{}: reading RDMA connection events failed, no new clients: {}", where, e);
        }
        return;
      }
      if (ev == null) {
        continue;
      }
      int type = ev.getEvent();
      RdmaCmId id = ev.getConnIdPriv();
      try {
        ev.ackEvent();
      } catch (IOException e) {
        LOG.debug("{}: acknowledging an RDMA event failed: {}", where, e.toString());
      }
      if (type == CmEvents.CONNECT_REQUEST) {
        accept(id);
      } else if (type == CmEvents.DISCONNECTED || type == CmEvents.DEVICE_REMOVAL) {
        Connection c;
        synchronized (byId) {
          c = byId.remove(id);
        }
        if (c != null) {
          LOG.debug("{}: RDMA client {} disconnected", where, c.number);
          teardown(c);
        }
      }
    }
  }

  @SuppressWarnings("JdkObsolete") // DiSNI's work requests take LinkedLists
  private void accept(RdmaCmId id) {
    Connection c;
    synchronized (byId) {
      if (byId.size() >= MAX_CONNECTIONS) {
        LOG.warn("{}: refused an RDMA client: {} are connected already", where, MAX_CONNECTIONS);
        destroy(id);
        return;
      }
      if (!running) {
        destroy(id);
        return;
      }
      int number = nextNumber;
      while (byNumber.containsKey(number)) {
        number = (number + 1) & 0xFFFF;
      }
      nextNumber = (number + 1) & 0xFFFF;
      c = new Connection(number, id);
    }
    try {
      IbvQPInitAttr attr = new IbvQPInitAttr();
      attr.setQp_type(IbvQP.IBV_QPT_RC);
      attr.setSend_cq(cq);
      attr.setRecv_cq(cq);
      attr.cap().setMax_send_wr(1);
      attr.cap().setMax_recv_wr(RECEIVES_PER_CONNECTION);
      attr.cap().setMax_send_sge(1);
      attr.cap().setMax_recv_sge(1);
      c.qp = id.createQP(pd, attr);
      c.buffers =
          ByteBuffer.allocateDirect(NOTICE_SLOT * RECEIVES_PER_CONNECTION)
              .order(ByteOrder.LITTLE_ENDIAN);
      c.buffersMr = Verbs.register(pd, c.buffers, IbvMr.IBV_ACCESS_LOCAL_WRITE);
      byNumber.put(c.number, c);
      for (int i = 0; i < RECEIVES_PER_CONNECTION; i++) {
        IbvSge sge = new IbvSge();
        sge.setAddr(c.buffersMr.getAddr() + (long) i * NOTICE_SLOT);
        sge.setLength(NOTICE_SLOT);
        sge.setLkey(c.buffersMr.getLkey());
        LinkedList<IbvSge> sgl = new LinkedList<>();
        sgl.add(sge);
        IbvRecvWR wr = new IbvRecvWR();
        wr.setWr_id(((long) c.number << 16) | i);
        wr.setSg_list(sgl);
        c.receives[i] = c.qp.postRecv(List.of(wr), null);
        c.receives[i].execute();
      }
      synchronized (byId) {
        byId.put(id, c);
      }
      id.accept(new RetryingConnParam());
    } catch (IOException | RuntimeException e) {
      LOG.warn("{}: could not accept an RDMA client: {}", where, e.toString());
      synchronized (byId) {
        byId.remove(id);
      }
      teardown(c);
    }
  }

  /** Tears {@code c} down from the connection-event thread's side, not the notice thread's. */
  private void closeLater(Connection c) {
    synchronized (byId) {
      byId.remove(c.id);
    }
    Thread t = new Thread(() -> teardown(c), "dram-rdma-teardown");
    t.setDaemon(true);
    t.start();
  }

  private void teardown(Connection c) {
    synchronized (c) {
      if (c.closed) {
        return;
      }
      c.closed = true;
      byNumber.remove(c.number);
      try {
        c.id.disconnect();
      } catch (IOException e) {
        LOG.debug("{}: disconnecting RDMA client {} failed: {}", where, c.number, e.toString());
      }
      try {
        if (c.qp != null) {
          c.id.destroyQP();
        }
      } catch (IOException e) {
        LOG.debug("{}: destroying a queue pair failed: {}", where, e.toString());
      }
      for (SVCPostRecv r : c.receives) {
        if (r != null) {
          r.free();
        }
      }
      if (c.buffersMr != null) {
        Verbs.deregister(c.buffersMr);
      }
    }
    destroy(c.id);
  }

  private void destroy(RdmaCmId id) {
    try {
      id.destroyId();
    } catch (IOException e) {
      LOG.debug("{}: destroying an RDMA id failed: {}", where, e.toString());
    }
  }

  private void readNotices() {
    try (CompletionPoller poller = new CompletionPoller(cq, compChannel, 32)) {
      while (running) {
        if (paused) {
          // A stalled process takes no notices: once a client's receives are used up, its
          // writes wait (receiver not ready) until it resumes.
          synchronized (pauseLock) {
            while (paused && running) {
              pauseLock.wait(100);
            }
          }
          continue;
        }
        int n = poller.next(100);
        for (int i = 0; i < n; i++) {
          try {
            notice(poller.completion(i));
          } catch (IOException | RuntimeException e) {
            // One connection's trouble must not stop the notices of every other.
            LOG.warn("{}: an RDMA write notice failed: {}", where, e.toString());
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      if (running) {
        LOG.error(
            "{}: reading RDMA write notices failed, RDMA writes will stall: {}",
            where,
            e.toString());
      }
    }
  }

  private void notice(IbvWC wc) throws IOException {
    long wrId = wc.getWr_id();
    Connection c = byNumber.get((int) (wrId >>> 16));
    if (c == null || wc.getStatus() != 0) {
      return; // flushed as its connection went
    }
    int i = (int) (wrId & 0xFFFF);
    int off = i * NOTICE_SLOT;
    long incarnation;
    long blockId;
    long generation;
    long address;
    int length;
    synchronized (c) {
      if (c.closed) {
        return;
      }
      ByteBuffer b = c.buffers;
      incarnation = b.getLong(off);
      blockId = b.getLong(off + 8);
      generation = b.getLong(off + 16);
      address = b.getLong(off + 24);
      length = b.getInt(off + 32);
      boolean whole = wc.getByte_len() == NOTICE_BYTES;
      try {
        c.receives[i].execute();
      } catch (IOException e) {
        LOG.warn("{}: RDMA client {} cannot take more notices: {}", where, c.number, e.toString());
        closeLater(c);
        return;
      }
      if (!whole) {
        LOG.warn("{}: an RDMA client sent a notice of {} bytes; ignored", where, wc.getByte_len());
        return;
      }
    }
    notices.wrote(incarnation, blockId, generation, address, length);
  }

  /** Disconnects every client, drops every registration and stops both threads. */
  @Override
  public void close() {
    running = false;
    pause(false);
    List<Connection> all;
    synchronized (byId) {
      all = new ArrayList<>(byId.values());
      byId.clear();
    }
    for (Connection c : all) {
      teardown(c);
    }
    expiryThread.interrupt();
    for (Thread t : List.of(cmThread, noticeThread, expiryThread)) {
      try {
        t.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (byId) {
      all = new ArrayList<>(byId.values());
      byId.clear();
    }
    for (Connection c : all) {
      teardown(c); // accepted while the first round ran
    }
    contentsChanged(-1);
    Verbs.freeEach(
        where,
        cq::destroyCQ,
        compChannel::destroyCompChannel,
        pd::deallocPd,
        listenId::destroyId,
        events::destroyEventChannel);
  }
}
