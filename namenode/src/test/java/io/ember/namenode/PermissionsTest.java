package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.Permissions;
import io.ember.protocol.StorageClass;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** The name node's permission checks, HDFS's rules, without the network. */
class PermissionsTest {
  private static final int BS = 4096;
  private final AtomicLong clock = new AtomicLong();
  private final NameNodeState nn =
      new NameNodeState(BS, List.of(StorageClass.DRAM), Duration.ofSeconds(10), clock::get);
  private Caller root;
  private Caller alice;
  private Caller bob;
  private Caller carol;

  @BeforeEach
  void identities(@TempDir Path tmp) throws Exception {
    Path groups = tmp.resolve("groups");
    Files.writeString(groups, "# who works with whom\nstaff: alice, bob\nadmins: dave\n");
    nn.useIdentities(
        Identities.of(List.of("root"), "admins", groups.toString()), Permissions.STICKY | 0777);
    root = nn.internal();
    alice = nn.caller("alice");
    bob = nn.caller("bob");
    carol = nn.caller("carol");
  }

  private NodeStatus make(Caller c, String path, NodeType type, int mode) throws EmberException {
    return nn.create(c, path, type, StorageClass.DRAM, false, "", false, false, mode).status();
  }

  private static String denied(Executable op) {
    EmberException e = assertThrows(EmberException.class, op);
    assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), e.getMessage());
    return e.getMessage();
  }

  @Test
  void newEntriesBelongToTheirCreatorInTheirDirectorysGroup() throws Exception {
    NodeStatus root = nn.lookup("/");
    assertEquals("root", root.owner());
    assertEquals("admins", root.group());
    assertEquals(01777, root.permission());
    NodeStatus d = make(alice, "/a", NodeType.DIRECTORY, Permissions.DEFAULT);
    assertEquals("alice", d.owner());
    assertEquals("admins", d.group());
    assertEquals(0755, d.permission());
    nn.setAttributes(alice, "/a", "", "staff", Permissions.DEFAULT);
    NodeStatus f =
        nn.create(alice, "/a/p/q/f", NodeType.FILE, StorageClass.DRAM, true, "", false, false, 0600)
            .status();
    assertEquals("staff", f.group());
    assertEquals(0600, f.permission());
    NodeStatus parent = nn.lookup("/a/p");
    assertEquals("alice", parent.owner());
    assertEquals(0755, parent.permission());
    assertEquals(0644, make(bob, "/b", NodeType.FILE, Permissions.DEFAULT).permission());
  }

  @Test
  void aPrivateDirectoryKeepsOthersOut() throws Exception {
    make(alice, "/a", NodeType.DIRECTORY, 0700);
    make(alice, "/a/f", NodeType.FILE, 0644);
    String why = denied(() -> nn.lookup(bob, "/a/f"));
    assertEquals(
        "cannot reach /a/f: bob may not pass through (x) /a (alice:admins rwx------)", why);
    denied(() -> nn.list(bob, "/a", "", 10));
    denied(() -> nn.open(bob, "/a/f", 10));
    denied(() -> make(bob, "/a/g", NodeType.FILE, Permissions.DEFAULT));
    denied(() -> nn.delete(bob, "/a/f", false));
    denied(() -> nn.rename(bob, "/a/f", "/stolen"));
    // A file id, which lookups of open directories hand out, does not pass the directory either.
    long id = nn.lookup("/a/f").id();
    assertTrue(denied(() -> nn.getBlocks(bob, id, 0, 10)).contains("may not pass through (x) /a"));
    // Nothing changed, and the owner and the super-user still get through.
    assertEquals(1, nn.list(alice, "/a", "", 10).entries().size());
    nn.lookup(root, "/a/f");
    assertEquals(NodeType.FILE, nn.lookup(alice, "/a/f").type());
  }

  @Test
  void readingAFileNeedsItsReadBitForTheCallersClass() throws Exception {
    make(alice, "/d", NodeType.DIRECTORY, 0755);
    nn.setAttributes(alice, "/d", "", "staff", Permissions.DEFAULT);
    NodeStatus f = make(alice, "/d/f", NodeType.FILE, 0640);
    nn.closeFile(alice, f.id(), 0);
    nn.open(bob, "/d/f", 10); // staff may read
    String why = denied(() -> nn.open(carol, "/d/f", 10));
    assertTrue(why.contains("carol may not read /d/f (alice:staff rw-r-----)"), why);
    denied(() -> nn.getBlocks(carol, f.id(), 0, 10));
    // Carol still sees that it is there: listing needs only the directory's bits.
    assertEquals(1, nn.list(carol, "/d", "", 10).entries().size());
    nn.setAttributes(alice, "/d/f", "", "", 0604);
    nn.open(carol, "/d/f", 10);
  }

  @Test
  void onlyTheWriterAddsBlocksClosesOrAbandons() throws Exception {
    NodeStatus f =
        nn.create(
                alice,
                "/w",
                NodeType.FILE,
                StorageClass.DRAM,
                false,
                "alices-client",
                false,
                false,
                0666)
            .status();
    String why = denied(() -> nn.allocateBlock(bob, f.id(), 0));
    assertTrue(why.contains("bob is not its writer: /w was created by alice"), why);
    denied(() -> nn.closeFile(bob, f.id(), 0));
    denied(() -> nn.abandon(bob, f.id()));
    assertTrue(nn.lookup("/w").open());
    // Anyone who sees the lease holder's name could otherwise keep the file open forever, and
    // raise the length its recovery publishes.
    nn.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 4L * BS, false, 11);
    nn.allocateBlock(alice, f.id(), 0);
    List<io.ember.protocol.Messages.WrittenLength> claim =
        List.of(new io.ember.protocol.Messages.WrittenLength(f.id(), BS));
    nn.renewLease(alice, "alices-client", List.of());
    assertTrue(denied(() -> nn.renewLease(bob, "alices-client", claim)).contains("renew"));
    assertEquals(List.of(f.id()), nn.renewLease(bob, "bobs-client", claim));
    assertEquals(0, nn.lookup("/w").acknowledgedLength());
    nn.closeFile(alice, f.id(), 0);
  }

  @Test
  void aStickyDirectoryLetsOnlyOwnersRemoveEntries() throws Exception {
    make(alice, "/mine", NodeType.FILE, 0666);
    String why = denied(() -> nn.delete(bob, "/mine", false));
    assertTrue(why.contains("/ is sticky"), why);
    assertTrue(why.contains("bob owns neither /mine (alice) nor /"), why);
    denied(() -> nn.rename(bob, "/mine", "/his"));
    // Overwriting is a delete too.
    denied(
        () ->
            nn.create(bob, "/mine", NodeType.FILE, StorageClass.DRAM, false, "", true, true, 0644));
    assertEquals("alice", nn.lookup("/mine").owner());
    nn.rename(alice, "/mine", "/still-mine");
    nn.delete(alice, "/still-mine", false);
    // Without the sticky bit, whoever writes the directory removes what is in it.
    make(alice, "/open", NodeType.DIRECTORY, 0777);
    make(alice, "/open/f", NodeType.FILE, 0644);
    nn.delete(bob, "/open/f", false);
  }

  @Test
  void aRecursiveDeleteNeedsEveryDirectoryBelow() throws Exception {
    make(alice, "/t", NodeType.DIRECTORY, 0777);
    make(alice, "/t/u", NodeType.DIRECTORY, 0777);
    make(bob, "/t/u/bobs", NodeType.DIRECTORY, 0755);
    make(bob, "/t/u/bobs/f", NodeType.FILE, 0644);
    String why = denied(() -> nn.delete(alice, "/t", true));
    assertTrue(why.contains("alice may not read and write and pass through (x) /t/u/bobs"), why);
    assertEquals(NodeType.FILE, nn.lookup("/t/u/bobs/f").type());
    // Empty directories below need nothing, as HDFS has it.
    make(bob, "/t/u/bobs/empty", NodeType.DIRECTORY, 0500);
    nn.delete(bob, "/t/u/bobs", true);
    nn.delete(dave(), "/t", true); // a member of the super-user group
  }

  @Test
  void anIdentityNamedAsTheSuperUserGroupIsNotInIt() {
    assertTrue(!nn.caller("admins").superuser());
    assertTrue(nn.caller("dave").superuser());
  }

  @Test
  void parentsOfADirectoryTakeItsModeAndParentsOfAFileTheDefault() throws Exception {
    nn.create(alice, "/p/q/r", NodeType.DIRECTORY, StorageClass.DRAM, true, "", false, false, 0500);
    assertEquals(0700, nn.lookup("/p").permission());
    assertEquals(0700, nn.lookup("/p/q").permission());
    assertEquals(0500, nn.lookup("/p/q/r").permission());
    nn.create(alice, "/s/t", NodeType.FILE, StorageClass.DRAM, true, "", false, false, 0600);
    assertEquals(0755, nn.lookup("/s").permission());
  }

  private Caller dave() {
    Caller dave = nn.caller("dave");
    assertTrue(dave.superuser());
    return dave;
  }

  @Test
  void modesOwnersAndGroupsChangeOnlyAsTheRulesAllow() throws Exception {
    make(alice, "/f", NodeType.FILE, 0644);
    assertTrue(denied(() -> nn.setAttributes(bob, "/f", "", "", 0777)).contains("does not own"));
    assertTrue(
        denied(() -> nn.setAttributes(alice, "/f", "bob", "", Permissions.DEFAULT))
            .contains("only the super-user changes an owner"));
    assertTrue(
        denied(() -> nn.setAttributes(alice, "/f", "", "wheel", Permissions.DEFAULT))
            .contains("alice is not in group wheel"));
    NodeStatus st = nn.setAttributes(alice, "/f", "", "staff", 0600);
    assertEquals("staff", st.group());
    assertEquals(0600, st.permission());
    st = nn.setAttributes(root, "/f", "bob", "bob", Permissions.DEFAULT);
    assertEquals("bob", st.owner());
    assertEquals("bob", st.group());
    nn.setAttributes(bob, "/f", "", "", 0644); // its new owner
  }

  @Test
  void aBadGroupsFileIsRefusedNamingTheLine(@TempDir Path tmp) throws Exception {
    Path groups = tmp.resolve("groups");
    Files.writeString(groups, "staff: alice\nalice bob\n");
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> Identities.of(List.of("root"), "admins", groups.toString()));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("line 2: expected 'group: user, user'"), e.getMessage());
    e =
        assertThrows(
            EmberException.class,
            () -> Identities.of(List.of("root"), "admins", tmp.resolve("none").toString()));
    assertTrue(e.getMessage().startsWith("cannot read the groups file"), e.getMessage());
  }
}
