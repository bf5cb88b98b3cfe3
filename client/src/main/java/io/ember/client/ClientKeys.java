package io.ember.client;

import io.ember.protocol.ConfigKey;
import java.time.Duration;
import java.util.List;

/** Configuration keys of the client. */
public final class ClientKeys {
  private ClientKeys() {}

  /** Largest single transfer to a data node; also the unit of read-ahead. */
  public static final ConfigKey<Long> TRANSFER_SIZE =
      ConfigKey.ofSize(
          "ember.client.transfer-size",
          "1m",
          4096,
          16L << 20,
          "largest single read or write sent to a data node (a power of two)");

  /** Bytes a stream may have in flight to data nodes before a write waits. */
  public static final ConfigKey<Long> WRITE_WINDOW =
      ConfigKey.ofSize(
          "ember.client.write-window",
          "8m",
          4096,
          1L << 30,
          "bytes an output stream may have in flight before write() waits");

  /** Bytes a sequential reader fetches ahead of its position. */
  public static final ConfigKey<Long> READ_AHEAD =
      ConfigKey.ofSize(
          "ember.client.read-ahead",
          "4m",
          0,
          1L << 30,
          "bytes an input stream fetches ahead of its position (0: none)");

  /** Size of a buffered output stream's buffer. */
  public static final ConfigKey<Long> BUFFER_SIZE =
      ConfigKey.ofSize(
          "ember.client.buffer-size",
          "1m",
          512,
          64L << 20,
          "buffer of a buffered output stream; a divisor of the block size keeps writes aligned");

  /** Files whose block locations the client keeps. */
  public static final ConfigKey<Integer> BLOCK_CACHE_FILES =
      ConfigKey.ofInt(
          "ember.client.block-cache-files",
          1024,
          0,
          1 << 20,
          "files whose block locations are cached");

  /**
   * Whether a thread that waits for a name node call makes it on a connection of its own, writing
   * the request and reading the answer itself, rather than through the shared connection's network
   * thread: two thread wake-ups fewer per call, when no other thread's call is on it.
   */
  public static final ConfigKey<Boolean> DIRECT_CALLS =
      ConfigKey.ofBoolean(
          "ember.client.direct-calls",
          true,
          "blocking name node calls are made on the calling thread over a connection of their"
              + " own when it is free (false: always through the shared connection)");

  /**
   * How long a thread making a direct name node call polls its socket for the answer before it
   * sleeps. Off by default: polling spends the caller's CPU to save the wake-up of a sleeping
   * thread, which costs as much as a loopback round trip on virtual machines whose idle CPUs halt.
   */
  public static final ConfigKey<Duration> SPIN_WAIT =
      ConfigKey.ofDuration(
          "ember.client.spin-wait",
          "0",
          Duration.ZERO,
          Duration.ofMillis(10),
          "how long a direct name node call polls for its answer before it sleeps (e.g. 50us; 0:"
              + " sleeps at once); polling saves a thread wake-up per call at the cost of up to"
              + " this much CPU");

  /** Direct memory kept for output streams' next writes once no write uses it. */
  public static final ConfigKey<Long> WRITE_BUFFERS_KEPT =
      ConfigKey.ofSize(
          "ember.client.write-buffers-kept",
          "32m",
          0,
          1L << 34,
          "direct memory the client keeps for output streams' next writes once no write uses it"
              + " (0: none; each write then takes memory from Netty's pool)");

  /** How long kept write memory outlives the client's last write. */
  public static final ConfigKey<Duration> WRITE_BUFFERS_IDLE =
      ConfigKey.ofDuration(
          "ember.client.write-buffers-idle",
          "30s",
          Duration.ZERO,
          Duration.ofDays(1),
          "how long the client keeps write memory once it has stopped writing; it is freed at"
              + " the next lease renewal after that");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          TRANSFER_SIZE,
          WRITE_WINDOW,
          WRITE_BUFFERS_KEPT,
          WRITE_BUFFERS_IDLE,
          READ_AHEAD,
          BUFFER_SIZE,
          BLOCK_CACHE_FILES,
          DIRECT_CALLS,
          SPIN_WAIT);
}
