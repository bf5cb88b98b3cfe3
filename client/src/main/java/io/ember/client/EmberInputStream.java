package io.ember.client;

import io.ember.client.spi.StorageEndpoint;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.NodeStatus;
import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCountUtil;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reads one closed Ember file straight from its data nodes. Sequential reads fetch ahead of the
 * position; {@link #seek} moves the position; positional reads ({@link #read(long, byte[], int,
 * int)}) leave it alone and may run from several threads at once. Nothing past the published length
 * is ever returned.
 *
 * <p>A block whose data node is lost fails the read with {@link ErrorCode#DATANODE_LOST} naming the
 * file, the block and the node; no read waits longer than the configured RPC timeout.
 */
public final class EmberInputStream extends InputStream {
  private final EmberClient client;
  private final String path;
  private final long fileId;
  private final long length;
  private final int blockSize;
  private final int chunkSize;
  private final int readAheadChunks;
  private final ArrayDeque<Chunk> ahead = new ArrayDeque<>();
  private long position;
  private ByteBuf current;
  private long currentStart;
  private boolean closed;

  private record Chunk(long start, CompletableFuture<ByteBuf> data) {
    void discard() {
      releaseWhenDone(data);
    }
  }

  /**
   * Releases the bytes of a fetch nobody will take: when it has completed, or whenever it does. A
   * wait that gave up (the last-resort deadline, an interrupt) does not stop the read, whose buffer
   * would otherwise never be released.
   */
  private static void releaseWhenDone(CompletableFuture<ByteBuf> fetch) {
    // The stage returned completes as the fetch did, once its buffer is released: nobody wants the
    // outcome of a fetch that was dropped, so there is nothing to wait for or report.
    CompletableFuture<ByteBuf> unused =
        fetch.whenComplete((buf, e) -> ReferenceCountUtil.release(buf));
  }

  EmberInputStream(
      EmberClient client, String path, NodeStatus status, int transferSize, long readAhead) {
    this.client = client;
    this.path = path;
    this.fileId = status.id();
    this.length = status.length();
    this.blockSize = status.blockSize();
    this.chunkSize = Math.min(transferSize, blockSize);
    this.readAheadChunks = (int) Math.min(1024, readAhead / chunkSize);
  }

  /** The file's path. */
  public String path() {
    return path;
  }

  /** The file's published length. */
  public long length() {
    return length;
  }

  /** The position of the next sequential read. */
  public long position() {
    return position;
  }

  /**
   * Moves the position of the next sequential read.
   *
   * @throws EOFException when {@code newPosition} is negative or beyond the length
   */
  public void seek(long newPosition) throws IOException {
    checkOpen();
    if (newPosition < 0 || newPosition > length) {
      throw new EOFException(
          "cannot seek " + path + " to " + newPosition + ": length is " + length);
    }
    position = newPosition;
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    int n = read(one, 0, 1);
    return n < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    Objects.checkFromIndexSize(off, len, b.length);
    checkOpen();
    if (len == 0) {
      return 0;
    }
    if (position >= length) {
      return -1;
    }
    int total = 0;
    while (len > 0 && position < length) {
      if (len >= chunkSize && position % chunkSize == 0 && !covers(position)) {
        // A whole chunk for the caller: the network thread copies it into b as it arrives, so a
        // large read keeps two threads busy (sender and receiver), not three.
        int n = readChunkInto(b, off);
        position += n;
        off += n;
        len -= n;
        total += n;
        continue;
      }
      ByteBuf chunk = chunkAt(position);
      int inChunk = (int) (position - currentStart);
      int n = Math.min(len, chunk.readableBytes() - inChunk);
      chunk.getBytes(chunk.readerIndex() + inChunk, b, off, n);
      position += n;
      off += n;
      len -= n;
      total += n;
    }
    return total;
  }

  /**
   * Reads into {@code dst} from the position, as much as fits and the file holds.
   *
   * @return bytes read, or -1 at the end of the file
   */
  public int read(ByteBuffer dst) throws IOException {
    checkOpen();
    if (!dst.hasRemaining()) {
      return 0;
    }
    if (position >= length) {
      return -1;
    }
    int total = 0;
    while (dst.hasRemaining() && position < length) {
      ByteBuf chunk = chunkAt(position);
      int inChunk = (int) (position - currentStart);
      int n = Math.min(dst.remaining(), chunk.readableBytes() - inChunk);
      ByteBuffer slice = dst.slice();
      slice.limit(n);
      chunk.getBytes(chunk.readerIndex() + inChunk, slice);
      dst.position(dst.position() + n);
      position += n;
      total += n;
    }
    return total;
  }

  @Override
  public long skip(long n) throws IOException {
    checkOpen();
    long to = Math.max(position, Math.min(length, position + Math.max(0, n)));
    long skipped = to - position;
    position = to;
    return skipped;
  }

  @Override
  public int available() throws IOException {
    checkOpen();
    if (current != null
        && position >= currentStart
        && position < currentStart + current.readableBytes()) {
      return (int) (currentStart + current.readableBytes() - position);
    }
    return 0;
  }

  /**
   * Reads up to {@code len} bytes at {@code pos} without moving the position. Safe to call from
   * several threads at once, and alongside sequential reads.
   *
   * @return bytes read, or -1 when {@code pos} is at or past the end
   */
  public int read(long pos, byte[] b, int off, int len) throws IOException {
    Objects.checkFromIndexSize(off, len, b.length);
    checkOpen();
    if (pos < 0) {
      throw new EOFException("negative position " + pos + " in " + path);
    }
    if (pos >= length) {
      return len == 0 ? 0 : -1;
    }
    int n = (int) Math.min(len, length - pos);
    List<CompletableFuture<ByteBuf>> parts = new ArrayList<>();
    long p = pos;
    while (p < pos + n) {
      int inBlockRoom = blockSize - (int) (p % blockSize);
      int piece = (int) Math.min(Math.min(chunkSize, inBlockRoom), pos + n - p);
      parts.add(fetch(p, piece));
      p += piece;
    }
    EmberException failure = null;
    int at = off;
    for (CompletableFuture<ByteBuf> part : parts) {
      if (failure != null) {
        // The read has failed: no need to wait for the rest, only to release them.
        releaseWhenDone(part);
        continue;
      }
      ByteBuf buf;
      try {
        buf = client.await(part);
      } catch (EmberException e) {
        failure = e;
        releaseWhenDone(part);
        continue;
      }
      try {
        buf.getBytes(buf.readerIndex(), b, at, buf.readableBytes());
        at += buf.readableBytes();
      } finally {
        buf.release();
      }
    }
    if (failure != null) {
      throw failure;
    }
    return n;
  }

  /**
   * Reads up to {@code dst.remaining()} bytes at {@code pos} into {@code dst}, asynchronously and
   * without moving the stream's position; many such reads may be in flight at once. The caller owns
   * {@code dst} and must not touch it until the future completes, which then advances {@code dst}'s
   * position by the bytes read. Tiers that can (NVMf, for sector-aligned ranges into direct
   * buffers) read straight into {@code dst} with no copy.
   *
   * @return bytes read, -1 when {@code pos} is at or past the end; fails with {@link
   *     EmberException} as the other reads do
   */
  public CompletableFuture<Integer> readAsync(long pos, ByteBuffer dst) {
    if (closed) {
      return CompletableFuture.failedFuture(
          new EmberException(ErrorCode.CLOSED, path + ": stream is closed"));
    }
    if (pos < 0) {
      return CompletableFuture.failedFuture(
          new EOFException("negative position " + pos + " in " + path));
    }
    if (pos >= length) {
      return CompletableFuture.completedFuture(dst.hasRemaining() ? -1 : 0);
    }
    int n = (int) Math.min(dst.remaining(), length - pos);
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    int base = dst.position();
    long p = pos;
    while (p < pos + n) {
      int inBlockRoom = blockSize - (int) (p % blockSize);
      int piece = (int) Math.min(Math.min(chunkSize, inBlockRoom), pos + n - p);
      ByteBuffer slice = dst.duplicate();
      slice.position(base + (int) (p - pos)).limit(base + (int) (p - pos) + piece);
      parts.add(fetchInto(p, slice.slice()));
      p += piece;
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
        .thenApply(
            v -> {
              dst.position(base + n);
              return n;
            });
  }

  /**
   * Reads exactly {@code len} bytes at {@code pos} without moving the position.
   *
   * @throws EOFException when the file ends first
   */
  public void readFully(long pos, byte[] b, int off, int len) throws IOException {
    if (pos < 0 || len < 0 || pos > length - len) {
      throw new EOFException(
          "cannot read " + len + " bytes at " + pos + " of " + path + ": length is " + length);
    }
    read(pos, b, off, len);
  }

  /**
   * Releases fetched and read-ahead data while keeping the stream open; the next read fetches
   * again. For callers that hold many idle streams.
   */
  public void unbuffer() {
    dropAhead();
    if (current != null) {
      current.release();
      current = null;
    }
  }

  /** Releases fetched data. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    dropAhead();
    if (current != null) {
      current.release();
      current = null;
    }
  }

  private boolean covers(long pos) {
    return current != null && pos >= currentStart && pos < currentStart + current.readableBytes();
  }

  private ByteBuf chunkAt(long pos) throws IOException {
    if (covers(pos)) {
      return current;
    }
    Chunk next = takeChunk(pos - pos % chunkSize);
    ByteBuf buf;
    try {
      buf = client.await(next.data());
    } catch (EmberException e) {
      // The chunk is neither current nor ahead any more: nothing else would release it.
      next.discard();
      throw e;
    }
    current = buf;
    currentStart = next.start();
    fillAhead();
    return buf;
  }

  /**
   * Copies the whole chunk at the position into {@code b} at {@code off} and returns its length.
   * The copy runs on whichever thread completes the fetch; a read that gives up waiting (a timeout)
   * first claims the copy, so no bytes land in {@code b} after this returns.
   */
  private int readChunkInto(byte[] b, int off) throws IOException {
    Chunk next = takeChunk(position);
    currentStart = next.start();
    fillAhead();
    AtomicBoolean claimed = new AtomicBoolean();
    CompletableFuture<Integer> copied =
        next.data()
            .thenApply(
                buf -> {
                  try {
                    if (!claimed.compareAndSet(false, true)) {
                      return -1;
                    }
                    int n = buf.readableBytes();
                    buf.getBytes(buf.readerIndex(), b, off, n);
                    return n;
                  } finally {
                    buf.release();
                  }
                });
    try {
      return client.await(copied);
    } catch (EmberException e) {
      if (!claimed.compareAndSet(false, true)) {
        // The copy started just as the wait gave up: let it finish before b goes back.
        copied.join();
      }
      throw e;
    }
  }

  /** Drops the current chunk and read-ahead before {@code start} and takes the chunk there. */
  private Chunk takeChunk(long start) {
    if (current != null) {
      current.release();
      current = null;
    }
    while (!ahead.isEmpty() && ahead.peekFirst().start() < start) {
      ahead.pollFirst().discard();
    }
    if (!ahead.isEmpty() && ahead.peekFirst().start() != start) {
      dropAhead(); // a backward seek, or a jump past the fetched range
    }
    if (ahead.isEmpty()) {
      ahead.add(new Chunk(start, fetch(start, chunkLength(start))));
    }
    fillAhead();
    return ahead.pollFirst();
  }

  private void fillAhead() {
    Chunk last = ahead.peekLast();
    long next = last == null ? currentStart + chunkSize : last.start() + chunkSize;
    while (ahead.size() < readAheadChunks && next < length) {
      ahead.add(new Chunk(next, fetch(next, chunkLength(next))));
      next += chunkSize;
    }
  }

  private void dropAhead() {
    while (!ahead.isEmpty()) {
      ahead.pollFirst().discard();
    }
  }

  private int chunkLength(long start) {
    return (int) Math.min(chunkSize, length - start);
  }

  /** Fetches {@code len} bytes at {@code pos}, within one block. The caller releases the result. */
  private CompletableFuture<ByteBuf> fetch(long pos, int len) {
    return fromBlock(pos, len, (block, endpoint, offset) -> endpoint.read(block, offset, len))
        .thenApply(
            buf -> {
              if (buf.readableBytes() != len) {
                int got = buf.readableBytes();
                buf.release();
                throw new CompletionException(
                    new EmberException(
                        ErrorCode.MALFORMED_FRAME,
                        "got "
                            + got
                            + " bytes of "
                            + path
                            + " at "
                            + pos
                            + " where "
                            + len
                            + " were asked for"));
              }
              return buf;
            });
  }

  /** Reads {@code dst.remaining()} bytes at {@code pos}, within one block, into {@code dst}. */
  private CompletableFuture<Void> fetchInto(long pos, ByteBuffer dst) {
    return fromBlock(
        pos, dst.remaining(), (block, endpoint, offset) -> endpoint.readInto(block, offset, dst));
  }

  private interface BlockRead<T> {
    CompletableFuture<T> start(BlockLocation block, StorageEndpoint endpoint, int offset);
  }

  /**
   * Runs {@code read} against the block holding {@code pos}: fails at once when its data node is
   * lost, and names the file, block and node in any failure (dropping the cached locations, which
   * may be stale).
   */
  private <T> CompletableFuture<T> fromBlock(long pos, int len, BlockRead<T> read) {
    return fromBlock(pos, len, read, true);
  }

  /**
   * {@link #fromBlock(long, int, BlockRead)}; a location its endpoint refuses as stale (a data node
   * restarted at that address, a target that came back under a new registration) is asked of the
   * name node again, {@code once}.
   */
  private <T> CompletableFuture<T> fromBlock(long pos, int len, BlockRead<T> read, boolean once) {
    int index = (int) (pos / blockSize);
    int offset = (int) (pos % blockSize);
    return client
        .blockLocation(fileId, index)
        .exceptionallyCompose(
            e -> {
              EmberException cause = EmberException.of(e);
              return CompletableFuture.failedFuture(
                  new EmberException(
                      cause.code(),
                      "locating block " + index + " of " + path + " failed: " + cause.getMessage(),
                      cause));
            })
        .thenCompose(
            block -> {
              if (block.lost()) {
                client.invalidateBlocks(fileId);
                throw new CompletionException(
                    new EmberException(
                        ErrorCode.DATANODE_LOST,
                        block.describeNode()
                            + " lost: block "
                            + index
                            + " of "
                            + path
                            + " unavailable"));
              }
              StorageEndpoint endpoint;
              try {
                endpoint = client.endpoint(block);
              } catch (EmberException e) {
                throw new CompletionException(e);
              }
              return read.start(block, endpoint, offset)
                  .thenApply(
                      result -> {
                        client.metrics().bytesRead.add(len);
                        client.metrics().blockReads.increment();
                        return result;
                      })
                  .exceptionallyCompose(
                      e -> {
                        client.invalidateBlocks(fileId);
                        EmberException cause = EmberException.of(e);
                        if (once && cause.code() == ErrorCode.STALE_LOCATION) {
                          return fromBlock(pos, len, read, false);
                        }
                        return CompletableFuture.failedFuture(
                            new EmberException(
                                cause.code(),
                                "reading block "
                                    + index
                                    + " of "
                                    + path
                                    + " from "
                                    + block.describeNode()
                                    + " failed: "
                                    + cause.getMessage(),
                                cause));
                      });
            });
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new EmberException(ErrorCode.CLOSED, path + ": stream is closed");
    }
  }
}
