package io.ember.namenode;

import io.ember.protocol.BlockKey;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Signs block tokens, as HDFS's block token secret manager does: a fresh random key every {@code
 * lifetime}, each token good for {@code lifetime}, and every key kept (and handed to the data
 * nodes) until the last token it signed has expired. The next key is made, and handed out, a
 * lifetime before it signs anything, so data nodes hold it by then. Keys live in memory only: after
 * a restart the name node signs with new ones, data nodes learn them when they register again, and
 * clients whose tokens name an old key are told to ask for their locations again.
 */
final class BlockTokenSigner {
  private final long lifetimeMillis;
  private final long writeLifetimeMillis;
  private final LongSupplier clock;
  private final SecureRandom random = new SecureRandom();

  /** Guarded by this. */
  private final List<BlockKey> keys = new ArrayList<>();

  private BlockKey current;
  private byte[] currentSecret;
  private long currentSince;
  private BlockKey next;
  private byte[] nextSecret;
  private int nextId;

  /**
   * @param writeLifetime how long a token that grants writing holds, at most: a closed file's
   *     former writer can change its bytes until then
   */
  BlockTokenSigner(Duration lifetime, Duration writeLifetime, LongSupplier wallClockMillis) {
    this.lifetimeMillis = lifetime.toMillis();
    this.writeLifetimeMillis = Math.min(lifetimeMillis, writeLifetime.toMillis());
    this.clock = wallClockMillis;
    // Ids a name node that restarted hands out are unlikely to name one of its predecessor's.
    this.nextId = 1 + random.nextInt(Integer.MAX_VALUE / 2);
  }

  /** Rolls the key when the current one is a lifetime old, and forgets keys nothing can use. */
  private void roll(long now) {
    if (current == null || now - currentSince >= lifetimeMillis) {
      if (next == null) {
        makeNext(now);
      }
      // Kept while any token it signs may hold: it signs for a lifetime, and each token holds a
      // lifetime more.
      keys.remove(next);
      current = new BlockKey(next.id(), now + 2 * lifetimeMillis, nextSecret);
      keys.add(current);
      currentSecret = nextSecret;
      currentSince = now;
      makeNext(now);
    }
    keys.removeIf(k -> k.expiresMillis() < now);
  }

  /** The key that signs after the current one, handed to data nodes from now on. */
  private void makeNext(long now) {
    nextSecret = new byte[BlockKey.SECRET_BYTES];
    random.nextBytes(nextSecret);
    next = new BlockKey(nextId++, now + 3 * lifetimeMillis, nextSecret);
    keys.add(next);
  }

  /** The keys data nodes need to check every token that still holds. */
  synchronized List<BlockKey> keys() {
    roll(clock.getAsLong());
    return List.copyOf(keys);
  }

  /**
   * {@code location} with a token that lets {@code identity} reach its block with {@code modes}.
   */
  BlockLocation sign(BlockLocation location, int modes, String identity) {
    int keyId;
    byte[] secret;
    long now = clock.getAsLong();
    synchronized (this) {
      roll(now);
      keyId = current.id();
      secret = currentSecret;
    }
    return location.withToken(
        BlockToken.sign(
            keyId,
            secret,
            location,
            modes,
            now + ((modes & BlockToken.WRITE) != 0 ? writeLifetimeMillis : lifetimeMillis),
            identity));
  }
}
