package io.ember.client;

import io.ember.client.spi.StorageEndpoint;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Writes one Ember file, sequentially, straight to the data nodes. Blocks are allocated as the file
 * grows; up to a window of bytes is in flight at once, so writes overlap the network. Closing waits
 * for every write and publishes the file's length: readers see nothing of the file before that.
 *
 * <p>Not thread-safe: one writer per file. For a file many writers fill at once, use a multifile
 * with one child file per writer.
 *
 * <p>When a write to a data node fails, the next call to {@code write}, {@code flush} or {@code
 * close} throws an {@link EmberException} that names the file, the byte offset, the block and the
 * data node, and the stream gives its file up: the name node deletes it and frees its blocks, so a
 * failed write (a full tier, a lost data node) leaves nothing behind.
 *
 * <p>While the stream is open its client renews a lease on the file. If the client stops renewing
 * it (the process died or hung) for the name node's lease timeout, the name node closes the file at
 * the length the stream last reported its data nodes had acknowledged; the stream's next call then
 * fails with {@link ErrorCode#LEASE_RECOVERED}.
 */
public final class EmberOutputStream extends OutputStream {
  private final EmberClient client;
  private final String path;
  private final long fileId;
  private final int blockSize;
  private final int chunkLimit;
  private final boolean buffered;
  private final long window;
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  private long inFlightBytes;
  private long position;
  private ByteBuf buffer;

  /** The index of the first block of {@link #allocated}. */
  private int allocatedFrom = -1;

  /** Blocks from {@link #allocatedFrom} on, as the name node gave them (one or more). */
  private CompletableFuture<List<BlockLocation>> allocated;

  /** When {@link #allocated} was asked of the name node ({@link System#nanoTime()}). */
  private long allocatedAskedNanos;

  /** When {@link #allocated} was asked of the name node (wall clock, as block tokens count). */
  private long allocatedAskedMillis;

  private EmberException failure;
  private boolean closed;

  /** Bytes from the start of the file that the data nodes acknowledged. Guarded by this. */
  private final io.ember.protocol.ContiguousPrefix acknowledged =
      new io.ember.protocol.ContiguousPrefix();

  /** Set by the lease renewer when the name node recovered this file's lease. */
  private volatile boolean leaseLost;

  /** The file was given up (or closed): it is no longer renewed or abandoned again. */
  private boolean done;

  private record InFlight(CompletableFuture<Void> done, int bytes) {}

  EmberOutputStream(
      EmberClient client,
      String path,
      long fileId,
      int blockSize,
      int transferSize,
      int bufferSize,
      long window) {
    this.client = client;
    this.path = path;
    this.fileId = fileId;
    this.blockSize = blockSize;
    this.buffered = bufferSize > 0;
    this.chunkLimit = buffered ? Math.min(bufferSize, transferSize) : transferSize;
    this.window = Math.max(window, chunkLimit);
  }

  /** The file's path. */
  public String path() {
    return path;
  }

  long fileId() {
    return fileId;
  }

  /** Bytes from the start of the file the data nodes acknowledged (any thread). */
  synchronized long acknowledged() {
    return acknowledged.prefix();
  }

  /** A write of bytes {@code start} to {@code end} completed (a network thread). */
  private synchronized void acknowledge(long start, long end) {
    acknowledged.add(start, end);
  }

  /** The name node recovered this file's lease: the stream fails from now on. */
  void leaseLost() {
    leaseLost = true;
  }

  /** Bytes accepted so far: the file's length once closed. */
  public long position() {
    return position;
  }

  @Override
  public void write(int b) throws IOException {
    if (buffered) {
      checkUsable();
      if (buffer == null) {
        buffer = client.writeBuffers().take(chunkRoom(position));
      }
      buffer.writeByte(b);
      position++;
      if (!buffer.isWritable()) {
        sendBuffer();
      }
    } else {
      write(new byte[] {(byte) b}, 0, 1);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    checkUsable();
    while (len > 0) {
      if (buffered) {
        if (buffer == null) {
          buffer = client.writeBuffers().take(chunkRoom(position));
        }
        int n = Math.min(len, buffer.writableBytes());
        buffer.writeBytes(b, off, n);
        position += n;
        off += n;
        len -= n;
        if (!buffer.isWritable()) {
          sendBuffer();
        }
      } else {
        int n = Math.min(len, chunkRoom(position));
        ByteBuf piece = client.writeBuffers().take(n);
        piece.writeBytes(b, off, n);
        send(piece);
        off += n;
        len -= n;
      }
    }
  }

  /**
   * Writes {@code data} without copying it. One reference passes to this call; the stream releases
   * it when the data nodes have the bytes or the write failed. Does not wait for the window: pace
   * with the returned future.
   *
   * @return completes when every byte is on its data node
   * @throws IOException when the stream is closed or failed before
   */
  public CompletableFuture<Void> writeAsync(ByteBuf data) throws IOException {
    try {
      checkUsable();
      if (buffer != null && buffer.isReadable()) {
        sendBuffer();
      }
    } catch (IOException e) {
      data.release();
      throw e;
    }
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    try {
      while (data.isReadable()) {
        int n = Math.min(data.readableBytes(), chunkRoom(position));
        parts.add(sendNoWait(data.readRetainedSlice(n)));
      }
    } finally {
      data.release();
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
  }

  /**
   * Sends buffered bytes and waits until every byte written so far is on its data node. The file's
   * length is still unpublished: readers see it after {@link #close()}.
   *
   * @throws IOException the first write error of this stream
   */
  @Override
  public void flush() throws IOException {
    checkUsable();
    if (buffer != null && buffer.isReadable()) {
      sendBuffer();
    }
    waitFor(0);
  }

  /**
   * Waits for every write and publishes the file's length. Idempotent; after a failure the file is
   * left unpublished and the failure is thrown.
   *
   * @throws IOException the first write error, or the name node's refusal to close
   */
  @Override
  public void close() throws IOException {
    if (closed) {
      if (failure != null) {
        throw failed();
      }
      return;
    }
    try {
      if (failure == null && buffer != null && buffer.isReadable()) {
        sendBuffer();
      }
      waitFor(0);
    } catch (IOException e) {
      closed = true;
      releaseBuffer();
      throw e;
    }
    closed = true;
    releaseBuffer();
    if (nextRun != null) {
      // Answered before the close is sent, so the name node frees what the file did not use
      // rather than hand a closed file blocks; whether it gave them does not matter now.
      try {
        client.await(nextRun);
      } catch (EmberException unused) {
        // The close is refused if the name node cannot be reached, and a refused run gave nothing.
      }
      nextRun = null;
    }
    try {
      client.blocking(() -> client.closeFile(fileId, position));
    } catch (EmberException e) {
      failure = new EmberException(e.code(), "closing " + path + " failed: " + e.getMessage(), e);
      throw failed();
    } finally {
      done = true;
      client.stopWriting(this);
    }
  }

  /**
   * Gives the file up instead of publishing it, for a writer whose source failed: bytes not yet
   * sent are dropped, and the name node deletes the file and frees its blocks. Does nothing after
   * {@link #close}. If the name node cannot be told, the file's lease frees it later.
   */
  public void abort() {
    if (closed) {
      return;
    }
    closed = true;
    releaseBuffer();
    if (failure == null) {
      failure = new EmberException(ErrorCode.CLOSED, path + " was given up by its writer");
    }
    giveUp();
  }

  /**
   * After the first failure: the file is deleted so its blocks are free, unless the name node
   * already closed it (its lease was recovered).
   */
  private void giveUp() {
    if (done) {
      return;
    }
    done = true;
    client.stopWriting(this);
    if (failure.code() == ErrorCode.LEASE_RECOVERED) {
      return;
    }
    // Waited for, so a caller that retries at the same path as soon as the failure reaches it
    // finds the path free.
    try {
      client.blocking(() -> client.abandonFile(fileId));
    } catch (EmberException e) {
      org.slf4j.LoggerFactory.getLogger(EmberOutputStream.class)
          .warn(
              "{}: could not give up the file after a failed write ({}); its lease frees it",
              path,
              e.getMessage());
    }
  }

  private void releaseBuffer() {
    if (buffer != null) {
      buffer.release();
      buffer = null;
    }
  }

  /** Bytes from {@code pos} to the next chunk boundary (never across a block). */
  private int chunkRoom(long pos) {
    int inBlock = (int) (pos % blockSize);
    int toBlockEnd = blockSize - inBlock;
    int toChunkEnd = chunkLimit - (int) (pos % chunkLimit);
    return Math.min(toBlockEnd, toChunkEnd);
  }

  private void sendBuffer() throws IOException {
    ByteBuf b = buffer;
    buffer = null;
    long start = position - b.readableBytes();
    sendAt(start, b); // waitFor takes its outcome from inFlight
    waitFor(window);
  }

  private void send(ByteBuf piece) throws IOException {
    long start = position;
    position += piece.readableBytes();
    sendAt(start, piece); // waitFor takes its outcome from inFlight
    waitFor(window);
  }

  private CompletableFuture<Void> sendNoWait(ByteBuf piece) {
    long start = position;
    position += piece.readableBytes();
    return sendAt(start, piece).done();
  }

  /**
   * Starts writing {@code data} (whose reference passes to this call) at byte {@code start} of the
   * file and counts it in flight.
   */
  private InFlight sendAt(long start, ByteBuf data) {
    int index = (int) (start / blockSize);
    int offset = (int) (start % blockSize);
    int n = data.readableBytes();
    CompletableFuture<Void> done =
        block(index)
            .exceptionallyCompose(
                allocError -> {
                  data.release();
                  return CompletableFuture.failedFuture(describe(allocError, start, index, null));
                })
            .thenCompose(
                block -> {
                  StorageEndpoint endpoint;
                  try {
                    endpoint = client.endpoint(block);
                  } catch (EmberException e) {
                    data.release();
                    throw new CompletionException(describe(e, start, index, block));
                  }
                  return endpoint
                      .write(block, offset, data)
                      .exceptionallyCompose(
                          writeError ->
                              CompletableFuture.failedFuture(
                                  describe(writeError, start, index, block)))
                      .thenRun(
                          () -> {
                            client.metrics().bytesWritten.add(n);
                            client.metrics().blockWrites.increment();
                            acknowledge(start, start + n);
                          });
                });
    InFlight sent = new InFlight(done, n);
    inFlight.add(sent);
    inFlightBytes += n;
    return sent;
  }

  /**
   * Block 0, which the name node gave the file at its create, so a small file's write needs no
   * round trip of its own (it frees the block again if the file closes empty); null when no class
   * had room then, and the first write asks again.
   */
  void firstBlock(BlockLocation block) {
    if (block != null) {
      asking(0, 1);
      allocatedComesWhole = true;
      allocated = CompletableFuture.completedFuture(List.of(block));
      runAnswer = allocated;
    }
  }

  /**
   * At most this many bytes of blocks are asked for ahead of the writes that need them: with 1 MiB
   * blocks a fast writer asks the name node (and waits for its journal) once per 16 blocks rather
   * than for each, and a file closed early gives back at most this much and one more run unwritten
   * (the run it was writing and the {@linkplain #nextRun next}).
   */
  private static final long AHEAD_BYTES = 16L << 20;

  /**
   * One past the last block asked of the name node so far: a block before it comes from a request
   * already sent, a block at it needs the next.
   */
  private int askedUntil;

  /**
   * The run after {@link #allocated}, from {@link #nextRunFrom}, asked while a writer still had
   * half of the current one to write, or null. Without it a fast writer's window drained at the end
   * of every run while it waited for the name node (and its journal): about a tenth of the NVMf
   * tier's 1 MiB write throughput.
   */
  private CompletableFuture<List<BlockLocation>> nextRun;

  private int nextRunFrom;
  private int nextRunCount;
  private long nextRunAskedNanos;
  private long nextRunAskedMillis;

  /**
   * The last request for blocks as the name node answers it, for {@link #runCount} blocks from
   * {@link #runFrom}: unlike {@link #allocated}, which a writer ahead of the answers keeps
   * re-basing on the block it needs, it tells whether the run came back whole.
   */
  private CompletableFuture<List<BlockLocation>> runAnswer;

  private int runFrom;
  private int runCount;

  /**
   * Whether {@link #allocated} comes whole or not at all (one block, or blocks the file already
   * has) and was sent once every block before it was known, or right behind such a request: the
   * block after it may be asked at once without the risk of being refused as a gap in the file.
   */
  private boolean allocatedComesWhole;

  /**
   * A run came back shorter than asked (the tier is nearly full, or the file spilled to another
   * class): from then on the file's blocks are asked one at a time, each sent as soon as a write
   * needs it when the request before it {@linkplain #allocatedComesWhole comes whole}, or else once
   * that request is answered. Set by the thread that completes the answer.
   */
  private volatile boolean oneAtATime;

  /**
   * How many blocks to ask for from {@code index}: as many as the file already has, up to {@link
   * #AHEAD_BYTES} and to what one answer may hold, so a file of one or two blocks asks for them one
   * at a time and a large one in runs; one after a run came back short.
   */
  private int blocksToAsk(int index) {
    if (oneAtATime) {
      return 1;
    }
    long most = Math.min(Messages.MAX_BLOCKS_PER_CALL, Math.max(1, AHEAD_BYTES / blockSize));
    return (int) Math.max(1, Math.min(index, most));
  }

  /** Asks the name node for blocks from {@code index}, noting a run that comes back short. */
  private CompletableFuture<List<BlockLocation>> ask(int index, int count) {
    return notingShort(client.allocateBlocks(fileId, index, count), count);
  }

  private CompletableFuture<List<BlockLocation>> notingShort(
      CompletableFuture<List<BlockLocation>> answer, int count) {
    return answer.thenApply(
        blocks -> {
          if (blocks.size() < count) {
            oneAtATime = true;
          }
          return blocks;
        });
  }

  private CompletableFuture<BlockLocation> block(int index) {
    if (nextRun != null && index >= nextRunFrom) {
      if (index == nextRunFrom) {
        allocatedFrom = nextRunFrom;
        askedUntil = nextRunFrom + nextRunCount;
        allocatedAskedNanos = nextRunAskedNanos;
        allocatedAskedMillis = nextRunAskedMillis;
        allocatedComesWhole = nextRunCount == 1;
        // A run asked ahead may come back empty (the class keeps its reserve for blocks that are
        // needed): this block is needed now, so it is asked for as such.
        allocated =
            nextRun.thenCompose(
                blocks ->
                    blocks.isEmpty() ? ask(index, 1) : CompletableFuture.completedFuture(blocks));
        runFrom = nextRunFrom;
        runCount = nextRunCount;
        runAnswer = nextRun;
      }
      nextRun = null;
    }
    CompletableFuture<BlockLocation> located = locate(index);
    askNextRunEarly(index);
    return located;
  }

  /**
   * Asks for the run after the current one once a writer is half way through it, so the answer is
   * back before the writes need it. Only for files already a full run long (16 MiB, or one block
   * when blocks are larger), that took their last run whole: a small file asks nothing it might not
   * use, and a file whose runs came back short (a tier nearly full) asks block by block. The run is
   * asked as {@linkplain EmberClient#allocateAhead ahead of need}: the name node gives it only from
   * the file's own class and never from the reserve it keeps for blocks that are needed, so a file
   * that ends within half a run neither spills into another class nor takes the last free blocks
   * for nothing.
   */
  private void askNextRunEarly(int index) {
    CompletableFuture<List<BlockLocation>> run = runAnswer;
    if (nextRun != null
        || oneAtATime
        || run == null
        || !run.isDone()
        || run.isCompletedExceptionally()) {
      return;
    }
    int fullRun =
        (int) Math.min(Messages.MAX_BLOCKS_PER_CALL, Math.max(1, AHEAD_BYTES / blockSize));
    if (runCount < fullRun
        || runFrom < fullRun
        || askedUntil != runFrom + runCount
        || run.join().size() != runCount
        || index < runFrom + runCount / 2) {
      return;
    }
    // The file holds every block before askedUntil, so the name node cannot refuse this as a gap.
    nextRunFrom = askedUntil;
    nextRunCount = blocksToAsk(askedUntil);
    nextRunAskedNanos = System.nanoTime();
    nextRunAskedMillis = System.currentTimeMillis();
    nextRun = notingShort(client.allocateAhead(fileId, nextRunFrom, nextRunCount), nextRunCount);
  }

  /** Block {@code index}, from the run held or on its way, or asked for now. */
  private CompletableFuture<BlockLocation> locate(int index) {
    int at = index - allocatedFrom;
    if (allocated != null && at > 0 && !allocated.isDone()) {
      CompletableFuture<List<BlockLocation>> before = allocated;
      if (index < askedUntil || (oneAtATime && !allocatedComesWhole)) {
        // The block is taken from the run on its way when it comes, or asked for then if the run
        // came back short; the writer never waits here. A run that failed fails this block too:
        // the stream reports the first failure. Once runs come back short, a block after a request
        // that may itself be refused or short waits for it too, rather than be refused in turn.
        int inRun = at;
        allocatedFrom = index;
        askedUntil = Math.max(askedUntil, index + 1);
        allocatedComesWhole = false;
        allocated =
            before.thenCompose(
                blocks ->
                    inRun < blocks.size()
                        ? CompletableFuture.completedFuture(blocks.subList(inRun, blocks.size()))
                        : ask(index, 1));
      } else {
        // The next run is sent now, before the one on its way is answered, so a file's first
        // runs (1, 2-3, 4-7) cost one round trip, not three. The name node answers one
        // connection's requests in order and refuses a block past a file's end: if an earlier run
        // comes back short, this one is refused, and asked again, one block, once every block
        // before it is known.
        int count = blocksToAsk(index);
        boolean whole = allocatedComesWhole && count == 1;
        asking(index, count);
        allocatedComesWhole = whole;
        CompletableFuture<List<BlockLocation>> sent = ask(index, count);
        runAnswer = sent;
        allocated = askedAgainIfAGap(index, before, sent);
      }
      return allocated.thenApply(blocks -> blocks.get(0));
    }
    List<BlockLocation> given =
        allocated != null && allocated.isDone() && !allocated.isCompletedExceptionally()
            ? allocated.join()
            : null;
    boolean held = allocated != null && (at == 0 || (given != null && at > 0 && at < given.size()));
    // A refused allocation (a full tier) is asked again when a write needs the block: the one
    // asked ahead of the first write may have been refused before space was freed.
    if (!held || allocated.isCompletedExceptionally()) {
      int count = blocksToAsk(index);
      asking(index, count);
      allocatedComesWhole = count == 1;
      allocated = ask(index, count);
      runAnswer = allocated;
      at = 0;
    } else if (given != null && untrustedNow(given.get(at))) {
      // So are the blocks held of storage that cannot check generations (NVMf), once they are
      // older than the name node lets such a location be trusted: a file deleted while it is
      // written fails its next write, rather than write into the file that reused its block. The
      // file has them all, so the answer is as long as the question.
      int rest = given.size() - at;
      asking(index, rest);
      allocatedComesWhole = true;
      allocated = client.allocateBlocks(fileId, index, rest);
      runAnswer = allocated;
      at = 0;
    } else if (given != null && tokenDueForRenewal(given.get(at))) {
      // Half way to its token's expiry, the block is asked for again: the name node answers an
      // open file's blocks with fresh tokens, so a writer that holds one block longer than a
      // token's lifetime is not refused. A renewal that fails keeps the locations it had, whose
      // tokens still hold, and is tried again later.
      List<BlockLocation> kept = given.subList(at, given.size());
      asking(index, kept.size());
      allocatedComesWhole = true;
      allocated =
          client.allocateBlocks(fileId, index, kept.size()).exceptionally(renewalFailed -> kept);
      runAnswer = allocated;
      at = 0;
    }
    int offset = at;
    return allocated.thenApply(blocks -> blocks.get(offset));
  }

  /**
   * The blocks {@code sent} asks for from {@code index}, or, when the name node refused it as a gap
   * because a run before it came back short, block {@code index} asked again alone once {@code
   * before} (the blocks up to it) is known, so the new request cannot be a gap.
   */
  private CompletableFuture<List<BlockLocation>> askedAgainIfAGap(
      int index,
      CompletableFuture<List<BlockLocation>> before,
      CompletableFuture<List<BlockLocation>> sent) {
    return before
        .handle((blocks, failed) -> failed == null)
        .thenCompose(
            beforeGiven ->
                sent.exceptionallyCompose(
                    refused ->
                        beforeGiven
                                && oneAtATime
                                && EmberException.of(refused).code() == ErrorCode.INVALID_ARGUMENT
                            ? ask(index, 1)
                            : CompletableFuture.failedFuture(refused)));
  }

  /**
   * Notes a request about to be sent for {@code count} blocks from {@code from}, and when: block
   * tokens and NVMf locations age from then.
   */
  private void asking(int from, int count) {
    allocatedFrom = from;
    askedUntil = from + count;
    runFrom = from;
    runCount = count;
    allocatedAskedNanos = System.nanoTime();
    allocatedAskedMillis = System.currentTimeMillis();
  }

  /** Asks no more often than this for a fresh token, whatever the clocks say. */
  private static final long MIN_RENEWAL_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);

  private boolean tokenDueForRenewal(BlockLocation block) {
    io.ember.protocol.BlockToken token = block.token();
    if (token.isNone() || System.nanoTime() - allocatedAskedNanos < MIN_RENEWAL_NANOS) {
      return false;
    }
    long renewAt = allocatedAskedMillis + (token.expiresMillis() - allocatedAskedMillis) / 2;
    return System.currentTimeMillis() >= renewAt;
  }

  private boolean untrustedNow(BlockLocation block) {
    return System.nanoTime() - allocatedAskedNanos >= BlockLocation.UNCHECKED_TRUST.toNanos()
        && !client.checksGenerations(block);
  }

  /** Waits until at most {@code limit} bytes are in flight; throws the first failure. */
  private void waitFor(long limit) throws IOException {
    while (!inFlight.isEmpty()) {
      InFlight head = inFlight.peekFirst();
      if (inFlightBytes <= limit && !head.done.isDone()) {
        return;
      }
      inFlight.pollFirst();
      inFlightBytes -= head.bytes;
      try {
        client.await(head.done);
      } catch (EmberException e) {
        if (failure == null) {
          failure = e;
        }
      }
    }
    if (failure != null) {
      giveUp();
      throw failed();
    }
  }

  /**
   * A fresh exception for the stream's failure each time it is reported: try-with-resources adds
   * the one from close() to the one from write(), and an exception cannot suppress itself.
   */
  private EmberException failed() {
    return new EmberException(failure.code(), failure.getMessage(), failure);
  }

  private EmberException describe(Throwable t, long offset, int index, BlockLocation block) {
    EmberException e = EmberException.of(t);
    String where =
        block == null ? "block " + index : "block " + index + " on " + block.describeNode();
    return new EmberException(
        e.code(),
        "writing " + path + " at byte " + offset + " (" + where + ") failed: " + e.getMessage(),
        e);
  }

  private void checkUsable() throws IOException {
    if (leaseLost && failure == null) {
      failure =
          new EmberException(
              ErrorCode.LEASE_RECOVERED,
              "writing "
                  + path
                  + " failed: the name node no longer holds it open for this writer (its lease"
                  + " expired because the client did not renew it in time, and the name node"
                  + " closed it at the bytes acknowledged; or it was deleted)");
    }
    if (failure != null) {
      giveUp();
      throw failed();
    }
    if (closed) {
      throw new EmberException(ErrorCode.FILE_CLOSED, path + ": stream is closed");
    }
  }
}
