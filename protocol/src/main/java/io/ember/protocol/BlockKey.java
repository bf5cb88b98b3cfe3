package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * A key the name node signs block tokens with, as it hands it to its data nodes in registration and
 * heartbeat answers: in the clear over TLS, {@linkplain #masked masked} over a connection that only
 * a password exchange (SCRAM) authenticated, which anyone on the path could read.
 *
 * @param id the key's number, never 0
 * @param expiresMillis after this no token it signed holds, milliseconds since the epoch
 * @param secret the HMAC-SHA256 key, {@link #SECRET_BYTES} long
 */
@SuppressWarnings("ArrayRecordComponent") // copied in and out, compared by content
public record BlockKey(int id, long expiresMillis, byte[] secret) {
  /** Length of a secret. */
  public static final int SECRET_BYTES = 32;

  /** Most keys one answer carries. */
  public static final int MAX_KEYS = 16;

  /** Copies the secret. */
  public BlockKey {
    secret = secret.clone();
  }

  @Override
  public byte[] secret() {
    return secret.clone();
  }

  /**
   * This key with its secret masked for a connection that is not encrypted: XORed with
   * HMAC-SHA256({@code wrapKey}, "ember block key" ‖ id ‖ expiry). The wrap key comes from a
   * password exchange ({@link Scram.Client#blockKeyWrap}, {@link Scram.Server#blockKeyWrap}), so
   * only the name node and the data node that proved its password can work the pad out: an
   * eavesdropper learns nothing that signs a token unless it guesses that password from a recorded
   * exchange (SCRAM's verifiers are iterated hashes, not proof against weak passwords). Masking
   * again with the same wrap key gives the key back.
   */
  public BlockKey masked(byte[] wrapKey) {
    byte[] pad;
    try {
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new javax.crypto.spec.SecretKeySpec(wrapKey, "HmacSHA256"));
      mac.update("ember block key".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      mac.update(java.nio.ByteBuffer.allocate(12).putInt(id).putLong(expiresMillis).array());
      pad = mac.doFinal();
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
    }
    byte[] out = new byte[SECRET_BYTES];
    for (int i = 0; i < SECRET_BYTES; i++) {
      out[i] = (byte) (secret[i] ^ pad[i]);
    }
    return new BlockKey(id, expiresMillis, out);
  }

  /** Writes a list of keys. */
  public static void encode(ByteBuf out, List<BlockKey> keys) {
    out.writeInt(keys.size());
    for (BlockKey k : keys) {
      out.writeInt(k.id);
      out.writeLong(k.expiresMillis);
      out.writeBytes(k.secret);
    }
  }

  /** Reads a list written by {@link #encode}. */
  public static List<BlockKey> decode(ByteBuf in) throws MalformedFrameException {
    int n = Wire.readCount(in, "block key count", MAX_KEYS, 4 + 8 + SECRET_BYTES);
    List<BlockKey> keys = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int id = Wire.readInt(in, "block key id", 1, Integer.MAX_VALUE);
      long expires = Wire.readLong(in, "block key expiry");
      byte[] secret = new byte[SECRET_BYTES];
      in.readBytes(secret);
      keys.add(new BlockKey(id, expires, secret));
    }
    return keys;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BlockKey k
        && id == k.id
        && expiresMillis == k.expiresMillis
        && java.util.Arrays.equals(secret, k.secret);
  }

  @Override
  public int hashCode() {
    return id;
  }

  /** Never shows the secret. */
  @Override
  public String toString() {
    return "block key " + id + " until " + expiresMillis;
  }
}
