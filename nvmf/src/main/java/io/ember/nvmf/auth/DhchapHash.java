package io.ember.nvmf.auth;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** The hash functions of DH-HMAC-CHAP, with the identifiers its messages and secrets use. */
public enum DhchapHash {
  SHA256(1, "sha256", 32, "HmacSHA256", "SHA-256"),
  SHA384(2, "sha384", 48, "HmacSHA384", "SHA-384"),
  SHA512(3, "sha512", 64, "HmacSHA512", "SHA-512");

  private final int id;
  private final String label;
  private final int length;
  private final String mac;
  private final String digest;

  DhchapHash(int id, String label, int length, String mac, String digest) {
    this.id = id;
    this.label = label;
    this.length = length;
    this.mac = mac;
    this.digest = digest;
  }

  /** The identifier in messages and in a secret's {@code DHHC-1:XX:} field. */
  public int id() {
    return id;
  }

  /** The name, e.g. {@code sha256}; Linux's configfs writes it {@code hmac(sha256)}. */
  public String label() {
    return label;
  }

  /** Digest length in bytes. */
  public int length() {
    return length;
  }

  /**
   * The hash with identifier {@code id}, or null when there is none.
   *
   * @param id a hash identifier from a message
   */
  public static DhchapHash byId(int id) {
    for (DhchapHash h : values()) {
      if (h.id == id) {
        return h;
      }
    }
    return null;
  }

  /**
   * The hash named {@code name}: {@code sha256}, {@code sha384} or {@code sha512}, also written as
   * Linux writes them ({@code hmac(sha256)}).
   *
   * @throws IllegalArgumentException for any other name, listing the valid ones
   */
  public static DhchapHash byName(String name) {
    String n = name.trim().toLowerCase(java.util.Locale.ROOT);
    if (n.startsWith("hmac(") && n.endsWith(")")) {
      n = n.substring(5, n.length() - 1);
    }
    for (DhchapHash h : values()) {
      if (h.label.equals(n.replace("-", ""))) {
        return h;
      }
    }
    throw new IllegalArgumentException(
        "unknown DH-HMAC-CHAP hash '" + name + "': use sha256, sha384 or sha512");
  }

  /** HMAC with this hash under {@code key}, over the concatenation of {@code parts}. */
  byte[] hmac(byte[] key, byte[]... parts) {
    try {
      Mac m = Mac.getInstance(mac);
      m.init(new SecretKeySpec(key, mac));
      for (byte[] p : parts) {
        m.update(p);
      }
      return m.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK has no " + mac, e);
    }
  }

  /** This hash of {@code data}. */
  byte[] digest(byte[] data) {
    try {
      return MessageDigest.getInstance(digest).digest(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK has no " + digest, e);
    }
  }
}
