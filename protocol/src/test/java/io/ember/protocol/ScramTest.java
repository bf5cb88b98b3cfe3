package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * SCRAM-SHA-256 against RFC 7677's example exchange, and each way an exchange must fail: a wrong
 * password, an unknown user (with the same words), a replayed or truncated message, a server that
 * cannot prove it holds the verifier, messages out of turn.
 */
class ScramTest {
  // RFC 7677, section 3.
  private static final String CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO";
  private static final String SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
  private static final String SALT = "W22ZaJ0SNY7soEsUEjb6gQ==";
  private static final String CLIENT_FIRST = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
  private static final String SERVER_FIRST =
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
  private static final String CLIENT_LAST =
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
          + "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  private static final String SERVER_LAST = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

  private static final byte[] SECRET = "test secret".getBytes(StandardCharsets.US_ASCII);

  private static Scram.Verifier pencil() {
    return Scram.Verifier.of("pencil", Base64.getDecoder().decode(SALT), 4096);
  }

  @Test
  void bothSidesMatchRfc7677sExample() throws Exception {
    Scram.Client client = new Scram.Client("user", "pencil", CLIENT_NONCE, null);
    assertEquals(CLIENT_FIRST, client.first());
    assertEquals(CLIENT_LAST, client.last(SERVER_FIRST));
    client.check(SERVER_LAST);

    Scram.Server server = new Scram.Server(Map.of("user", pencil())::get, SECRET, SERVER_NONCE);
    assertEquals(SERVER_FIRST, server.first(CLIENT_FIRST));
    assertEquals(SERVER_LAST, server.last(CLIENT_LAST));
    assertEquals("user", server.user());
  }

