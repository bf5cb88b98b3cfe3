package io.ember.namenode;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The name node's write-ahead journal: numbered records appended to segment files in the name
 * node's directory, each with its length, sequence number and CRC32C, written and forced by one
 * thread so that a single {@code force()} covers every record waiting (group commit).
 *
 * <p>A segment is named after its first record's sequence number and starts with {@link #MAGIC} and
 * that number. A record is a 20-byte header (payload length, sequence number, the payload's CRC32C,
 * and the CRC32C of those 16 bytes) and the payload.
 *
 * <p>When a write fails (a full disk), the records stay queued and are written again every {@link
 * #RETRY_MILLIS} ms; until then every new change is refused with {@link ErrorCode#JOURNAL_FAILED}.
 */
final class Journal implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Journal.class);

  /** When an acknowledged change is on disk. */
  enum Sync {
    /** Forced before it is acknowledged: survives a power loss. */
    ALWAYS,
    /** Written before it is acknowledged and forced within {@link #BATCH_FORCE_MILLIS}. */
    BATCH,
    /** Written before it is acknowledged (survives the process, not the machine). */
    NONE;

    static Sync parse(String text) {
      return valueOf(text.trim().toUpperCase(Locale.ROOT));
    }
  }

  static final byte[] MAGIC = {'E', 'M', 'B', 'R', 'J', 'N', 'L', '1'};
  static final int SEGMENT_HEADER = MAGIC.length + 8;
  static final int RECORD_HEADER = 20;
  static final int MAX_RECORD = 64 << 20;
  static final long RETRY_MILLIS = 1000;
  static final long BATCH_FORCE_MILLIS = 100;
  static final long ANNOUNCE_WAIT_MILLIS = 200;
  private static final String PREFIX = "journal-";

  private final Path dir;
  private final Sync sync;
  private final long announceWaitMillis;
  private final Thread writer;

  // Guarded by this.
  private FileChannel channel;
  private Path segment;

  /** Where the next batch goes: everything before it was written whole. */
  private long goodLength;

  /**
   * The segment's size on disk: zeros past {@link #goodLength}, written ahead so that forcing a
   * record need not change the file's size (a metadata commit that costs as much as the force).
   * Written and read by the writer thread only, and by roll/close while it is idle.
   */
  private long preallocated;

  static final int PREALLOCATE = 8 << 20;

  private long nextSeq;
  private ByteBuffer pending = ByteBuffer.allocate(64 << 10);
  private long pendingLastSeq;

  /** Records are {@linkplain #queue queued} that no {@link #announce} has handed over yet. */
  private boolean unannounced;

  private long batchesWritten;

  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  private boolean writing;
  private boolean closed;
  private EmberException failure;
  private long appendedSinceRoll;

  private record Waiter(long seq, CompletableFuture<Void> done) {}

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  /** Checksums records as they are appended; guarded by this. */
  private final CRC32C crc = new CRC32C();

  private Journal(Path dir, Sync sync, long nextSeq, long announceWaitMillis) throws IOException {
    this.dir = dir;
    this.sync = sync;
    this.announceWaitMillis = announceWaitMillis;
    this.nextSeq = nextSeq;
    this.pendingLastSeq = nextSeq - 1;
    openSegment(nextSeq);
    writer = new Thread(this::writeLoop, "namenode-journal");
    writer.setDaemon(true);
    writer.start();
  }

  /**
   * Opens a new segment in {@code dir} whose first record will be {@code nextSeq}, and starts the
   * writer thread.
   */
  static Journal open(Path dir, Sync sync, long nextSeq) throws IOException {
    return open(dir, sync, nextSeq, ANNOUNCE_WAIT_MILLIS);
  }

  /** As {@link #open(Path, Sync, long)}, with how long a queued record waits for its announce. */
  static Journal open(Path dir, Sync sync, long nextSeq, long announceWaitMillis)
      throws IOException {
    return new Journal(dir, sync, nextSeq, announceWaitMillis);
  }

  private void openSegment(long firstSeq) throws IOException {
    Path path = dir.resolve(segmentName(firstSeq));
    FileChannel ch = Checkpoints.createOwnerOnly(path);
    try {
      ByteBuffer header = ByteBuffer.allocate(SEGMENT_HEADER);
      header.put(MAGIC).putLong(firstSeq).flip();
      while (header.hasRemaining()) {
        ch.write(header);
      }
      ch.force(true);
      Checkpoints.syncDirectory(dir);
    } catch (IOException e) {
      ch.close();
      throw e;
    }
    channel = ch;
    segment = path;
    goodLength = SEGMENT_HEADER;
    preallocated = SEGMENT_HEADER;
    appendedSinceRoll = 0;
  }

  static String segmentName(long firstSeq) {
    return Checkpoints.numberedName(PREFIX, firstSeq);
  }

  /** The first sequence number of a segment's file name, or -1 when it is not a segment. */
  static long segmentSeq(Path file) {
    return Checkpoints.numberOf(file, PREFIX);
  }

  /** Segments in {@code dir}, oldest first. */
  static List<Path> segments(Path dir) throws IOException {
    return Checkpoints.numbered(dir, PREFIX);
  }

  /**
   * Refuses a change while the journal cannot be written; call before applying the change, under
   * the lock that orders changes.
   */
  synchronized void checkWritable() throws EmberException {
    if (closed) {
      throw new EmberException(ErrorCode.CLOSED, "the name node is closing");
    }
    if (failure != null) {
      throw new EmberException(failure.code(), failure.getMessage());
    }
  }

  /**
   * Queues a record; call under the lock that orders changes, so records are numbered in the order
   * the changes were applied.
   *
   * @return completes when the record is as durable as {@link Sync} asks, or fails with {@link
   *     ErrorCode#JOURNAL_FAILED}
   */
  synchronized CompletableFuture<Void> append(byte[] payload) {
    CompletableFuture<Void> done = queue(payload);
    announce();
    return done;
  }

  /**
   * Queues a record of a change still under way, as {@link #append} does, but leaves it to {@link
   * #announce} to hand it to the writer: a change that makes several records (a create and its
   * first block) has them written and forced together, not the first alone and then the rest. A
   * record never announced is written anyway, at most twice {@link #ANNOUNCE_WAIT_MILLIS} ms late.
   */
  synchronized CompletableFuture<Void> queue(byte[] payload) {
    long seq = nextSeq++;
    int need = RECORD_HEADER + payload.length;
    if (pending.remaining() < need) {
      ByteBuffer bigger =
          ByteBuffer.allocate(Math.max(pending.capacity() * 2, pending.position() + need));
      pending.flip();
      bigger.put(pending);
      pending = bigger;
    }
    crc.reset();
    crc.update(payload);
    int headerAt = pending.position();
    pending.putInt(payload.length).putLong(seq).putInt((int) crc.getValue());
    crc.reset();
    crc.update(pending.array(), headerAt, 16);
    pending.putInt((int) crc.getValue());
    pending.put(payload);
    pendingLastSeq = seq;
    appendedSinceRoll++;
    unannounced = true;
    if (sync == Sync.NONE) {
      // Nothing is promised beyond the process: the answer need not wait for the write.
      return DONE;
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    waiters.add(new Waiter(seq, done));
    return done;
  }

  /** Hands the records queued so far to the writer: the change that made them is whole. */
  synchronized void announce() {
    if (unannounced) {
      unannounced = false;
      notifyAll();
    }
  }

  /** Completes once every record appended so far is as durable as {@link Sync} asks. */
  synchronized CompletableFuture<Void> barrier() {
    if (pending.position() == 0 && !writing && failure == null) {
      return DONE;
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    waiters.add(new Waiter(nextSeq - 1, done));
    return done;
  }

  /** Records appended to the current segment. */
  synchronized long appendedSinceRoll() {
    return appendedSinceRoll;
  }

  private void writeLoop() {
    long lastForce = System.nanoTime();
    boolean unforced = false;
    boolean waitedForAnnounce = false;
    long batchForceNanos = TimeUnit.MILLISECONDS.toNanos(BATCH_FORCE_MILLIS);
    while (true) {
      ByteBuffer batch;
      long batchLast;
      FileChannel ch;
      long at;
      synchronized (this) {
        while (true) {
          if (closed && (pending.position() == 0 || failure != null)) {
            return;
          }
          if (failure != null) {
            waitQuietly(RETRY_MILLIS);
            break;
          }
          if (pending.position() > 0) {
            if (!unannounced || waitedForAnnounce) {
              waitedForAnnounce = false;
              break;
            }
            // The change under way may queue more; should it never announce them, its records
            // are only late.
            waitedForAnnounce = true;
            waitQuietly(announceWaitMillis);
            continue;
          }
          if (unforced) {
            long due = lastForce + batchForceNanos - System.nanoTime();
            if (due <= 0) {
              break;
            }
            waitQuietly(Math.max(1, TimeUnit.NANOSECONDS.toMillis(due)));
          } else {
            // Queuing does not wake the writer: it looks now and then for records never announced.
            waitQuietly(announceWaitMillis);
          }
        }
        batch = pending.duplicate().flip();
        batchLast = pendingLastSeq;
        ch = channel;
        at = goodLength;
        writing = true;
      }
      int length = batch.remaining();
      try {
        if (at + length > preallocated && System.nanoTime() - preallocateAfter >= 0) {
          preallocate(ch, at, at + length);
        }
        ch.position(at);
        while (batch.hasRemaining()) {
          ch.write(batch);
        }
        if (sync == Sync.ALWAYS
            || (sync == Sync.BATCH && System.nanoTime() - lastForce >= batchForceNanos)) {
          ch.force(false);
          lastForce = System.nanoTime();
          unforced = false;
        } else if (length > 0 && sync == Sync.BATCH) {
          unforced = true;
        }
        written(length, batchLast);
      } catch (IOException e) {
        failed(ch, at, e);
      }
    }
  }

  /**
   * Extends the segment with zeros, forced with its new size, to past {@code needed}. A disk too
   * full for that only slows the journal down: records are then written without zeros ahead, and
   * writing ahead is tried again later.
   */
  private void preallocate(FileChannel ch, long goodEnd, long needed) {
    long from = Math.max(preallocated, goodEnd);
    long target = Math.max(needed, from + PREALLOCATE);
    ByteBuffer zeros = ByteBuffer.allocate(64 << 10);
    try {
      for (long at = from; at < target; ) {
        zeros.clear().limit((int) Math.min(zeros.capacity(), target - at));
        at += ch.write(zeros, at);
      }
      ch.force(true);
      preallocated = target;
    } catch (IOException e) {
      LOG.warn(
          "name node journal {}: cannot write {} bytes ahead ({}); writing records without",
          segment,
          target - from,
          e.toString());
      try {
        ch.truncate(from);
      } catch (IOException truncateFailed) {
        LOG.debug("name node journal {}: truncate failed", segment, truncateFailed);
      }
      preallocated = from;
      preallocateAfter = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    }
  }

  /** When writing ahead may be tried again after it failed. */
  private long preallocateAfter = System.nanoTime();

  /** Cuts the zeros written ahead off the segment, so a clean stop leaves no tail to drop. */
  private void trimPreallocation() {
    try {
      channel.truncate(goodLength);
    } catch (IOException e) {
      LOG.debug("name node journal {}: trimming its zeros failed", segment, e);
    }
  }

  /** Batches written so far: each is one write, and one force when every change is forced. */
  synchronized long batchesWritten() {
    return batchesWritten;
  }

  private synchronized void written(int length, long lastSeq) {
    batchesWritten++;
    // Records appended while the batch was written move to the front.
    pending.flip().position(length);
    pending.compact();
    goodLength += length;
    writing = false;
    if (failure != null) {
      LOG.warn("name node journal {} can be written again; changes are accepted", segment);
      failure = null;
    }
    while (!waiters.isEmpty() && waiters.peekFirst().seq <= lastSeq) {
      waiters.pollFirst().done.complete(null);
    }
    notifyAll();
  }

  private synchronized void failed(FileChannel ch, long at, IOException e) {
    writing = false;
    String why = e.getMessage() == null ? e.toString() : e.getMessage();
    EmberException failure =
        new EmberException(
            ErrorCode.JOURNAL_FAILED,
            "the name node cannot write its journal "
                + segment
                + " ("
                + why
                + "): changes are refused until it can; the last change may or may not be kept");
    if (this.failure == null) {
      LOG.error(
          "name node journal {}: write failed; retrying every {} ms", segment, RETRY_MILLIS, e);
    }
    this.failure = failure;
    try {
      // A batch written in part leaves a torn record: the next try writes it whole in its place.
      ch.truncate(at);
      preallocated = Math.min(preallocated, at);
    } catch (IOException truncateFailed) {
      LOG.debug("name node journal {}: truncate failed", segment, truncateFailed);
    }
    // Waiters hear now; their records stay queued and are written once the disk has room.
    while (!waiters.isEmpty()) {
      waiters.pollFirst().done.completeExceptionally(failure);
    }
    notifyAll();
  }

  /**
   * Writes and forces everything queued, then starts a new segment whose first record is the next
   * one. Call with changes held off (the state's read lock), so nothing is appended meanwhile.
   *
   * @return the sequence number of the last record before the new segment
   * @throws IOException when the journal cannot be written or the segment cannot be made
   */
  synchronized long roll() throws IOException {
    while ((pending.position() > 0 || writing) && failure == null && !closed) {
      waitQuietly(0);
    }
    if (failure != null) {
      throw new IOException(failure.getMessage());
    }
    if (closed) {
      throw new IOException("the journal is closed");
    }
    trimPreallocation();
    channel.force(true);
    channel.close();
    long last = nextSeq - 1;
    openSegment(nextSeq);
    return last;
  }

  // Every caller waits in a loop that re-checks its condition.
  @SuppressWarnings("WaitNotInLoop")
  private void waitQuietly(long millis) {
    try {
      wait(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  /** Writes and forces what is queued (unless the disk fails), then closes the segment. */
  @Override
  public void close() {
    synchronized (this) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while ((pending.position() > 0 || writing)
          && failure == null
          && System.nanoTime() < deadline) {
        waitQuietly(100);
      }
      closed = true;
      notifyAll();
    }
    try {
      writer.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      EmberException closedError = new EmberException(ErrorCode.CLOSED, "the name node closed");
      while (!waiters.isEmpty()) {
        waiters.pollFirst().done.completeExceptionally(closedError);
      }
      if (failure == null) {
        trimPreallocation();
      }
      try {
        channel.force(true);
      } catch (IOException e) {
        LOG.warn("name node journal {}: final force failed: {}", segment, e.toString());
      }
      try {
        channel.close();
      } catch (IOException e) {
        LOG.debug("name node journal {}: close failed", segment, e);
      }
    }
  }

  // ---- reading -----------------------------------------------------------------------------

  /** Receives each replayed record. */
  interface RecordSink {
    void accept(long seq, ByteBuffer payload) throws IOException;
  }

  /** What replay found. */
  record Replayed(long lastSeq, long records, long droppedBytes) {}

  /**
   * Replays every record after {@code afterSeq} from the segments in {@code dir}, in order. A torn
   * or corrupt tail of the last segment (a record cut short, or a last record whose CRC fails) ends
   * replay at the last good record; the file is cut there and the bytes dropped are logged.
   *
   * @throws CorruptJournalException naming the file and offset, for a damaged record that is not
   *     the tail (a flipped bit in the middle), a gap in sequence numbers, or a bad segment header
   */
  static Replayed replay(Path dir, long afterSeq, RecordSink sink) throws IOException {
    List<Path> segments = segments(dir);
    CRC32C crc = new CRC32C();
    long expected = afterSeq + 1;
    long count = 0;
    long dropped = 0;
    // Segments that end at or before the checkpoint are not needed; a later one must follow on.
    int first = 0;
    for (int i = 0; i < segments.size(); i++) {
      if (segmentSeq(segments.get(i)) <= expected) {
        first = i;
      }
    }
    for (int i = first; i < segments.size(); i++) {
      Path file = segments.get(i);
      boolean last = i == segments.size() - 1;
      ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.BIG_ENDIAN);
      long firstSeq = segmentSeq(file);
      if (bytes.remaining() < SEGMENT_HEADER) {
        if (last) {
          dropped += cut(file, bytes.remaining(), 0, "a segment header cut short");
          continue;
        }
        throw new CorruptJournalException(file, 0, "the segment header is cut short");
      }
      byte[] magic = new byte[MAGIC.length];
      bytes.get(magic);
      long headerSeq = bytes.getLong();
      if (!java.util.Arrays.equals(magic, MAGIC) || headerSeq != firstSeq) {
        throw new CorruptJournalException(file, 0, "not an Ember journal segment");
      }
      if (firstSeq > expected) {
        throw new CorruptJournalException(
            file, 0, "records " + expected + " to " + (firstSeq - 1) + " are missing");
      }
      long seqInFile = firstSeq;
      while (bytes.hasRemaining()) {
        int at = bytes.position();
        int left = bytes.remaining();
        String torn = null;
        if (left < RECORD_HEADER) {
          torn = "a record header cut short";
        } else {
          int length = bytes.getInt(at);
          long seq = bytes.getLong(at + 4);
          int payloadCrc = bytes.getInt(at + 12);
          int headerCrc = bytes.getInt(at + 16);
          crc.reset();
          crc.update(bytes.array(), at, 16);
          if ((int) crc.getValue() != headerCrc) {
            if (allZero(bytes, at)) {
              torn = "zeros after the last record";
            } else {
              throw new CorruptJournalException(file, at, "a record header fails its CRC32C");
            }
          } else if (length < 0 || length > MAX_RECORD) {
            throw new CorruptJournalException(file, at, "a record of length " + length);
          } else if (left - RECORD_HEADER < length) {
            torn = "a record cut short";
          } else {
            crc.reset();
            crc.update(bytes.array(), at + RECORD_HEADER, length);
            if ((int) crc.getValue() != payloadCrc) {
              if (allZero(bytes, at + RECORD_HEADER + length)) {
                torn = "a last record whose CRC32C fails";
              } else {
                throw new CorruptJournalException(file, at, "record " + seq + " fails its CRC32C");
              }
            } else if (seq != seqInFile) {
              throw new CorruptJournalException(
                  file, at, "record " + seq + " where " + seqInFile + " was due");
            } else {
              ByteBuffer payload =
                  ByteBuffer.wrap(bytes.array(), at + RECORD_HEADER, length).slice();
              if (seq >= expected) {
                try {
                  sink.accept(seq, payload);
                } catch (RuntimeException | IOException e) {
                  throw new CorruptJournalException(
                      file, at, "record " + seq + " cannot be applied: " + e.getMessage());
                }
                expected = seq + 1;
                count++;
              }
              seqInFile++;
              bytes.position(at + RECORD_HEADER + length);
            }
          }
        }
        if (torn != null) {
          if (!last) {
            throw new CorruptJournalException(file, at, torn + " before a later segment");
          }
          dropped += cut(file, left, at, torn);
          break;
        }
      }
    }
    return new Replayed(expected - 1, count, dropped);
  }

  private static boolean allZero(ByteBuffer bytes, int from) {
    for (int i = from; i < bytes.limit(); i++) {
      if (bytes.get(i) != 0) {
        return false;
      }
    }
    return true;
  }

  private static long cut(Path file, long bytes, long at, String why) throws IOException {
    if (why.startsWith("zeros")) {
      // The zeros written ahead of records: a stop that did not trim them, nothing lost.
      LOG.info("name node journal {}: {} bytes of zeros after the last record cut", file, bytes);
    } else {
      LOG.warn(
          "name node journal {}: dropped {} bytes at offset {} ({}); replay ends at the last good"
              + " record",
          file,
          bytes,
          at,
          why);
    }
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(at);
      ch.force(true);
    }
    return bytes;
  }

  /** A journal that cannot be replayed: the name node must not start with part of it. */
  static final class CorruptJournalException extends IOException {
    private static final long serialVersionUID = 1L;

    CorruptJournalException(Path file, long offset, String what) {
      super(
          "name node journal "
              + file
              + " is damaged at offset "
              + offset
              + ": "
              + what
              + "; the name node will not start with part of its namespace (restore the"
              + " directory from a copy, or format it to start empty)");
    }
  }
}
