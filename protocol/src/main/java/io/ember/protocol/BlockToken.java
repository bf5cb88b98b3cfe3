package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The name node's grant of access to one block, as HDFS's block access token: which key signed it,
 * until when it holds, for reading or writing, and an HMAC-SHA256 over those, the block (id,
 * generation, the data node's contents incarnation, slot address) and the identity it was granted
 * to. A data node that holds the key checks it against the block a request names and the identity
 * of the connection it came on, so a client cannot reach a block the name node did not give it, nor
 * use another's token.
 *
 * @param keyId the signing key ({@code 0}: no token, on a cluster without TLS)
 * @param expiresMillis when it stops holding, milliseconds since the epoch
 * @param modes {@link #READ}, {@link #WRITE} and {@link #LENGTH} bits
 * @param mac the HMAC, {@link #MAC_BYTES} long (empty for no token)
 */
@SuppressWarnings("ArrayRecordComponent") // copied in and out, compared by content
public record BlockToken(int keyId, long expiresMillis, int modes, byte[] mac) {
  /** Access to read the block. */
  public static final int READ = 1;

  /** Access to write the block. */
  public static final int WRITE = 2;

  /**
   * The name node's own: to ask how much the block holds (BLOCK_LENGTH, at lease recovery). Never
   * granted to a client, so a data node that shows no certificate to check can tell the name node
   * from a reader.
   */
  public static final int LENGTH = 4;

  /** Length of the HMAC-SHA256. */
  public static final int MAC_BYTES = 32;

  /** Encoded size: every token takes the same room, so frames that carry one keep fixed fields. */
  public static final int BYTES = 4 + 8 + 1 + MAC_BYTES;

  /** No token: what a cluster without TLS hands out. */
  public static final BlockToken NONE = new BlockToken(0, 0, 0, new byte[MAC_BYTES]);

  private static final String ALGORITHM = "HmacSHA256";

  /** Copies the MAC. */
  public BlockToken {
    mac = mac.clone();
  }

  @Override
  public byte[] mac() {
    return mac.clone();
  }

  /** True for {@link #NONE} and any token of key 0. */
  public boolean isNone() {
    return keyId == 0;
  }

  /** Writes the token's {@link #BYTES} bytes. */
  public void encode(ByteBuf out) {
    out.writeInt(keyId);
    out.writeLong(expiresMillis);
    out.writeByte(modes);
    out.writeBytes(mac, 0, MAC_BYTES);
  }

  /** Reads a token written by {@link #encode}. */
  public static BlockToken decode(ByteBuf in) throws MalformedFrameException {
    int keyId = Wire.readInt(in, "block token key");
    long expires = Wire.readLong(in, "block token expiry");
    int modes = Wire.readByte(in, "block token modes") & 0xff;
    if (modes > (READ | WRITE | LENGTH)) {
      throw new MalformedFrameException(
          "block token modes " + modes + " are not read, write or length");
    }
    if (in.readableBytes() < MAC_BYTES) {
      throw new MalformedFrameException("block token MAC cut short");
    }
    byte[] mac = new byte[MAC_BYTES];
    in.readBytes(mac);
    return new BlockToken(keyId, expires, modes, mac);
  }

  /**
   * Signs a token for {@code identity} to reach the block of {@code location} with {@code modes}.
   */
  public static BlockToken sign(
      int keyId,
      byte[] secret,
      BlockLocation location,
      int modes,
      long expiresMillis,
      String identity) {
    return new BlockToken(
        keyId,
        expiresMillis,
        modes,
        mac(
            secret,
            keyId,
            expiresMillis,
            modes,
            location.blockId(),
            location.generation(),
            location.incarnation(),
            location.address(),
            identity));
  }

  /**
   * True when this token was signed with {@code secret} for {@code identity} to reach block {@code
   * blockId} of generation {@code generation} in the slot at {@code blockAddress} of the data node
   * contents {@code incarnation} names; the caller checks the key, expiry and modes.
   */
  public boolean signs(
      byte[] secret,
      long blockId,
      long generation,
      long incarnation,
      long blockAddress,
      String identity) {
    byte[] expected =
        mac(
            secret,
            keyId,
            expiresMillis,
            modes,
            blockId,
            generation,
            incarnation,
            blockAddress,
            identity);
    return MessageDigest.isEqual(expected, mac);
  }

  private static byte[] mac(
      byte[] secret,
      int keyId,
      long expiresMillis,
      int modes,
      long blockId,
      long generation,
      long incarnation,
      long blockAddress,
      String identity) {
    byte[] who = identity.getBytes(StandardCharsets.UTF_8);
    ByteBuffer fields = ByteBuffer.allocate(4 + 8 + 1 + 8 + 8 + 8 + 8 + who.length);
    fields
        .putInt(keyId)
        .putLong(expiresMillis)
        .put((byte) modes)
        .putLong(blockId)
        .putLong(generation)
        .putLong(incarnation)
        .putLong(blockAddress)
        .put(who);
    try {
      Mac hmac = Mac.getInstance(ALGORITHM);
      hmac.init(new SecretKeySpec(secret, ALGORITHM));
      return hmac.doFinal(fields.array());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HMAC-SHA256 is part of every JDK", e);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BlockToken t
        && keyId == t.keyId
        && expiresMillis == t.expiresMillis
        && modes == t.modes
        && Arrays.equals(mac, t.mac);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(mac) * 31 + keyId;
  }

  @Override
  public String toString() {
    return isNone() ? "no token" : "token of key " + keyId + " until " + expiresMillis;
  }
}
