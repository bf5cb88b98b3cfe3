package io.ember.protocol;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataInputStream;
import java.io.DataOutput;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A name node's delegation token, as HDFS's: a process that holds one (a Spark executor, a job's
 * task) acts as its {@linkplain Identifier#owner owner} without the owner's certificate, until the
 * token expires or is cancelled. The token is its identifier and a password, the HMAC-SHA256 of the
 * identifier under a key only the name node holds; the name node keeps which tokens are live and
 * until when.
 *
 * @param identifier who, for whom, and which token
 * @param password the HMAC of the identifier's bytes, {@link #PASSWORD_BYTES} long
 */
@SuppressWarnings("ArrayRecordComponent") // copied in and out, compared by content
public record DelegationToken(Identifier identifier, byte[] password) {
  /** Length of the HMAC-SHA256. */
  public static final int PASSWORD_BYTES = 32;

  /** Longest encoded token taken off the wire or out of configuration. */
  public static final int MAX_BYTES = 2048;

  /** The kind Hadoop's credentials file this token under. */
  public static final String KIND = "EMBER_DELEGATION_TOKEN";

  private static final String ALGORITHM = "HmacSHA256";
  private static final int VERSION = 1;

  /** Copies the password. */
  public DelegationToken {
    password = password.clone();
  }

  @Override
  public byte[] password() {
    return password.clone();
  }

  /**
   * What a token says, signed as a whole by its password.
   *
   * @param owner the identity the token acts as
   * @param renewer who may renew it (empty: its owner)
   * @param issueMillis when it was issued, milliseconds since the epoch
   * @param maxMillis the last moment any renewal reaches
   * @param sequence the name node's number for it
   * @param keyId the name node key its password was made with
   */
  public record Identifier(
      String owner, String renewer, long issueMillis, long maxMillis, long sequence, int keyId) {
    /**
     * Writes the identifier as Hadoop's {@code TokenIdentifier.write} does; {@link #read} reads it.
     *
     * @throws IOException from {@code out}
     */
    public void write(DataOutput out) throws IOException {
      out.writeByte(VERSION);
      out.writeUTF(owner);
      out.writeUTF(renewer);
      out.writeLong(issueMillis);
      out.writeLong(maxMillis);
      out.writeLong(sequence);
      out.writeInt(keyId);
    }

    /**
     * Reads what {@link #write} wrote.
     *
     * @throws IOException when {@code in} ends early or holds another version
     */
    public static Identifier read(DataInput in) throws IOException {
      int version = in.readByte();
      if (version != VERSION) {
        throw new IOException("a delegation token identifier of version " + version);
      }
      return new Identifier(
          in.readUTF(), in.readUTF(), in.readLong(), in.readLong(), in.readLong(), in.readInt());
    }

    /** The bytes {@link #write} writes: what the password signs. */
    public byte[] bytes() {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        write(out);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return bytes.toByteArray();
    }

    /** The identifier {@code bytes} hold, whole. */
    public static Identifier fromBytes(byte[] bytes) throws IOException {
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
      Identifier id = read(in);
      if (in.available() != 0) {
        throw new IOException(in.available() + " bytes after a delegation token identifier");
      }
      return id;
    }

    /** Who may renew it: the renewer named, or its owner when none was. */
    public String effectiveRenewer() {
      return renewer.isEmpty() ? owner : renewer;
    }

    /** "token 7 of alice (renewer spark), issued ...": no secret in it. */
    @Override
    public String toString() {
      return "delegation token "
          + sequence
          + " of "
          + owner
          + (renewer.isEmpty() ? "" : " (renewer " + renewer + ")")
          + ", issued "
          + Instant.ofEpochMilli(issueMillis);
    }
  }

  /** The password for {@code identifier} under {@code key}. */
  public static byte[] sign(byte[] key, Identifier identifier) {
    try {
      Mac mac = Mac.getInstance(ALGORITHM);
      mac.init(new SecretKeySpec(key, ALGORITHM));
      return mac.doFinal(identifier.bytes());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + ALGORITHM, e);
    }
  }

  /** True when {@code key} made this token's password, compared in constant time. */
  public boolean signedWith(byte[] key) {
    return MessageDigest.isEqual(sign(key, identifier), password);
  }

  /** The token's bytes: the identifier's and the password's, each after its length. */
  public byte[] encode() {
    byte[] id = identifier.bytes();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(id.length + PASSWORD_BYTES + 8);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeShort(id.length);
      out.write(id);
      out.writeShort(password.length);
      out.write(password);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Reads what {@link #encode} wrote.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} when the bytes are not a token
   */
  public static DelegationToken decode(byte[] bytes) throws EmberException {
    if (bytes.length > MAX_BYTES) {
      throw notAToken(bytes.length + " bytes is longer than any token");
    }
    try {
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
      byte[] id = new byte[in.readUnsignedShort()];
      in.readFully(id);
      byte[] password = new byte[in.readUnsignedShort()];
      in.readFully(password);
      if (in.available() != 0) {
        throw new IOException(in.available() + " bytes after the password");
      }
      if (password.length != PASSWORD_BYTES) {
        throw new IOException("a password of " + password.length + " bytes");
      }
      return new DelegationToken(Identifier.fromBytes(id), password);
    } catch (IOException e) {
      throw notAToken(e.getMessage());
    }
  }

  /** The token as text for configuration: URL-safe Base64 of {@link #encode}, unpadded. */
  public String encodeToString() {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(encode());
  }

  /**
   * Reads what {@link #encodeToString} wrote.
   *
   * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} when the text is not a token
   */
  public static DelegationToken decodeString(String text) throws EmberException {
    byte[] bytes;
    try {
      bytes = Base64.getUrlDecoder().decode(text.trim().getBytes(StandardCharsets.US_ASCII));
    } catch (IllegalArgumentException e) {
      throw notAToken("it is not URL-safe Base64");
    }
    return decode(bytes);
  }

  private static EmberException notAToken(String why) {
    return new EmberException(
        ErrorCode.UNAUTHENTICATED, "not an Ember delegation token (" + why + ")");
  }

  /** The identifier only: the password is a secret. */
  @Override
  public String toString() {
    return identifier.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DelegationToken t
        && identifier.equals(t.identifier)
        && MessageDigest.isEqual(password, t.password);
  }

  @Override
  public int hashCode() {
    return identifier.hashCode();
  }
}
