package io.ember.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.RpcServer;
import io.ember.protocol.StorageClass;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A read that stops waiting (here: the reader is interrupted; a last-resort timeout takes the same
 * path) still owns the bytes its data-node read returns later: they are released when they come,
 * not leaked. Reads go to {@link HandTier}, whose completions the test makes by hand; a fake name
 * node answers block lookups.
 */
class EmberInputStreamTest {
  private static final int BLOCK = 64 << 10;
  private static final int CHUNK = 4096;

  /** Far longer than anything here takes on a starved machine: only a real failure waits it out. */
  private static final long PATIENCE_SECONDS = 60;

  private RpcServer namenode;
  private EmberClient client;

  @BeforeEach
  void start() throws Exception {
    HandTier.READS.clear();
    EmberConfig config = EmberConfig.defaults().with(EmberKeys.IO_THREADS, "1");
    BlockLocation block = location();
    namenode =
        new RpcServer(
            "fake name node",
            config,
            (ch, type, in) -> {
              if (type != MessageType.GET_BLOCKS) {
                throw new EmberException(ErrorCode.UNKNOWN_MESSAGE, "not faked: " + type);
              }
              return new Messages.BlocksResponse(List.of(block));
            });
    int port = namenode.start("127.0.0.1", 0).getPort();
    client = EmberClient.connect(config.with(EmberKeys.NAMENODE_ADDRESS, "127.0.0.1:" + port));
  }

  @AfterEach
  void stop() {
    // Reads a failed test left waiting carry no buffer: failing them releases nothing.
    for (CompletableFuture<ByteBuf> f; (f = HandTier.READS.poll()) != null; ) {
      f.completeExceptionally(new EmberException(ErrorCode.CLOSED, "test over"));
    }
    Thread.interrupted();
    client.close();
    namenode.close();
  }

  /** Block 0 of the file, on the hand tier. */
  private static BlockLocation location() {
    return new BlockLocation(
        0, 1, 1, 1, 0, StorageClass.DRAM, HandTier.NAME, "nowhere:1", 0, BLOCK, false);
  }

  /** A one-block file, read in 4 KiB chunks with no read-ahead. */
  private EmberInputStream open() {
    return open(0);
  }

  /** A one-block file, read in 4 KiB chunks with {@code readAhead} bytes fetched ahead. */
  private EmberInputStream open(long readAhead) {
    return new EmberInputStream(
        client,
        "/f",
        new NodeStatus(7, NodeType.FILE, BLOCK, 1, BLOCK, StorageClass.DRAM, 0, false),
        CHUNK,
        readAhead);
  }

  /** Completes the next {@code n} reads asked of the tier with {@code CHUNK} bytes each. */
  private static List<ByteBuf> completeReads(int n, byte fill) throws InterruptedException {
    List<ByteBuf> sent = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      CompletableFuture<ByteBuf> read = HandTier.READS.poll(PATIENCE_SECONDS, TimeUnit.SECONDS);
      assertNotNull(read, "read " + i + " of " + n + " never reached the tier");
      ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(CHUNK);
      buf.writeBytes(new byte[CHUNK]).setByte(0, fill);
      sent.add(buf);
      read.complete(buf);
    }
    return sent;
  }

  /** Every buffer in {@code sent} was released; releases any that was not, and fails. */
  private static void assertReleased(List<ByteBuf> sent) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (sent.stream().anyMatch(b -> b.refCnt() != 0) && System.nanoTime() - end < 0) {
      Thread.sleep(10);
    }
    int leaked = 0;
    for (ByteBuf b : sent) {
      if (b.refCnt() != 0) {
        leaked++;
        b.release(b.refCnt());
      }
    }
    if (leaked != 0) {
      fail(
          leaked
              + " of "
              + sent.size()
              + " buffers that came after the read gave up were never"
              + " released");
    }
  }

  /** Runs {@code read} on an interrupted thread, so its wait gives up at once. */
  private static EmberException gaveUp(org.junit.jupiter.api.function.Executable read) {
    Thread.currentThread().interrupt();
    EmberException e = assertThrows(EmberException.class, read);
    assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
    assertEquals(ErrorCode.CLOSED, e.code(), e.toString());
    return e;
  }

  @Test
  void positionalReadThatGaveUpReleasesWhatComesLater() throws Exception {
    try (EmberInputStream in = open()) {
      // Two chunks: two data-node reads, both outstanding when the wait gives up.
      gaveUp(() -> in.read(0, new byte[2 * CHUNK], 0, 2 * CHUNK));
      assertReleased(completeReads(2, (byte) 1));
    }
  }

  @Test
  void chunkReadThatGaveUpReleasesWhatComesLater() throws Exception {
    try (EmberInputStream in = open()) {
      // Less than a chunk: the stream fetches the chunk and keeps it as its current one.
      gaveUp(() -> in.read(new byte[10], 0, 10));
      assertReleased(completeReads(1, (byte) 2));
    }
  }

  @Test
  void wholeChunkReadThatGaveUpReleasesWhatComesLater() throws Exception {
    try (EmberInputStream in = open()) {
      byte[] b = new byte[CHUNK];
      gaveUp(() -> in.read(b, 0, CHUNK));
      assertReleased(completeReads(1, (byte) 3));
      assertEquals(0, b[0], "no bytes land in the caller's array after the read gave up");
    }
  }

  @Test
  void readsThatWaitGetTheBytesAndReleaseThem() throws Exception {
    EmberInputStream in = open();
    try {
      byte[] positional = new byte[2 * CHUNK];
      CompletableFuture<Integer> pread =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return in.read(0, positional, 0, positional.length);
                } catch (Exception e) {
                  throw new RuntimeException(e);
                }
              });
      List<ByteBuf> sent = completeReads(2, (byte) 4);
      assertEquals(2 * CHUNK, pread.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
      assertEquals(4, positional[0]);
      assertEquals(4, positional[CHUNK]);
      assertReleased(sent);

      byte[] some = new byte[10];
      CompletableFuture<Integer> read =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return in.read(some, 0, some.length);
                } catch (Exception e) {
                  throw new RuntimeException(e);
                }
              });
      List<ByteBuf> chunk = completeReads(1, (byte) 5);
      assertEquals(10, read.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
      assertArrayEquals(new byte[] {5, 0, 0, 0, 0, 0, 0, 0, 0, 0}, some);
      in.close();
      assertReleased(chunk);
    } finally {
      in.close(); // idempotent: for a failure before the close above
    }
  }

  @Test
  void aSequentialReadFetchesAheadAsFarAsAskedAndCloseReleasesWhatWasNotRead() throws Exception {
    EmberInputStream in = open(3 * CHUNK);
    byte[] one = new byte[1];
    CompletableFuture<Integer> read =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return in.read(one, 0, 1);
              } catch (Exception e) {
                throw new RuntimeException(e);
              }
            });
    // The chunk read and three ahead of it: each completed in the order asked.
    List<ByteBuf> sent = completeReads(4, (byte) 6);
    assertEquals(1, read.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
    assertEquals(6, one[0]);
    assertEquals(0, HandTier.READS.size(), "nothing fetched past the read-ahead");
    in.close();
    assertReleased(sent);
  }
}
