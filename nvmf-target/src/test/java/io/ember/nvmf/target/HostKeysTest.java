package io.ember.nvmf.target;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.auth.DhGroup;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The hosts file of the embedded target: what it admits, and what it refuses to start with. */
class HostKeysTest {
  private static final SecureRandom RANDOM = new SecureRandom();

  @Test
  void readsEachHostsKeysHashesAndGroups(@TempDir Path dir) throws Exception {
    DhchapSecret a = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM);
    DhchapSecret b = DhchapSecret.generate(DhchapHash.SHA512, 64, RANDOM);
    DhchapSecret bc = DhchapSecret.generate(null, 32, RANDOM);
    Path f = dir.resolve("hosts");
    Files.writeString(
        f,
        "# cluster hosts\n\nnqn.a "
            + a.encoded()
            + "\n  nqn.b   "
            + b.encoded()
            + " "
            + bc.encoded()
            + " hash=sha384,hmac(sha512) group=ffdhe8192,null\n");
    Map<String, HostKeys> keys = HostKeys.read(f);
    assertEquals(List.of("nqn.a", "nqn.b"), List.copyOf(keys.keySet()));
    assertTrue(keys.get("nqn.a").hostKey().sameAs(a));
    assertNull(keys.get("nqn.a").ctrlKey());
    assertEquals(HostKeys.ALL_HASHES, keys.get("nqn.a").hashes());
    assertEquals(HostKeys.DEFAULT_GROUPS, keys.get("nqn.a").groups());
    assertTrue(keys.get("nqn.b").ctrlKey().sameAs(bc));
    assertEquals(List.of(DhchapHash.SHA384, DhchapHash.SHA512), keys.get("nqn.b").hashes());
    assertEquals(List.of(DhGroup.FFDHE8192, DhGroup.NULL), keys.get("nqn.b").groups());
  }

  @Test
  void anEmptyOrMalformedFileIsRefusedWithoutShowingSecrets(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("hosts");
    // A file with no host would admit every host unauthenticated.
    Files.writeString(f, "# nothing yet\n\n");
    IllegalArgumentException empty =
        assertThrows(IllegalArgumentException.class, () -> HostKeys.read(f));
    assertEquals(f + " lists no host", empty.getMessage());

    String good = DhchapSecret.generate(DhchapHash.SHA256, 32, RANDOM).encoded();
    // One character changed: the checksum no longer matches.
    String typo = good.substring(0, 12) + (good.charAt(12) == 'A' ? 'B' : 'A') + good.substring(13);
    for (String[] bad :
        new String[][] {
          {"nqn.a", "line 1: expected HOSTNQN HOST-SECRET"},
          {"nqn.a " + typo, "line 1: the DH-HMAC-CHAP secret's checksum does not match"},
          {"nqn.a " + good + " group=ffdhe1024", "line 1: unknown DH-HMAC-CHAP group 'ffdhe1024'"},
          {"nqn.a " + good + " hash=md5", "line 1: unknown DH-HMAC-CHAP hash 'md5'"},
          {"nqn.a " + good + " " + good + " extra", "line 1: unexpected word 4"},
          {"nqn.a " + good + "\nnqn.a " + good, "line 2: host nqn.a is listed twice"},
        }) {
      Files.writeString(f, bad[0] + "\n");
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> HostKeys.read(f), bad[0]);
      assertTrue(e.getMessage().startsWith(f + " " + bad[1]), e.getMessage());
      assertFalse(e.getMessage().contains(good.substring(10, 30)), e.getMessage());
      assertFalse(e.getMessage().contains(typo.substring(10, 30)), e.getMessage());
    }
  }
}
