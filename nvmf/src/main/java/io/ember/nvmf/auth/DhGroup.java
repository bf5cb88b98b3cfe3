package io.ember.nvmf.auth;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import javax.crypto.KeyAgreement;
import javax.crypto.interfaces.DHPublicKey;
import javax.crypto.spec.DHParameterSpec;
import javax.crypto.spec.DHPublicKeySpec;

/**
 * The Diffie-Hellman groups of DH-HMAC-CHAP: none (the null group, a plain challenge and response)
 * and the finite-field groups of RFC 7919, generator 2. The JDK keeps these primes to its TLS code,
 * so they are written out here.
 */
public enum DhGroup {
  NULL(0, "null", 0, null),
  FFDHE2048(
      1,
      "ffdhe2048",
      256,
      "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce"
          + "249b3ef97d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3"
          + "b557135e7f57c935984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182"
          + "b324fb61d108a94bb2c8e3fbb96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d70"
          + "9e02fce1cdf7e2ecc03404cd28342f619172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc"
          + "2ec22005c58ef1837d1683b2c6f34a26c1b2effa886b423861285c97ffffffffffffffff"),
  FFDHE3072(
      2,
      "ffdhe3072",
      384,
      "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce"
          + "249b3ef97d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3"
          + "b557135e7f57c935984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182"
          + "b324fb61d108a94bb2c8e3fbb96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d70"
          + "9e02fce1cdf7e2ecc03404cd28342f619172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc"
          + "2ec22005c58ef1837d1683b2c6f34a26c1b2effa886b4238611fcfdcde355b3b6519035bbc34f4def99c0238"
          + "61b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91caefe130985139270b4130c93bc437944f4fd4452"
          + "e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0dabc521979b0deada1dbf9a42d5c4484e"
          + "0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b66c62e37ffffffffffffffff"),
  FFDHE4096(
      3,
      "ffdhe4096",
      512,
      "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce"
          + "249b3ef97d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3"
          + "b557135e7f57c935984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182"
          + "b324fb61d108a94bb2c8e3fbb96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d70"
          + "9e02fce1cdf7e2ecc03404cd28342f619172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc"
          + "2ec22005c58ef1837d1683b2c6f34a26c1b2effa886b4238611fcfdcde355b3b6519035bbc34f4def99c0238"
          + "61b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91caefe130985139270b4130c93bc437944f4fd4452"
          + "e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0dabc521979b0deada1dbf9a42d5c4484e"
          + "0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb7930e9e4e58857b6ac7d5f42"
          + "d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832a907600a918130c4"
          + "6dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf8ec9b55a"
          + "7f88a46b4db5a851f44182e1c68a007e5e655f6affffffffffffffff"),
  FFDHE6144(
      4,
      "ffdhe6144",
      768,
      "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce"
          + "249b3ef97d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3"
          + "b557135e7f57c935984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182"
          + "b324fb61d108a94bb2c8e3fbb96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d70"
          + "9e02fce1cdf7e2ecc03404cd28342f619172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc"
          + "2ec22005c58ef1837d1683b2c6f34a26c1b2effa886b4238611fcfdcde355b3b6519035bbc34f4def99c0238"
          + "61b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91caefe130985139270b4130c93bc437944f4fd4452"
          + "e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0dabc521979b0deada1dbf9a42d5c4484e"
          + "0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb7930e9e4e58857b6ac7d5f42"
          + "d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832a907600a918130c4"
          + "6dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf8ec9b55a"
          + "7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6"
          + "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb"
          + "4cfdb477a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3"
          + "587e38da0077d9b4763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db58"
          + "47a67cbef9c9091b462d538cd72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b9117"
          + "8ccf2dd5cacef403ec9d1810c6272b045b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d"
          + "7938dad4a40e329cd0e40e65ffffffffffffffff"),
  FFDHE8192(
      5,
      "ffdhe8192",
      1024,
      "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce"
          + "249b3ef97d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3"
          + "b557135e7f57c935984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182"
          + "b324fb61d108a94bb2c8e3fbb96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d70"
          + "9e02fce1cdf7e2ecc03404cd28342f619172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc"
          + "2ec22005c58ef1837d1683b2c6f34a26c1b2effa886b4238611fcfdcde355b3b6519035bbc34f4def99c0238"
          + "61b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91caefe130985139270b4130c93bc437944f4fd4452"
          + "e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0dabc521979b0deada1dbf9a42d5c4484e"
          + "0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb7930e9e4e58857b6ac7d5f42"
          + "d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832a907600a918130c4"
          + "6dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf8ec9b55a"
          + "7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6"
          + "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb"
          + "4cfdb477a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3"
          + "587e38da0077d9b4763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db58"
          + "47a67cbef9c9091b462d538cd72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b9117"
          + "8ccf2dd5cacef403ec9d1810c6272b045b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d"
          + "7938dad4a40e329ccff46aaa36ad004cf600c8381e425a31d951ae64fdb23fcec9509d43687feb69edd1cc5e"
          + "0b8cc3bdf64b10ef86b63142a3ab8829555b2f747c932665cb2c0f1cc01bd70229388839d2af05e454504ac7"
          + "8b7582822846c0ba35c35f5c59160cc046fd8251541fc68c9c86b022bb7099876a460e7451a8a93109703fee"
          + "1c217e6c3826e52c51aa691e0e423cfc99e9e31650c1217b624816cdad9a95f9d5b8019488d9c0a0a1fe3075"
          + "a577e23183f81d4a3f2fa4571efc8ce0ba8a4fe8b6855dfe72b0a66eded2fbabfbe58a30fafabe1c5d71a87e"
          + "2f741ef8c1fe86fea6bbfde530677f0d97d11d49f7a8443d0822e506a9f4614e011e2a94838ff88cd68c8bb7"
          + "c5c6424cffffffffffffffff");