  @Test
  void aVerifierReadsBackAsWrittenAndBadOnesAreNamed() {
    Scram.Verifier v = Scram.Verifier.of("pencil", 4096);
    String text = v.encode();
    assertTrue(text.startsWith("SCRAM-SHA-256$4096:"), text);
    assertEquals(text, Scram.Verifier.parse(text).encode());
    assertNotEquals(text, Scram.Verifier.of("pencil", 4096).encode(), "a fresh salt each time");
    for (String bad :
        new String[] {
          "",
          "SCRAM-SHA-1$4096:c2FsdA==$a:b",
          "SCRAM-SHA-256$10:c2FsdA==$" + text.split("\\$", -1)[2],
          "SCRAM-SHA-256$4096:c2FsdA==$short:keys",
          "SCRAM-SHA-256$4096:!!$" + text.split("\\$", -1)[2]
        }) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> Scram.Verifier.parse(bad), bad);
      assertTrue(!e.getMessage().contains(text.split("\\$", -1)[2]), "no key in the message");
    }
  }

  /** Runs a whole exchange of {@code client} against {@code server}. */
  private static void exchange(Scram.Client client, Scram.Server server) throws EmberException {
    client.check(server.last(client.last(server.first(client.first()))));
  }

  private static Scram.Server server() {
    return new Scram.Server(Map.of("alice", Scram.Verifier.of("right", 4096))::get, SECRET);
  }

  @Test
  void theRightPasswordAuthenticatesBothWays() throws Exception {
    Scram.Server server = server();
    Scram.Client client = new Scram.Client("alice", "right", null);
    assertNull(client.blockKeyWrap(), "nothing agreed before the exchange");
    exchange(client, server);
    assertEquals("alice", server.user());
    // Both ends agree on the key that masks block keys, and it is not something sent.
    assertArrayEquals(server.blockKeyWrap(), client.blockKeyWrap());
    // The same verifier on the next connection: the same key, as the data node's stays good.
    var verifiers = Map.of("alice", Scram.Verifier.of("right", 4096));
    Scram.Client first = new Scram.Client("alice", "right", null);
    exchange(first, new Scram.Server(verifiers::get, SECRET));
    Scram.Client second = new Scram.Client("alice", "right", null);
    exchange(second, new Scram.Server(verifiers::get, SECRET));
    assertArrayEquals(first.blockKeyWrap(), second.blockKeyWrap(), "one per verifier");
  }

  @Test
  void controlCharactersInAUserNameAreRefusedBeforeTheyReachALog() {
    EmberException e =
        assertThrows(
            EmberException.class, () -> server().first("n,,n=eve\nFAKE LOG LINE,r=abcdefghijkl"));
    assertEquals(ErrorCode.UNAUTHENTICATED, e.code());
    assertFalse(e.getMessage().contains("FAKE"), e.getMessage());
  }

  @Test
  void aWrongPasswordAndAnUnknownUserFailAlikeAtTheProof() throws Exception {
    EmberException wrong =
        assertThrows(
            EmberException.class,
            () -> exchange(new Scram.Client("alice", "wrong", null), server()));
    assertEquals(ErrorCode.UNAUTHENTICATED, wrong.code());
    assertTrue(wrong.getMessage().contains("unknown user or wrong password"), wrong.getMessage());

    // An unknown user gets a salt and count like anyone's, and the same refusal at the same step.
    Scram.Server server = server();
    String first = server.first(new Scram.Client("mallory", "x", null).first());
    assertTrue(first.contains(",s=") && first.endsWith(",i=4096"), first);
    EmberException unknown =
        assertThrows(
            EmberException.class, () -> exchange(new Scram.Client("mallory", "x", null), server()));
    assertEquals(
        wrong.getMessage().replace("alice", "mallory"), unknown.getMessage(), "same words");
    // ... and the same salt every time, as a known user's is.
    assertEquals(
        server().first("n,,n=mallory,r=0123456789").split(",", -1)[1],
        server().first("n,,n=mallory,r=abcdefghij").split(",", -1)[1]);
  }

  @Test
  void aReplayedProofFailsAgainstAFreshExchange() throws Exception {
    Scram.Verifier v = Scram.Verifier.of("right", 4096);
    Scram.Client client = new Scram.Client("alice", "right", null);
    Scram.Server first = new Scram.Server(Map.of("alice", v)::get, SECRET);
    String clientFirst = client.first();
    String clientLast = client.last(first.first(clientFirst));
    first.last(clientLast);

    // An eavesdropper sends both recorded messages again: the server's nonce is new this time.
    Scram.Server second = new Scram.Server(Map.of("alice", v)::get, SECRET);
    second.first(clientFirst);
    EmberException e = assertThrows(EmberException.class, () -> second.last(clientLast));
    assertTrue(e.getMessage().contains("does not answer this exchange's nonce"), e.getMessage());

    // Nor can a finished exchange be run again.
    EmberException again = assertThrows(EmberException.class, () -> first.last(clientLast));
    assertTrue(again.getMessage().contains("out of turn"), again.getMessage());
  }

  @Test
  void aClientRefusesAServerFirstMessageThatIsNotAnAnswer() throws Exception {
    for (String bad :
        new String[] {
          "",
          "r=",
          "s=c2FsdA==,i=4096",
          "r=NONCEmore,s=c2FsdA==", // no count
          "r=NONCEmore,s=not base64!,i=4096",
          "r=NONCEmore,s=,i=4096", // an empty salt
          "r=NONCEmore,s=c2FsdA==,i=many",
          "r=NONCEmore,s=c2FsdA==,i=1", // below RFC 7677's minimum
          "r=NONCEmore,s=c2FsdA==,i=2000000000", // a hostile server's hours of hashing
          "r=NONCE,s=c2FsdA==,i=4096", // the server added no nonce of its own
          "r=OTHERmore,s=c2FsdA==,i=4096", // another exchange's nonce
        }) {
      Scram.Client client = new Scram.Client("alice", "right", "NONCE", null);
      client.first();
      EmberException e = assertThrows(EmberException.class, () -> client.last(bad), bad);
      assertEquals(ErrorCode.UNAUTHENTICATED, e.code(), bad);
      assertTrue(e.getMessage().startsWith("the server's SCRAM-SHA-256 exchange"), e.getMessage());
    }
    // A server's error answer, and a last message before any first.
    Scram.Client client = new Scram.Client("alice", "right", "NONCE", null);
    client.first();
    client.last("r=NONCEmore,s=c2FsdA==,i=4096");
    EmberException refused =
        assertThrows(EmberException.class, () -> client.check("e=other-error"));
    assertTrue(refused.getMessage().contains("it refused: other-error"), refused.getMessage());
    assertThrows(
        IllegalStateException.class,
        () -> new Scram.Client("alice", "right", "NONCE", null).check("v=AAAA"));
  }

  @Test
  void truncatedOrMalformedMessagesAreRefused() throws Exception {
    for (String bad :
        new String[] {"", "n,,", "n,,n=alice", "y,,n=alice,r=0123456789", "p=x,,n=a"}) {
      EmberException e = assertThrows(EmberException.class, () -> server().first(bad), bad);
      assertEquals(ErrorCode.UNAUTHENTICATED, e.code());
    }
    Scram.Client client = new Scram.Client("alice", "right", null);
    Scram.Server server = server();
    String clientLast = client.last(server.first(client.first()));
    String cut = clientLast.substring(0, clientLast.indexOf(",p="));
    assertThrows(EmberException.class, () -> server.last(cut));
    // A last message before any first.
    assertThrows(EmberException.class, () -> server().last(clientLast));
  }

  @Test
  void aServerWithoutTheVerifierCannotPassForTheRealOne() throws Exception {
    // An impostor takes the client's proof and answers with a signature it has to make up.
    Scram.Client client = new Scram.Client("alice", "right", null);
    Scram.Server impostor =
        new Scram.Server(Map.of("alice", Scram.Verifier.of("guess", 4096))::get, SECRET);
    String serverFirst = impostor.first(client.first());
    client.last(serverFirst);
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> client.check("v=" + Base64.getEncoder().encodeToString(new byte[32])));
    assertTrue(e.getMessage().contains("could not prove"), e.getMessage());
    assertThrows(EmberException.class, () -> client.check("nothing"));

    // A server that changes the client's nonce, or asks for a hostile count, is refused before
    // the client proves anything.
    Scram.Client other = new Scram.Client("alice", "right", null);
    String nonce = other.first().substring("n,,n=alice,r=".length());
    assertThrows(
        EmberException.class, () -> other.last("r=someone-else" + nonce + "x,s=c2FsdA==,i=4096"));
    assertThrows(EmberException.class, () -> other.last("r=" + nonce + "x,s=c2FsdA==,i=99999999"));
    assertThrows(EmberException.class, () -> other.last("r=" + nonce + ",s=c2FsdA==,i=4096"));
  }

  @Test
  void userNamesAreEscapedAndChecked() throws Exception {
    assertEquals("a=3Db=2Cc", Scram.escape("a=b,c"));
    assertEquals("a=b,c", Scram.unescape("a=3Db=2Cc"));
    assertEquals(null, Scram.unescape("a=4Fb"));
    Scram.Server server =
        new Scram.Server(Map.of("a=b,c", Scram.Verifier.of("pw", 4096))::get, SECRET);
    exchange(new Scram.Client("a=b,c", "pw", null), server);
    assertEquals("a=b,c", server.user());
    assertTrue(Scram.validUser("alice"));
    assertTrue(!Scram.validUser("") && !Scram.validUser("a b") && !Scram.validUser("a:b"));
    assertTrue(!Scram.validUser("x".repeat(257)));
  }
}
