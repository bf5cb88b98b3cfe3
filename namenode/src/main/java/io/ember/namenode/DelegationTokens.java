package io.ember.namenode;

import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The name node's delegation tokens, as HDFS's secret manager keeps them: the keys that sign them
 * (a new one every key-update interval, each kept while a token it signed can still be renewed),
 * and each live token's expiry. A token is good while its key is held, its password is that key's
 * HMAC of its identifier, it has not been cancelled, and neither its expiry nor its maximum life
 * has passed.
 *
 * <p>Not thread-safe: {@link NameNodeState} calls it under its lock, and journals what changes.
 */
final class DelegationTokens {
  /** Bytes of a signing key. */
  static final int KEY_BYTES = 32;

  /** A signing key, by its id. */
  @SuppressWarnings("ArrayRecordComponent") // never compared; kept as made
  record Key(int id, long createdMillis, byte[] secret) {}

  private final Map<Integer, Key> keys = new HashMap<>();

  /** Live tokens' expiries, by sequence number. */
  private final Map<Long, Long> expiries = new HashMap<>();

  private final SecureRandom random = new SecureRandom();
  private int currentKeyId;
  private long nextSequence = 1;
  private long renewMillis = Duration.ofDays(1).toMillis();
  private long maxLifetimeMillis = Duration.ofDays(7).toMillis();
  private long keyUpdateMillis = Duration.ofDays(1).toMillis();

  /** Sets how long tokens hold, at most, and how often keys change. */
  void configure(Duration renewInterval, Duration maxLifetime, Duration keyUpdateInterval) {
    renewMillis = renewInterval.toMillis();
    maxLifetimeMillis = maxLifetime.toMillis();
    keyUpdateMillis = keyUpdateInterval.toMillis();
  }

  /** The key to sign with at {@code now}, or null when a new one is due. */
  Key current(long now) {
    Key k = keys.get(currentKeyId);
    return k != null && now - k.createdMillis() < keyUpdateMillis ? k : null;
  }

  /** A new key made at {@code now}, not yet added ({@link #addKey}). */
  Key newKey(long now) {
    byte[] secret = new byte[KEY_BYTES];
    random.nextBytes(secret);
    return new Key(currentKeyId + 1, now, secret);
  }

  /** Holds {@code key} and signs with it from now on; old keys past any use are let go. */
  void addKey(Key key, long now) {
    keys.put(key.id(), key);
    currentKeyId = Math.max(currentKeyId, key.id());
    dropOldKeys(now);
  }

  /**
   * Lets go of keys past any use: a key past the update interval signs nothing new, and once every
   * token it signed is past its maximum life, nothing it signed can be good.
   */
  private void dropOldKeys(long now) {
    keys.values()
        .removeIf(
            k ->
                k.id() != currentKeyId
                    && k.createdMillis() + keyUpdateMillis + maxLifetimeMillis < now);
  }

  /** The identifier of the next token for {@code owner}, to be signed with {@code key}. */
  DelegationToken.Identifier nextIdentifier(String owner, String renewer, long now, Key key) {
    return new DelegationToken.Identifier(
        owner, renewer, now, now + maxLifetimeMillis, nextSequence, key.id());
  }

  /** The token for {@code id}, signed with its key. */
  DelegationToken sign(DelegationToken.Identifier id) {
    return new DelegationToken(id, DelegationToken.sign(keys.get(id.keyId()).secret(), id));
  }

  /** When a token issued or renewed at {@code now} expires. */
  long expiryFrom(DelegationToken.Identifier id, long now) {
    return Math.min(now + renewMillis, id.maxMillis());
  }

  /** Records that token {@code sequence} holds until {@code expiresMillis}. */
  void put(long sequence, long expiresMillis) {
    expiries.put(sequence, expiresMillis);
    nextSequence = Math.max(nextSequence, sequence + 1);
  }

  /** Forgets token {@code sequence}. */
  void remove(long sequence) {
    expiries.remove(sequence);
  }

  /**
   * Checks that {@code token} is one this name node issued and holds at {@code now}.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} saying why not: altered, signed by a
   *     key not held, cancelled, or expired
   */
  void check(DelegationToken token, long now) throws EmberException {
    DelegationToken.Identifier id = token.identifier();
    Key key = keys.get(id.keyId());
    if (key == null || !token.signedWith(key.secret())) {
      throw refused(
          id,
          key == null
              ? "signed with a key this name node does not hold: it is from another name node, or"
                  + " too old"
              : "its password does not match: it was altered, or issued by another name node");
    }
    checkLive(id, now);
  }

  /**
   * Checks that the token {@code id} names, whose password was checked before, is still live at
   * {@code now}: not cancelled, not expired. Reads only, so callers need only the read lock.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} when it is not
   */
  void checkLive(DelegationToken.Identifier id, long now) throws EmberException {
    Long expires = expiries.get(id.sequence());
    if (expires == null) {
      throw refused(id, "it was cancelled, or expired and was let go");
    }
    long until = Math.min(expires, id.maxMillis());
    if (until < now) {
      throw refused(
          id,
          "it expired at "
              + Instant.ofEpochMilli(until)
              + (until == id.maxMillis()
                  ? " (its maximum life)"
                  : " (not renewed in time): renew tokens before they expire"));
    }
  }

  private static EmberException refused(DelegationToken.Identifier id, String why) {
    return new EmberException(ErrorCode.UNAUTHENTICATED, id + " is refused: " + why);
  }

  /** Lets go of tokens and keys past any use at {@code now}. */
  void purge(long now) {
    expiries.values().removeIf(e -> e < now);
    dropOldKeys(now);
  }

  /**
   * Numbers tokens from past {@code floor} and a margin beyond the last one known: a journal that
   * was not forced can lose a token's record after the token was handed out, and its number given
   * to another would make the lost one good again.
   */
  void skipSequences(long floor, long margin) {
    nextSequence = Math.max(nextSequence + margin, floor);
  }

  /** Live tokens, for logs and tests. */
  int size() {
    return expiries.size();
  }

  /** Writes the keys and live tokens into a checkpoint. */
  void save(DataOutputStream out) throws IOException {
    out.writeInt(currentKeyId);
    out.writeLong(nextSequence);
    out.writeInt(keys.size());
    for (Key k : keys.values()) {
      out.writeInt(k.id());
      out.writeLong(k.createdMillis());
      out.write(k.secret());
    }
    // Expired tokens are left out: nothing can renew them.
    long now = System.currentTimeMillis();
    List<Map.Entry<Long, Long>> live = new ArrayList<>();
    for (Map.Entry<Long, Long> e : expiries.entrySet()) {
      if (e.getValue() >= now) {
        live.add(e);
      }
    }
    out.writeInt(live.size());
    for (Map.Entry<Long, Long> e : live) {
      out.writeLong(e.getKey());
      out.writeLong(e.getValue());
    }
  }

  /** Reads what {@link #save} wrote. */
  void load(DataInputStream in) throws IOException {
    keys.clear();
    expiries.clear();
    currentKeyId = in.readInt();
    nextSequence = in.readLong();
    int n = in.readInt();
    for (int i = 0; i < n; i++) {
      int id = in.readInt();
      long created = in.readLong();
      byte[] secret = new byte[KEY_BYTES];
      in.readFully(secret);
      keys.put(id, new Key(id, created, secret));
    }
    int t = in.readInt();
    for (int i = 0; i < t; i++) {
      expiries.put(in.readLong(), in.readLong());
    }
  }
}
