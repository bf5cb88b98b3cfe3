package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Namespace rules as a client sees them over the wire, async and blocking. */
class NamespaceTest {
  private static MiniCluster cluster;
  private static EmberClient client;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().build();
    client = cluster.newClient();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  @Test
  void createLookupRenameDeleteThroughTheClient() throws Exception {
    client.createDirectory("/ns/a/b", true);
    client.create("/ns/a/b/f", CreateOptions.DEFAULT).close();
    assertEquals(
        ErrorCode.ALREADY_EXISTS,
        assertThrows(EmberException.class, () -> client.create("/ns/a/b/f", CreateOptions.DEFAULT))
            .code());
    assertEquals(
        ErrorCode.PARENT_NOT_FOUND,
        assertThrows(EmberException.class, () -> client.create("/ns/none/f", CreateOptions.DEFAULT))
            .code());
    assertEquals(
        ErrorCode.RENAME_INTO_ITSELF,
        assertThrows(EmberException.class, () -> client.rename("/ns/a", "/ns/a/b/a")).code());
    assertEquals(
        ErrorCode.DIRECTORY_NOT_EMPTY,
        assertThrows(EmberException.class, () -> client.delete("/ns/a", false)).code());
    client.rename("/ns/a/b", "/ns/c");
    assertTrue(client.lookup("/ns/c/f").isFile());
    client.delete("/ns", true);
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> client.lookup("/ns")).code());
    EmberException bad = assertThrows(EmberException.class, () -> client.lookup("ns"));
    assertEquals(ErrorCode.INVALID_PATH, bad.code());
  }

  @Test
  void distinctUnicodeAndCollidingNamesSurviveTheWire() throws Exception {
    client.createDirectory("/names", false);
    String[] names = {"Aa", "BB", "\u00e9", "e\u0301", "日本", "x y", "X y", "emoji\uD83D\uDE00"};
    for (String n : names) {
      client.create("/names/" + n, CreateOptions.DEFAULT).close();
    }
    Set<String> listed = new HashSet<>();
    for (DirEntry e : client.list("/names")) {
      listed.add(e.name());
    }
    assertEquals(Set.of(names), listed);
    client.delete("/names", true);
  }

  @Test
  void listingOfALargeDirectoryPagesThroughEverything() throws Exception {
    client.createDirectory("/large", false);
    List<CompletableFuture<NodeStatus>> creates = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      creates.add(
          client.createAsync(
              String.format("/large/e%05d", i), NodeType.DIRECTORY, CreateOptions.DEFAULT));
    }
    CompletableFuture.allOf(creates.toArray(new CompletableFuture<?>[0])).join();
    List<DirEntry> all = client.list("/large");
    assertEquals(3000, all.size());
    assertEquals("e00000", all.get(0).name());
    assertEquals("e02999", all.get(2999).name());
    client.delete("/large", true);
  }

  @Test
  void concurrentRenamesOfOneSourceHaveExactlyOneWinner() throws Exception {
    client.createDirectory("/race", false);
    client.create("/race/src", CreateOptions.DEFAULT).close();
    List<CompletableFuture<Void>> tries = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      tries.add(client.renameAsync("/race/src", "/race/dst" + i));
    }
    int won = 0;
    for (CompletableFuture<Void> t : tries) {
      try {
        t.join();
        won++;
      } catch (java.util.concurrent.CompletionException e) {
        assertEquals(ErrorCode.NOT_FOUND, ((EmberException) e.getCause()).code());
      }
    }
    assertEquals(1, won);
    assertEquals(1, client.list("/race").size());
  }
}
