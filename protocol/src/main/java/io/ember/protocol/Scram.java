package io.ember.protocol;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.text.Normalizer;
import java.util.Base64;
import java.util.function.Function;
import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), the password authentication of {@link
 * EmberKeys#SCRAM}: a client proves it knows a user's password, and the server proves it holds that
 * user's verifier, in two round trips; neither the password nor anything that could stand in for it
 * crosses the wire, and the server keeps only salted verifiers ({@link Verifier}).
 *
 * <p>No channel binding ({@code n,,}): on a plain connection there is no channel to bind, and under
 * TLS the client already checked the server's certificate. Passwords are normalized with Unicode
 * NFKC, the part of SASLprep (RFC 4013) that changes ordinary passwords.
 */
public final class Scram {
  /** The mechanism's name, as credentials files and messages name it. */
  public static final String MECHANISM = "SCRAM-SHA-256";

  /** RFC 7677's minimum, and its recommendation. */
  public static final int DEFAULT_ITERATIONS = 4096;

  /** Beyond this a verifier is refused: a hostile server could make clients spin on it. */
  public static final int MAX_ITERATIONS = 1 << 16;

  /** The longest message either side takes: names, nonces and proofs fit many times over. */
  public static final int MAX_MESSAGE_BYTES = 2048;

  private static final String GS2_HEADER = "n,,";
  private static final String HMAC = "HmacSHA256";
  private static final SecureRandom RANDOM = new SecureRandom();

  private Scram() {}

  /**
   * Whether {@code user} can be a user's name: not empty, at most {@link
   * Permissions#MAX_NAME_BYTES} bytes of UTF-8, no whitespace or control characters, and no ':'
   * (the separator of the groups and credentials files).
   */
  public static boolean validUser(String user) {
    if (user.isEmpty()
        || user.getBytes(StandardCharsets.UTF_8).length > Permissions.MAX_NAME_BYTES) {
      return false;
    }
    return user.codePoints()
        .noneMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c) || c == ':');
  }

  /**
   * What a server keeps of a password: the salt, the iteration count, {@code StoredKey} (to check a
   * client's proof) and {@code ServerKey} (to prove itself), as RFC 5803 writes them: {@code
   * SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>}, each in base64.
   */
  public static final class Verifier {
    private final int iterations;
    private final byte[] salt;
    private final byte[] storedKey;
    private final byte[] serverKey;

    Verifier(int iterations, byte[] salt, byte[] storedKey, byte[] serverKey) {
      this.iterations = iterations;
      this.salt = salt;
      this.storedKey = storedKey;
      this.serverKey = serverKey;
    }

    /** The iterated hash's count. */
    public int iterations() {
      return iterations;
    }

    byte[] salt() {
      return salt;
    }

    byte[] storedKey() {
      return storedKey;
    }

    byte[] serverKey() {
      return serverKey;
    }

    /** A verifier of {@code password} with a fresh 16-byte salt. */
    public static Verifier of(String password, int iterations) {
      byte[] salt = new byte[16];
      RANDOM.nextBytes(salt);
      return of(password, salt, iterations);
    }

    /** The verifier of {@code password} with {@code salt}. */
    public static Verifier of(String password, byte[] salt, int iterations) {
      byte[] salted = saltedPassword(password, salt, iterations);
      return new Verifier(
          iterations, salt.clone(), sha256(clientKey(salted)), hmac(salted, "Server Key"));
    }

    /** RFC 5803's form. */
    public String encode() {
      Base64.Encoder b64 = Base64.getEncoder();
      return MECHANISM
          + "$"
          + iterations
          + ":"
          + b64.encodeToString(salt)
          + "$"
          + b64.encodeToString(storedKey)
          + ":"
          + b64.encodeToString(serverKey);
    }

    /**
     * Reads RFC 5803's form.
     *
     * @throws IllegalArgumentException naming what is wrong (never the keys)
     */
    public static Verifier parse(String text) {
      String[] parts = text.split("\\$", -1);
      if (parts.length != 3 || !parts[0].equals(MECHANISM)) {
        throw new IllegalArgumentException(
            "not a " + MECHANISM + " verifier (" + MECHANISM + "$ITERATIONS:SALT$STORED:SERVER)");
      }
      String[] head = parts[1].split(":", -1);
      String[] keys = parts[2].split(":", -1);
      if (head.length != 2 || keys.length != 2) {
        throw new IllegalArgumentException("a verifier has ITERATIONS:SALT and STORED:SERVER");
      }
      int iterations;
      try {
        iterations = Integer.parseInt(head[0]);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("the iteration count is not a number");
      }
      if (iterations < DEFAULT_ITERATIONS || iterations > MAX_ITERATIONS) {
        throw new IllegalArgumentException(
            "the iteration count must be " + DEFAULT_ITERATIONS + " to " + MAX_ITERATIONS);
      }
      Base64.Decoder b64 = Base64.getDecoder();
      byte[] salt;
      byte[] stored;
      byte[] server;
      try {
        salt = b64.decode(head[1]);
        stored = b64.decode(keys[0]);
        server = b64.decode(keys[1]);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("a salt or key is not base64");
      }
      if (salt.length == 0 || stored.length != 32 || server.length != 32) {
        throw new IllegalArgumentException("a verifier needs a salt and two 32-byte keys");
      }
      return new Verifier(iterations, salt, stored, server);
    }

    @Override
    public String toString() {
      return MECHANISM + " verifier (" + iterations + " iterations)";
    }
  }

  /**
   * One client's side of one exchange: {@link #first}, then {@link #last} with the server's first
   * message, then {@link #check} with its last. Not thread-safe; one per connection.
   */
  public static final class Client {
    private final String user;
    private final String nonce;
    private final Function<Verifier, byte[]> saltedCache;
    private String firstBare;
    private byte[] expectedServerSignature;
    private byte[] storedKey;
    private byte[] blockKeyWrap;

    /**
     * A client that authenticates as {@code user} with {@code password}.
     *
     * @param salted the salted password for a server's salt and count, when already known (the
     *     iterated hash is what makes each connection's exchange cost milliseconds); null to work
     *     it out
     */
    public Client(String user, String password, SaltedPasswords salted) {
      this(user, password, newNonce(), salted);
    }

    /** As {@link #Client(String, String, SaltedPasswords)} with a given nonce (for tests). */
    Client(String user, String password, String nonce, SaltedPasswords salted) {
      this.user = user;
      this.nonce = nonce;
      this.saltedCache =
          v ->
              salted == null
                  ? saltedPassword(password, v.salt(), v.iterations())
                  : salted.get(password, v.salt(), v.iterations());
    }

    /** The client's first message. */
    public String first() {
      firstBare = "n=" + escape(user) + ",r=" + nonce;
      return GS2_HEADER + firstBare;
    }

    /**
     * The client's last message: its proof, for the server's first message.
     *
     * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} when the server's message is not a
     *     SCRAM answer to this client's first (another nonce, a malformed or hostile count)
     */
    public String last(String serverFirst) throws EmberException {
      String[] f = serverFirst.split(",", -1);
      if (f.length < 3
          || !f[0].startsWith("r=")
          || !f[1].startsWith("s=")
          || !f[2].startsWith("i=")) {
        throw refused("its first message is not SCRAM's (r=...,s=...,i=...)");
      }
      String combined = f[0].substring(2);
      if (!combined.startsWith(nonce) || combined.length() == nonce.length()) {
        throw refused("it did not answer this client's nonce");
      }
      byte[] salt;
      int iterations;
      try {
        salt = Base64.getDecoder().decode(f[1].substring(2));
        iterations = Integer.parseInt(f[2].substring(2));
      } catch (IllegalArgumentException e) {
        throw refused("its salt or iteration count is malformed");
      }
      if (salt.length == 0 || iterations < DEFAULT_ITERATIONS || iterations > MAX_ITERATIONS) {
        throw refused("it asks for " + iterations + " iterations or an empty salt");
      }
      byte[] salted = saltedCache.apply(new Verifier(iterations, salt, null, null));
      String withoutProof =
          "c=" + base64(GS2_HEADER.getBytes(StandardCharsets.UTF_8)) + ",r=" + combined;
      byte[] authMessage =
          (firstBare + "," + serverFirst + "," + withoutProof).getBytes(StandardCharsets.UTF_8);
      byte[] clientKey = clientKey(salted);
      storedKey = sha256(clientKey);
      byte[] signature = hmac(storedKey, authMessage);
      byte[] proof = new byte[clientKey.length];
      for (int i = 0; i < proof.length; i++) {
        proof[i] = (byte) (clientKey[i] ^ signature[i]);
      }
      expectedServerSignature = hmac(hmac(salted, "Server Key"), authMessage);
      return withoutProof + ",p=" + base64(proof);
    }

    /**
     * Checks the server's last message: that it proves it holds this user's verifier.
     *
     * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} when it reports an error or proves
     *     nothing
     */
    public void check(String serverLast) throws EmberException {
      if (expectedServerSignature == null) {
        throw new IllegalStateException("check before last");
      }
      if (serverLast.startsWith("e=")) {
        throw refused("it refused: " + serverLast.substring(2));
      }
      byte[] got;
      try {
        got =
            serverLast.startsWith("v=")
                ? Base64.getDecoder().decode(serverLast.substring(2))
                : null;
      } catch (IllegalArgumentException e) {
        got = null;
      }
      if (got == null || !MessageDigest.isEqual(got, expectedServerSignature)) {
        throw refused(
            "it could not prove that it holds " + user + "'s verifier: it is not this cluster's");
      }
      blockKeyWrap = wrapKeyOf(storedKey);
    }

    /**
     * The key {@link BlockKey#masked} masks block keys with on this user's connections, once {@link
     * #check} has passed; null before. The server works out the same from the verifier.
     */
    public byte[] blockKeyWrap() {
      return blockKeyWrap == null ? null : blockKeyWrap.clone();
    }

    private EmberException refused(String why) {
      return new EmberException(
          ErrorCode.UNAUTHENTICATED,
          "the server's " + MECHANISM + " exchange for " + user + " failed: " + why);
    }
  }

  /**
   * Salted passwords this process worked out, by salt and count: a client that reconnects to the
   * same server skips the iterated hash. Holds the last one only.
   */
  public static final class SaltedPasswords {
    private String password;
    private byte[] salt;
    private int iterations;
    private byte[] salted;

    synchronized byte[] get(String password, byte[] salt, int iterations) {
      if (salted == null
          || iterations != this.iterations
          || !java.util.Arrays.equals(salt, this.salt)
          || !password.equals(this.password)) {
        this.salted = saltedPassword(password, salt, iterations);
        this.password = password;
        this.salt = salt.clone();
        this.iterations = iterations;
      }
      return salted;
    }
  }

  /**
   * One server's side of one exchange: {@link #first} with the client's first message, then {@link
   * #last} with its last. A user it does not know goes through the same steps with a verifier made
   * up from a secret of its own, and fails at the same place with the same answer as a wrong
   * password, so the exchange does not tell who has an account.
   */
  public static final class Server {
    private final Function<String, Verifier> verifiers;
    private final byte[] secret;
    private final String nonce;
    private String user;
    private Verifier verifier;
    private boolean known;
    private String clientFirstBare;
    private String serverFirst;
    private boolean done;
    private byte[] blockKeyWrap;

    /**
     * @param verifiers a user's verifier, or null when there is no such user
     * @param secret this server's own random secret, for the made-up verifiers of unknown users
     */
    public Server(Function<String, Verifier> verifiers, byte[] secret) {
      this(verifiers, secret, newNonce());
    }

    Server(Function<String, Verifier> verifiers, byte[] secret, String nonce) {
      this.verifiers = verifiers;
      this.secret = secret;
      this.nonce = nonce;
    }

    /** The user the client claims to be, once {@link #first} has read it. */
    public String user() {
      return user;
    }

    /**
     * The server's first message, for the client's.
     *
     * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} for a message that is not a SCRAM
     *     client's first, or a second one on the same exchange
     */
    public String first(String clientFirst) throws EmberException {
      if (serverFirst != null) {
        throw failed("the exchange has begun already");
      }
      if (!clientFirst.startsWith(GS2_HEADER)) {
        throw failed(
            "the first message must start with 'n,,' (no channel binding, no authorization id)");
      }
      String bare = clientFirst.substring(GS2_HEADER.length());
      String[] f = bare.split(",", -1);
      if (f.length < 2 || !f[0].startsWith("n=") || !f[1].startsWith("r=") || f[1].length() < 10) {
        throw failed("the first message is not n=USER,r=NONCE");
      }
      String name = unescape(f[0].substring(2));
      if (name == null || !validUser(name)) {
        // Checked before the name reaches a log line or an answer.
        throw failed(
            "the user name is empty, badly escaped, or has spaces, control characters or ':'");
      }
      user = name;
      Verifier v = verifiers.apply(name);
      known = v != null;
      verifier = known ? v : madeUp(name);
      clientFirstBare = bare;
      serverFirst =
          "r="
              + f[1].substring(2)
              + nonce
              + ",s="
              + base64(verifier.salt())
              + ",i="
              + verifier.iterations();
      return serverFirst;
    }

    /**
     * The server's last message ({@code v=} its signature) when the client's proof checks out.
     *
     * @throws EmberException {@link ErrorCode#UNAUTHENTICATED} for a wrong password, an unknown
     *     user (the same words), a replayed or altered message, or one out of turn
     */
    public String last(String clientLast) throws EmberException {
      if (serverFirst == null || done) {
        throw failed("the last message came out of turn");
      }
      done = true;
      int proofAt = clientLast.lastIndexOf(",p=");
      if (proofAt < 0) {
        throw failed("the last message has no proof");
      }
      String withoutProof = clientLast.substring(0, proofAt);
      String expectedStart =
          "c="
              + base64(GS2_HEADER.getBytes(StandardCharsets.UTF_8))
              + ",r="
              + serverFirst.substring(2, serverFirst.indexOf(",s="));
      if (!withoutProof.equals(expectedStart)) {
        // Another exchange's message (a replay), or channel data this server did not offer.
        throw failed("the last message does not answer this exchange's nonce");
      }
      byte[] proof;
      try {
        proof = Base64.getDecoder().decode(clientLast.substring(proofAt + 3));
      } catch (IllegalArgumentException e) {
        throw failed("the proof is not base64");
      }
      byte[] authMessage =
          (clientFirstBare + "," + serverFirst + "," + withoutProof)
              .getBytes(StandardCharsets.UTF_8);
      byte[] signature = hmac(verifier.storedKey(), authMessage);
      if (proof.length != signature.length) {
        throw wrongPassword();
      }
      byte[] clientKey = new byte[proof.length];
      for (int i = 0; i < proof.length; i++) {
        clientKey[i] = (byte) (proof[i] ^ signature[i]);
      }
      if (!known || !MessageDigest.isEqual(sha256(clientKey), verifier.storedKey())) {
        throw wrongPassword();
      }
      blockKeyWrap = wrapKeyOf(verifier.storedKey());
      return "v=" + base64(hmac(verifier.serverKey(), authMessage));
    }

    /**
     * The key {@link BlockKey#masked} masks block keys with for the user this exchange proved, once
     * {@link #last} has passed; null before. Only the holders of the user's password or verifier
     * can work it out.
     */
    public byte[] blockKeyWrap() {
      return blockKeyWrap == null ? null : blockKeyWrap.clone();
    }

    private Verifier madeUp(String name) {
      byte[] salt = java.util.Arrays.copyOf(hmac(secret, "salt:" + name), 16);
      return new Verifier(
          DEFAULT_ITERATIONS, salt, hmac(secret, "stored:" + name), hmac(secret, "server:" + name));
    }

    private EmberException wrongPassword() {
      return new EmberException(
          ErrorCode.UNAUTHENTICATED,
          MECHANISM
              + " authentication as "
              + user
              + " failed: unknown user or wrong password (check "
              + EmberKeys.USER.name()
              + " and "
              + EmberKeys.PASSWORD.name()
              + ")");
    }

    private static EmberException failed(String why) {
      return new EmberException(ErrorCode.UNAUTHENTICATED, MECHANISM + " exchange refused: " + why);
    }
  }

  private static byte[] wrapKeyOf(byte[] storedKey) {
    return hmac(storedKey, "ember block keys");
  }

  /** A fresh random nonce: 18 random bytes in base64 (no commas). */
  static String newNonce() {
    byte[] b = new byte[18];
    RANDOM.nextBytes(b);
    return base64(b);
  }

  /** RFC 5802's saslname: '=' and ',' escaped. */
  static String escape(String user) {
    return user.replace("=", "=3D").replace(",", "=2C");
  }

  /** The reverse of {@link #escape}, or null for an '=' that starts no escape. */
  static String unescape(String name) {
    StringBuilder out = new StringBuilder(name.length());
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c != '=') {
        out.append(c);
      } else if (name.startsWith("=3D", i)) {
        out.append('=');
        i += 2;
      } else if (name.startsWith("=2C", i)) {
        out.append(',');
        i += 2;
      } else {
        return null;
      }
    }
    return out.toString();
  }

  static byte[] saltedPassword(String password, byte[] salt, int iterations) {
    String normalized = Normalizer.normalize(password, Normalizer.Form.NFKC);
    try {
      SecretKeyFactory pbkdf2 = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
      return pbkdf2
          .generateSecret(new PBEKeySpec(normalized.toCharArray(), salt, iterations, 256))
          .getEncoded();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("PBKDF2WithHmacSHA256 is missing from this JVM", e);
    }
  }

  private static byte[] clientKey(byte[] salted) {
    return hmac(salted, "Client Key");
  }

  private static byte[] hmac(byte[] key, String text) {
    return hmac(key, text.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] hmac(byte[] key, byte[] data) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac.doFinal(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(HMAC + " is missing from this JVM", e);
    }
  }

  private static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  private static String base64(byte[] b) {
    return Base64.getEncoder().encodeToString(b);
  }
}