  private final int id;
  private final String label;
  private final int bytes;
  private final BigInteger p;

  DhGroup(int id, String label, int bytes, String primeHex) {
    this.id = id;
    this.label = label;
    this.bytes = bytes;
    this.p = primeHex == null ? null : new BigInteger(primeHex, 16);
  }

  /** The group's identifier in DH-HMAC-CHAP messages (0 for the null group). */
  public int id() {
    return id;
  }

  /** The group's name as Linux's configfs and nvme-cli write it, e.g. {@code ffdhe2048}. */
  public String label() {
    return label;
  }

  /** Length in bytes of a public value and of the shared secret (0 for the null group). */
  public int valueBytes() {
    return bytes;
  }

  /** The prime, or null for the null group. */
  BigInteger prime() {
    return p;
  }

  /**
   * The group with identifier {@code id}, or null when there is none.
   *
   * @param id a DH group identifier from a message
   */
  public static DhGroup byId(int id) {
    for (DhGroup g : values()) {
      if (g.id == id) {
        return g;
      }
    }
    return null;
  }

  /**
   * The group named {@code name} ({@code null}, {@code ffdhe2048} ... {@code ffdhe8192}).
   *
   * @throws IllegalArgumentException for any other name, listing the valid ones
   */
  public static DhGroup byName(String name) {
    for (DhGroup g : values()) {
      if (g.label.equalsIgnoreCase(name.trim())) {
        return g;
      }
    }
    throw new IllegalArgumentException(
        "unknown DH-HMAC-CHAP group '"
            + name
            + "': use null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144 or ffdhe8192");
  }

  /** A fresh key pair in this group. Not for the null group. */
  KeyPair generate(SecureRandom random) {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("DH");
      g.initialize(new DHParameterSpec(p, BigInteger.TWO), random);
      return g.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK cannot make " + label + " keys", e);
    }
  }

  /** The public value of {@code pair}, big-endian and padded to {@link #valueBytes()}. */
  byte[] publicValue(KeyPair pair) {
    return fixed(((DHPublicKey) pair.getPublic()).getY(), bytes);
  }

  /**
   * The shared secret of {@code own} and the peer's public value, padded to {@link #valueBytes()}.
   *
   * @throws GeneralSecurityException when the peer's value is not within 1 &lt; y &lt; p-1. For
   *     these safe primes that is the whole check RFC 7919 (section 5.1) asks for: it keeps a peer
   *     from forcing the secret into a small subgroup. Linux also checks y^q = 1, a full-size
   *     exponentiation: here it made an ffdhe8192 connect four times as slow, for nothing.
   */
  byte[] agree(KeyPair own, byte[] peerValue) throws GeneralSecurityException {
    BigInteger y = new BigInteger(1, peerValue);
    if (y.compareTo(BigInteger.ONE) <= 0 || y.compareTo(p.subtract(BigInteger.ONE)) >= 0) {
      throw new GeneralSecurityException("the peer's " + label + " public value is not valid");
    }
    KeyAgreement ka = KeyAgreement.getInstance("DH");
    ka.init(own.getPrivate());
    ka.doPhase(
        KeyFactory.getInstance("DH").generatePublic(new DHPublicKeySpec(y, p, BigInteger.TWO)),
        true);
    return fixed(new BigInteger(1, ka.generateSecret()), bytes);
  }

  static byte[] fixed(BigInteger v, int len) {
    byte[] raw = v.toByteArray();
    byte[] out = new byte[len];
    int n = Math.min(raw.length, len);
    System.arraycopy(raw, raw.length - n, out, len - n, n);
    return out;
  }
}
