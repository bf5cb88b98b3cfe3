package io.ember.nvmf.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * A DH-HMAC-CHAP secret in the NVMe representation {@code DHHC-1:XX:<base64 of key and CRC-32>:},
 * as {@code nvme gen-dhchap-key} writes it and Linux's configfs takes it. {@code XX} names the hash
 * that binds the key to an NQN before use ({@code 00}: used as it is).
 */
public final class DhchapSecret {
  private static final String PREFIX = "DHHC-1:";
  private static final byte[] SEED = "NVMe-over-Fabrics".getBytes(StandardCharsets.US_ASCII);

  private final DhchapHash transform;
  private final byte[] key;

  private DhchapSecret(DhchapHash transform, byte[] key) {
    this.transform = transform;
    this.key = key;
  }

  /**
   * Parses {@code DHHC-1:XX:<base64>:} (surrounding white space and a missing final colon are
   * accepted, as Linux accepts them).
   *
   * @throws IllegalArgumentException when the text is not such a secret: a wrong prefix, an unknown
   *     transformation, bad base64, a key that is not 32, 48 or 64 bytes, or a CRC that does not
   *     match (a secret copied wrong). The message never contains the secret.
   */
  public static DhchapSecret parse(String text) {
    String s = text.trim();
    if (!s.startsWith(PREFIX) || s.length() < PREFIX.length() + 4 || s.charAt(9) != ':') {
      throw new IllegalArgumentException(
          "a DH-HMAC-CHAP secret has the form DHHC-1:XX:<base64>: (as nvme gen-dhchap-key prints"
              + " it)");
    }
    int xx;
    try {
      xx = Integer.parseInt(s.substring(7, 9), 16);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "the DH-HMAC-CHAP secret's transformation '" + s.substring(7, 9) + "' is not 00..03");
    }
    if (xx > 3) {
      throw new IllegalArgumentException(
          "the DH-HMAC-CHAP secret's transformation " + xx + " is not 00..03");
    }
    String b64 = s.endsWith(":") ? s.substring(10, s.length() - 1) : s.substring(10);
    byte[] raw;
    try {
      raw = Base64.getDecoder().decode(b64);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the DH-HMAC-CHAP secret's key is not valid base64");
    }
    if (raw.length != 36 && raw.length != 52 && raw.length != 68) {
      throw new IllegalArgumentException(
          "the DH-HMAC-CHAP secret holds "
              + Math.max(0, raw.length - 4)
              + " key bytes; it must hold 32, 48 or 64");
    }
    byte[] key = Arrays.copyOf(raw, raw.length - 4);
    int stored = ByteBuffer.wrap(raw, raw.length - 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    Arrays.fill(raw, (byte) 0);
    if (stored != crc(key)) {
      Arrays.fill(key, (byte) 0);
      throw new IllegalArgumentException(
          "the DH-HMAC-CHAP secret's checksum does not match its key (copied wrong?)");
    }
    return new DhchapSecret(xx == 0 ? null : DhchapHash.byId(xx), key);
  }

  /**
   * A new random secret of {@code length} bytes (32, 48 or 64) whose use is bound to an NQN through
   * {@code transform}, or used as it is when {@code transform} is null.
   *
   * @throws IllegalArgumentException for another length
   */
  public static DhchapSecret generate(DhchapHash transform, int length, SecureRandom random) {
    if (length != 32 && length != 48 && length != 64) {
      throw new IllegalArgumentException("a DH-HMAC-CHAP key is 32, 48 or 64 bytes, not " + length);
    }
    byte[] key = new byte[length];
    random.nextBytes(key);
    return new DhchapSecret(transform, key);
  }

  /** The text form, {@code DHHC-1:XX:<base64>:}. It contains the secret: do not log it. */
  public String encoded() {
    byte[] raw = Arrays.copyOf(key, key.length + 4);
    ByteBuffer.wrap(raw, key.length, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(crc(key));
    String s =
        String.format("%s%02x:%s:", PREFIX, transform == null ? 0 : transform.id(), b64(raw));
    Arrays.fill(raw, (byte) 0);
    return s;
  }

  /** The hash that binds the key to an NQN, or null when the key is used as it is. */
  public DhchapHash transformHash() {
    return transform;
  }

  /** The key's length in bytes. */
  public int length() {
    return key.length;
  }

  /**
   * The key as it is used for {@code nqn}: HMAC of {@code nqn || "NVMe-over-Fabrics"} under the key
   * with the secret's own hash, or the key itself for {@code 00}. The host's secret is bound to the
   * host NQN, the controller's to the subsystem NQN.
   */
  byte[] transformed(String nqn) {
    if (transform == null) {
      return key.clone();
    }
    return transform.hmac(key, nqn.getBytes(StandardCharsets.UTF_8), SEED);
  }

  /** Whether {@code other} holds the same key and transformation (compared in constant time). */
  public boolean sameAs(DhchapSecret other) {
    return other != null
        && other.transform == transform
        && java.security.MessageDigest.isEqual(other.key, key);
  }

  @Override
  public String toString() {
    return "DHHC-1:" + String.format("%02x", transform == null ? 0 : transform.id()) + ":<hidden>:";
  }

  private static int crc(byte[] key) {
    CRC32 c = new CRC32();
    c.update(key);
    return (int) c.getValue();
  }

  private static String b64(byte[] raw) {
    return Base64.getEncoder().encodeToString(raw);
  }
}
