package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Scram;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The credentials file as add-user writes it and the name node reads it. */
class CredentialsTest {
  @TempDir Path tmp;

  /** The server's first answer for {@code user}: its salt and count, as a client would see it. */
  private static String saltFor(Credentials c, String user) throws EmberException {
    return new Scram.Server(c::verifier, c.secret())
        .first("n,,n=" + user + ",r=abcdefghijklmnop")
        .replaceFirst("^r=[^,]*,", "");
  }

  @Test
  void anUnknownUsersSaltStaysTheSameWhenOtherUsersChange() throws Exception {
    Path file = tmp.resolve("credentials");
    Credentials.addUser(file, "alice", "a");
    Credentials running = Credentials.load(file);
    String mallory = saltFor(running, "mallory");
    String alice = saltFor(running, "alice");
    Credentials.addUser(file, "bob", "b");
    Credentials.addUser(file, "alice", "new");
    assertNotNull(running.verifier("bob"), "the running name node read the new user");
    assertEquals(mallory, saltFor(running, "mallory"), "a change elsewhere moved an unknown salt");
    assertFalse(alice.equals(saltFor(running, "alice")), "a new password has a new salt");
    // And across a restart: the secret is in the file.
    assertEquals(mallory, saltFor(Credentials.load(file), "mallory"));
    assertEquals(
        1,
        Files.readAllLines(file).stream()
            .filter(l -> l.startsWith(Credentials.UNKNOWN_USERS + " "))
            .count());
  }

  @Test
  void theFileIsOwnerOnlyAndHoldsNoPassword() throws Exception {
    Path file = tmp.resolve("credentials");
    Credentials.addUser(file, "alice", "alice-password");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertFalse(Files.readString(file).contains("alice-password"));
  }

  @Test
  void aUserOnTwoLinesIsRefusedNamingBoth() throws Exception {
    Path file = tmp.resolve("credentials");
    Credentials.addUser(file, "alice", "a");
    String line = Files.readAllLines(file).get(1);
    Files.writeString(file, Files.readString(file) + "# edited by hand\n" + line + "\n");
    EmberException e = assertThrows(EmberException.class, () -> Credentials.load(file));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("line 4: user alice is on line 2 already"), e.getMessage());
  }

  @Test
  void badLinesAreRefusedWithTheirNumberAndNoVerifier() throws Exception {
    Path file = tmp.resolve("credentials");
    for (String bad :
        List.of(
            "alice",
            "alice SCRAM-SHA-256$4096:c2FsdA==$broken",
            "al:ice SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA",
            Credentials.UNKNOWN_USERS + " c2hvcnQ=")) {
      Files.writeString(file, "# users\r\n" + bad + "\n");
      EmberException e = assertThrows(EmberException.class, () -> Credentials.load(file), bad);
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), bad);
      assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }
    Files.delete(file);
    EmberException missing = assertThrows(EmberException.class, () -> Credentials.load(file));
    assertTrue(missing.getMessage().contains("ember security add-user"), missing.getMessage());
  }

  @Test
  void aRemovedFileLetsNobodyInAndAGarbledOneKeepsTheUsers() throws Exception {
    Path file = tmp.resolve("credentials");
    Credentials.addUser(file, "alice", "a");
    Credentials running = Credentials.load(file);
    Files.writeString(file, "garbage\n");
    assertNotNull(running.verifier("alice"), "a half-edited file keeps the users it had");
    Files.delete(file);
    assertNull(running.verifier("alice"), "removing the file withdraws every password");
    Credentials.addUser(file, "alice", "b");
    assertNotNull(running.verifier("alice"), "back when the file is");
  }

  @Test
  void addUserKeepsTheSecretLineAndReplacesOnlyTheUser() throws Exception {
    Path file = tmp.resolve("credentials");
    assertTrue(Credentials.addUser(file, "alice", "a"));
    List<String> before = Files.readAllLines(file);
    assertFalse(Credentials.addUser(file, "alice", "b"));
    List<String> after = Files.readAllLines(file);
    assertEquals(before.size(), after.size());
    assertEquals(before.get(0), after.get(0), "the unknown users' secret is kept");
    assertFalse(before.get(1).equals(after.get(1)), "alice's verifier is new");
    assertArrayEquals(Credentials.load(file).secret(), Credentials.load(file).secret());
  }

  @Test
  void addUserKeepsTheFilesOwner() throws Exception {
    Path file = tmp.resolve("credentials");
    Credentials.addUser(file, "alice", "a");
    // As root for a name node that runs as its own user: the file must stay that user's.
    java.nio.file.attribute.UserPrincipal nobody = null;
    try {
      nobody = file.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
      Files.setOwner(file, nobody);
    } catch (java.io.IOException notRoot) {
      org.junit.jupiter.api.Assumptions.assumeTrue(
          false, "this test gives a file to user nobody, which only root may: " + notRoot);
    }
    Credentials.addUser(file, "bob", "b");
    assertEquals(nobody, Files.getOwner(file));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertNotNull(Credentials.load(file).verifier("bob"));
  }
}
