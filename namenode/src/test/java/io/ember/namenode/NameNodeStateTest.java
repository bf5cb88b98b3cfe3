package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.Messages.ListResponse;
import io.ember.protocol.Messages.OpenResponse;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The name node's rules, without the network: namespace, blocks, liveness. */
class NameNodeStateTest {
  private static final int BS = 4096;
  private final AtomicLong clock = new AtomicLong();
  private final NameNodeState nn =
      new NameNodeState(
          BS, List.of(StorageClass.DRAM, StorageClass.NVMF), Duration.ofSeconds(10), clock::get);

  private static void assertCode(ErrorCode code, Executable op) {
    EmberException e = assertThrows(EmberException.class, op);
    assertEquals(code, e.code(), e.getMessage());
  }

  private NodeStatus file(String path) throws EmberException {
    return nn.create(path, NodeType.FILE, StorageClass.DRAM, false);
  }

  /** A closed file of one full block, on whatever class the data nodes offer. */
  private NodeStatus oneBlockFile(String path) throws EmberException {
    NodeStatus f = file(path);
    nn.allocateBlock(f.id(), 0);
    nn.closeFile(f.id(), BS);
    return f;
  }

  private NodeStatus dir(String path) throws EmberException {
    return nn.create(path, NodeType.DIRECTORY, StorageClass.DRAM, false);
  }

  @Test
  void createRules() throws Exception {
    dir("/a");
    file("/a/f");
    assertCode(ErrorCode.ALREADY_EXISTS, () -> file("/a/f"));
    assertCode(ErrorCode.ALREADY_EXISTS, () -> dir("/a"));
    assertCode(ErrorCode.ALREADY_EXISTS, () -> dir("/"));
    assertCode(ErrorCode.PARENT_NOT_FOUND, () -> file("/missing/f"));
    assertCode(ErrorCode.NOT_A_DIRECTORY, () -> file("/a/f/g"));
    assertCode(ErrorCode.INVALID_PATH, () -> file("a/f"));
    NodeStatus deep = nn.create("/x/y/z/f", NodeType.FILE, StorageClass.DRAM, true);
    assertTrue(deep.isFile());
    assertEquals(NodeType.DIRECTORY, nn.lookup("/x/y").type());
    EmberException e = assertThrows(EmberException.class, () -> file("/missing/f"));
    assertEquals("cannot create /missing/f: parent /missing does not exist", e.getMessage());
  }

  @Test
  void anOverwritingCreateReplacesAFileAndGivesItsBlocksBack() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 10L * BS);
    NodeStatus old = oneBlockFile("/o");
    long freeWithOld = usage(StorageClass.DRAM).freeBlocks();
    var made = nn.create("/o", NodeType.FILE, StorageClass.DRAM, false, "w", true, true);
    assertTrue(made.status().id() != old.id(), "a new file, not the old one reopened");
    assertTrue(made.status().open());
    assertTrue(made.firstBlock() != null, "the new file got its first block");
    // The old file's block came back and the new one's first block was taken.
    assertEquals(freeWithOld, usage(StorageClass.DRAM).freeBlocks());
    assertEquals(made.status().id(), nn.lookup("/o").id());
    assertCode(ErrorCode.NOT_FOUND, () -> nn.getBlocks(old.id(), 0, 1));
    // Where nothing is, it creates; a directory is never replaced, nor a missing parent made.
    nn.create("/new", NodeType.FILE, StorageClass.DRAM, false, "w", false, true);
    assertTrue(nn.lookup("/new").isFile());
    dir("/d");
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> nn.create("/d", NodeType.FILE, StorageClass.DRAM, false, "w", false, true));
    assertEquals(ErrorCode.ALREADY_EXISTS, e.code());
    assertEquals("cannot create /d: it is a directory", e.getMessage());
    assertCode(
        ErrorCode.PARENT_NOT_FOUND,
        () -> nn.create("/p/f", NodeType.FILE, StorageClass.DRAM, false, "w", false, true));
    assertCode(
        ErrorCode.INVALID_ARGUMENT,
        () -> nn.create("/o", NodeType.DIRECTORY, StorageClass.DRAM, false, "", false, true));
    assertTrue(nn.lookup("/o").isFile(), "a refused create changes nothing");
  }

  @Test
  void distinctNamesAreDistinctEntries() throws Exception {
    String[] names = {
      "Aa", "BB", "a", "A", "\u00e9", "e\u0301", "x", "x ", "AaAa", "BBBB", "AaBB", "BBAa"
    };
    Set<Long> ids = new HashSet<>();
    for (String n : names) {
      ids.add(file("/" + n).id());
    }
    assertEquals(names.length, ids.size());
    assertEquals(names.length, nn.list("/", "", 100).entries().size());
    for (String n : names) {
      assertTrue(nn.lookup("/" + n).isFile());
    }
    nn.delete("/Aa", false);
    assertTrue(nn.lookup("/BB").isFile());
    assertCode(ErrorCode.NOT_FOUND, () -> nn.lookup("/Aa"));
  }

  @Test
  void deleteRules() throws Exception {
    dir("/d");
    file("/d/f");
    assertCode(ErrorCode.DIRECTORY_NOT_EMPTY, () -> nn.delete("/d", false));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.delete("/", true));
    assertCode(ErrorCode.NOT_FOUND, () -> nn.delete("/nope", true));
    nn.delete("/d", true);
    assertCode(ErrorCode.NOT_FOUND, () -> nn.lookup("/d/f"));
    dir("/empty");
    nn.delete("/empty", false);
  }

  @Test
  void renameRules() throws Exception {
    nn.create("/a/b/c", NodeType.DIRECTORY, StorageClass.DRAM, true);
    file("/a/b/c/f");
    file("/other");
    assertCode(ErrorCode.RENAME_INTO_ITSELF, () -> nn.rename("/a", "/a/b/c/a"));
    assertCode(ErrorCode.RENAME_INTO_ITSELF, () -> nn.rename("/a/b", "/a/b/x"));
    assertCode(ErrorCode.ALREADY_EXISTS, () -> nn.rename("/a/b/c/f", "/other"));
    assertCode(ErrorCode.PARENT_NOT_FOUND, () -> nn.rename("/other", "/nope/x"));
    assertCode(ErrorCode.NOT_A_DIRECTORY, () -> nn.rename("/other", "/a/b/c/f/x"));
    assertCode(ErrorCode.NOT_FOUND, () -> nn.rename("/nope", "/x"));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.rename("/", "/x"));
    long id = nn.lookup("/a/b").id();
    nn.rename("/a/b", "/moved");
    assertEquals(id, nn.lookup("/moved").id());
    assertTrue(nn.lookup("/moved/c/f").isFile());
    assertCode(ErrorCode.NOT_FOUND, () -> nn.lookup("/a/b"));
    nn.rename("/moved", "/moved"); // to itself: nothing changes
    assertEquals(id, nn.lookup("/moved").id());
    // "/ab" is not inside "/a": prefix of the string, not of the path.
    nn.rename("/a", "/ab");
  }

  @Test
  void listPagesInNameOrder() throws Exception {
    dir("/big");
    for (int i = 0; i < 250; i++) {
      file(String.format("/big/f%03d", i));
    }
    List<String> seen = new ArrayList<>();
    String after = "";
    boolean more = true;
    while (more) {
      ListResponse page = nn.list("/big", after, 100);
      for (DirEntry e : page.entries()) {
        seen.add(e.name());
      }
      more = page.more();
      after = seen.get(seen.size() - 1);
    }
    assertEquals(250, seen.size());
    assertEquals("f000", seen.get(0));
    assertEquals("f249", seen.get(249));
    assertCode(ErrorCode.NOT_A_DIRECTORY, () -> nn.list("/big/f000", "", 10));
  }

  @Test
  void aDataNodeNameWithControlCharactersIsRefused() throws Exception {
    // Endpoints and tiers are shown on status pages and in terminals.
    for (String endpoint : new String[] {"\0html:<script>", "h:1\n", "h\u001b[2J:1"}) {
      assertCode(
          ErrorCode.INVALID_ARGUMENT,
          () -> nn.register(StorageClass.DRAM, "dram", endpoint, 10L * BS));
    }
    assertCode(
        ErrorCode.INVALID_ARGUMENT,
        () -> nn.register(StorageClass.DRAM, "dr\tam", "h:1", 10L * BS));
    assertEquals(0, nn.report().datanodes().size());
  }

  @Test
  void multifileHoldsOnlyFilesAndSumsClosedChildren() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 100L * BS);
    nn.create("/m", NodeType.MULTIFILE, StorageClass.DRAM, false);
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> dir("/m/d"));
    NodeStatus a = file("/m/a");
    NodeStatus b = file("/m/b");
    nn.allocateBlock(a.id(), 0);
    nn.closeFile(a.id(), 100);
    nn.allocateBlock(b.id(), 0);
    assertEquals(100, nn.lookup("/m").length()); // b still open
    nn.closeFile(b.id(), 50);
    assertEquals(150, nn.lookup("/m").length());
    dir("/plain");
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.rename("/plain", "/m/plain"));
  }

  @Test
  void blocksGrowOneAtATimeAndPublishOnClose() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 10L * BS);
    NodeStatus f = file("/f");
    BlockLocation b0 = nn.allocateBlock(f.id(), 0);
    assertEquals(b0, nn.allocateBlock(f.id(), 0)); // retried allocation: same block
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.allocateBlock(f.id(), 2));
    BlockLocation b1 = nn.allocateBlock(f.id(), 1);
    assertNotEquals(b0.address(), b1.address());
    assertEquals(0, nn.lookup("/f").length());
    assertTrue(nn.lookup("/f").open());
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.closeFile(f.id(), 2L * BS + 1));
    nn.closeFile(f.id(), BS + 10);
    assertEquals(BS + 10, nn.lookup("/f").length());
    assertFalse(nn.lookup("/f").open());
    nn.closeFile(f.id(), BS + 10); // a retried close with the same length is fine
    assertCode(ErrorCode.FILE_CLOSED, () -> nn.closeFile(f.id(), 5));
    assertCode(ErrorCode.FILE_CLOSED, () -> nn.allocateBlock(f.id(), 2));
    assertEquals(List.of(b0, b1), nn.getBlocks(f.id(), 0, 10));
    assertEquals(List.of(b1), nn.getBlocks(f.id(), 1, 10));
    assertCode(ErrorCode.NOT_FOUND, () -> nn.getBlocks(12345, 0, 1));
  }

  @Test
  void openAnswersStatusWithFirstLocationsOfClosedFilesOnly() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 10L * BS);
    NodeStatus f = file("/f");
    for (int i = 0; i < 3; i++) {
      nn.allocateBlock(f.id(), i);
    }
    OpenResponse writing = nn.open("/f", 10);
    assertTrue(writing.status().open());
    assertEquals(List.of(), writing.blocks()); // the close may give some of them back
    nn.closeFile(f.id(), 2L * BS);
    OpenResponse closed = nn.open("/f", 10);
    assertEquals(nn.lookup("/f"), closed.status());
    assertEquals(nn.getBlocks(f.id(), 0, 10), closed.blocks());
    assertEquals(2, closed.blocks().size());
    assertEquals(nn.getBlocks(f.id(), 0, 1), nn.open("/f", 1).blocks());
    assertEquals(List.of(), nn.open("/f", 0).blocks());
    dir("/d");
    assertEquals(NodeType.DIRECTORY, nn.open("/d", 10).status().type());
    assertEquals(List.of(), nn.open("/d", 10).blocks());
    assertCode(ErrorCode.NOT_FOUND, () -> nn.open("/missing", 10));
    assertCode(ErrorCode.NOT_FOUND, () -> nn.open("/f/g", 10));
  }

  @Test
  void closeFreesBlocksBeyondTheLength() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS);
    NodeStatus f = file("/f");
    BlockLocation b0 = nn.allocateBlock(f.id(), 0);
    nn.allocateBlock(f.id(), 1);
    nn.allocateBlock(f.id(), 2);
    assertEquals(1, usage(StorageClass.DRAM).freeBlocks());
    nn.closeFile(f.id(), 10);
    assertEquals(List.of(b0), nn.getBlocks(f.id(), 0, 10));
    assertEquals(3, usage(StorageClass.DRAM).freeBlocks());
    NodeStatus empty = file("/empty");
    nn.allocateBlock(empty.id(), 0);
    nn.closeFile(empty.id(), 0);
    assertEquals(List.of(), nn.getBlocks(empty.id(), 0, 10));
    assertEquals(3, usage(StorageClass.DRAM).freeBlocks());
    nn.delete("/f", false);
    assertEquals(4, usage(StorageClass.DRAM).freeBlocks());
  }

  @Test
  void blocksAskedInARunComeBackTheSameWhenAskedAgainAndTheUnwrittenGoBackAtClose()
      throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 64L * BS);
    NodeStatus f = file("/f");
    BlockLocation b0 = nn.allocateBlock(f.id(), 0);
    List<BlockLocation> run = nn.allocateBlocks(f.id(), 1, 8);
    assertEquals(8, run.size());
    assertEquals(run, nn.getBlocks(f.id(), 1, 100));
    assertEquals(64 - 9, usage(StorageClass.DRAM).freeBlocks());
    // A retried request (its answer lost) gets the same blocks, and asking from inside the run
    // gives what the file has without taking more.
    assertEquals(run, nn.allocateBlocks(f.id(), 1, 8));
    assertEquals(run.subList(2, 8), nn.allocateBlocks(f.id(), 3, 100));
    assertEquals(64 - 9, usage(StorageClass.DRAM).freeBlocks());
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.allocateBlocks(f.id(), 10, 4));
    nn.closeFile(f.id(), 2L * BS + 1);
    assertEquals(List.of(b0, run.get(0), run.get(1)), nn.getBlocks(f.id(), 0, 100));
    assertEquals(64 - 3, usage(StorageClass.DRAM).freeBlocks());
    assertCode(ErrorCode.FILE_CLOSED, () -> nn.allocateBlocks(f.id(), 3, 4));
  }

  @Test
  void aNearlyFullClassGivesNoBlocksAheadAndNoneAreGivenAheadFromTheNextClass() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 16L * BS);
    nn.register(StorageClass.NVMF, "nvmf", "t", 16L * BS);
    NodeStatus f = file("/f");
    nn.allocateBlock(f.id(), 0);
    // 15 free: one is taken as needed, and an eighth of the class (2 blocks) is not given ahead.
    assertEquals(13, nn.allocateBlocks(f.id(), 1, 100).size());
    assertEquals(2, usage(StorageClass.DRAM).freeBlocks());
    NodeStatus g = file("/g");
    // Each block is still given as it is needed, to the last.
    assertEquals(1, nn.allocateBlocks(g.id(), 0, 8).size());
    assertEquals(1, nn.allocateBlocks(g.id(), 1, 8).size());
    assertEquals(0, usage(StorageClass.DRAM).freeBlocks());
    // A block that spills to the next class is given alone: runs stay in the file's own class.
    List<BlockLocation> spilled = nn.allocateBlocks(g.id(), 2, 8);
    assertEquals(1, spilled.size());
    assertEquals(StorageClass.NVMF, spilled.get(0).storageClass());
    assertEquals(15, usage(StorageClass.NVMF).freeBlocks());
    // The file's close gives the blocks it did not fill back, and runs come again.
    nn.closeFile(f.id(), BS);
    NodeStatus h = file("/h");
    nn.allocateBlock(h.id(), 0);
    assertEquals(4, nn.allocateBlocks(h.id(), 1, 4).size());
  }

  @Test
  void aRunAskedAheadOfNeedKeepsTheReserveAndNeverSpills() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 16L * BS);
    nn.register(StorageClass.NVMF, "nvmf", "t", 16L * BS);
    NodeStatus f = file("/f");
    nn.allocateBlock(f.id(), 0);
    // Unlike a run asked as it is needed, the first block is ahead too: an eighth of the class
    // (2 blocks) stays free.
    List<BlockLocation> run = nn.allocateAhead(f.id(), 1, 100);
    assertEquals(13, run.size());
    assertEquals(1, run.get(0).index());
    assertEquals(2, usage(StorageClass.DRAM).freeBlocks());
    // At the reserve the answer is empty, with the next class's blocks untouched: the writer asks
    // for the block when a write needs it.
    assertEquals(List.of(), nn.allocateAhead(f.id(), 14, 8));
    assertEquals(2, usage(StorageClass.DRAM).freeBlocks());
    assertEquals(16, usage(StorageClass.NVMF).freeBlocks());
    assertEquals(1, nn.allocateBlocks(f.id(), 14, 8).size());
    // Blocks the file has are answered as they are; a gap and a closed file are refused.
    assertEquals(run.subList(0, 2), nn.allocateAhead(f.id(), 1, 2));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> nn.allocateAhead(f.id(), 16, 4));
    nn.closeFile(f.id(), BS);
    assertCode(ErrorCode.FILE_CLOSED, () -> nn.allocateAhead(f.id(), 1, 4));
  }

  @Test
  void noRequestHoldsMoreThanSixtyFourMebibytesAhead() throws Exception {
    NameNodeState mib =
        new NameNodeState(1 << 20, List.of(StorageClass.DRAM), Duration.ofSeconds(10), clock::get);
    mib.register(StorageClass.DRAM, "dram", "h:1", 1024L << 20);
    NodeStatus f = mib.create("/f", NodeType.FILE, StorageClass.DRAM, false);
    assertEquals(1 + 64, mib.allocateBlocks(f.id(), 0, 1024).size());
  }

  @Test
  void fullClassFailsNamingClassAndSizeAndDeleteFreesBlocks() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 3L * BS);
    NodeStatus f = file("/f");
    for (int i = 0; i < 3; i++) {
      nn.allocateBlock(f.id(), i);
    }
    NodeStatus g = file("/g");
    EmberException e = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 0));
    assertEquals(ErrorCode.NO_CAPACITY, e.code());
    assertEquals("no DRAM or NVMf capacity left for 4 KiB (block 0 of /g)", e.getMessage());
    assertEquals(0, usage(StorageClass.DRAM).freeBlocks());
    nn.delete("/f", false);
    assertEquals(3, usage(StorageClass.DRAM).freeBlocks());
    nn.allocateBlock(g.id(), 0);
  }

  @Test
  void fullPreferredClassSpillsToTheNextInOrder() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", BS);
    nn.register(StorageClass.NVMF, "nvmf", "t", 2L * BS);
    NodeStatus f = file("/f");
    assertEquals(StorageClass.DRAM, nn.allocateBlock(f.id(), 0).storageClass());
    assertEquals(StorageClass.NVMF, nn.allocateBlock(f.id(), 1).storageClass());
    NodeStatus n = nn.create("/n", NodeType.FILE, StorageClass.NVMF, false);
    assertEquals(StorageClass.NVMF, nn.allocateBlock(n.id(), 0).storageClass());
    // NVMf is last in the order: it does not spill back to DRAM.
    EmberException e = assertThrows(EmberException.class, () -> nn.allocateBlock(n.id(), 1));
    assertTrue(e.getMessage().startsWith("no NVMf capacity left"), e.getMessage());
  }

  @Test
  void allocationSpreadsOverDataNodes() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 10L * BS);
    nn.register(StorageClass.DRAM, "dram", "h:2", 10L * BS);
    NodeStatus f = file("/f");
    Set<Integer> nodes = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      nodes.add(nn.allocateBlock(f.id(), i).datanodeId());
    }
    assertEquals(2, nodes.size());
  }

  @Test
  void freedBlocksAreReusedLast() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS);
    NodeStatus f = file("/f");
    long first = nn.allocateBlock(f.id(), 0).address();
    nn.delete("/f", false);
    NodeStatus g = file("/g");
    // A fresh block first: a late write from the deleted file's writer hits nobody's data.
    assertNotEquals(first, nn.allocateBlock(g.id(), 0).address());
  }

  @Test
  void aReusedSlotGetsANewerGenerationAndANewBlockId() throws Exception {
    nn.register(StorageClass.DRAM, "dram", "h:1", BS);
    NodeStatus f = file("/f");
    BlockLocation first = nn.allocateBlock(f.id(), 0);
    assertEquals(first, nn.allocateBlock(f.id(), 0)); // asked again, the same allocation
    nn.delete("/f", false);
    NodeStatus g = file("/g");
    BlockLocation second = nn.allocateBlock(g.id(), 0);
    assertEquals(first.address(), second.address());
    assertTrue(second.generation() > first.generation());
    assertNotEquals(first.blockId(), second.blockId());
    assertEquals(second.generation(), nn.getBlocks(g.id(), 0, 1).get(0).generation());
  }

  @Test
  void blocksOfTrimmingNodesAreReusedOnlyAfterTheNodeDeallocatedThem() throws Exception {
    int dn = nn.register(StorageClass.NVMF, "nvmf", "t", 2L * BS, true).datanodeId();
    NodeStatus f = nn.create("/f", NodeType.FILE, StorageClass.NVMF, false);
    long a = nn.allocateBlock(f.id(), 0).address() / BS;
    long b = nn.allocateBlock(f.id(), 1).address() / BS;
    nn.delete("/f", false);
    NodeStatus g = nn.create("/g", NodeType.FILE, StorageClass.NVMF, false);
    EmberException full = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 0));
    assertEquals(ErrorCode.NO_CAPACITY, full.code());
    // A user who just deleted files learns why the tier is still full, and that it will not stay
    // so.
    assertEquals(
        "no NVMf capacity left for 4 KiB (block 0 of /g); 2 freed blocks are still being"
            + " deallocated and will be free within seconds",
        full.getMessage());
    assertEquals(0, usage(StorageClass.NVMF).freeBlocks());
    List<Long> toTrim = nn.heartbeat(dn, List.of());
    assertEquals(Set.of(a, b), new HashSet<>(toTrim));
    assertCode(ErrorCode.NO_CAPACITY, () -> nn.allocateBlock(g.id(), 0));
    // The node deallocated a but not b (say its target timed out): b goes out again, once a
    // command still queued for it on the target can no longer complete. An unknown slot is
    // ignored.
    assertEquals(List.of(), nn.heartbeat(dn, List.of(a, 12345L)));
    // Deallocated, but a reader may still use a location it checked just before the delete.
    assertEquals(0, usage(StorageClass.NVMF).freeBlocks());
    // a cools, b waits for its retry: the writer is told which comes back when.
    full = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 0));
    assertEquals(
        "no NVMf capacity left for 4 KiB (block 0 of /g); 1 freed block is still being deallocated"
            + " and will be free within seconds; 1 freed block was not confirmed deallocated by its"
            + " data node and is sent again every 120 s (a failure shows in the data node's log)",
        full.getMessage());
    clock.addAndGet(BlockLocation.UNCHECKED_REUSE_DELAY.toNanos());
    assertEquals(1, usage(StorageClass.NVMF).freeBlocks());
    assertEquals(a, nn.allocateBlock(g.id(), 0).address() / BS);
    EmberException oneLeft = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 1));
    assertEquals(
        "no NVMf capacity left for 4 KiB (block 1 of /g); 1 freed block was not confirmed"
            + " deallocated by its data node and is sent again every 120 s (a failure shows in the"
            + " data node's log)",
        oneLeft.getMessage());
  }

  @Test
  void deallocationsANodeDidNotReportGoOutAgainAndThoseItDidNever() throws Exception {
    int dn = nn.register(StorageClass.NVMF, "nvmf", "t", 3L * BS, true).datanodeId();
    NodeStatus f = nn.create("/f", NodeType.FILE, StorageClass.NVMF, false);
    Set<Long> slots = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      slots.add(nn.allocateBlock(f.id(), i).address() / BS);
    }
    nn.delete("/f", false);
    assertEquals(slots, new HashSet<>(nn.heartbeat(dn, List.of())));
    // The answer that carried them was lost: the node's next heartbeat reports nothing new, and
    // the batch goes out again instead of staying out of use until the node registers again;
    // not at once, as a deallocation the node gave up on may still be queued on its target.
    assertEquals(List.of(), nn.heartbeat(dn, List.of()));
    clock.addAndGet(Datanode.TRIM_RETRY_NANOS - 1);
    assertEquals(List.of(), nn.heartbeat(dn, List.of()));
    // Meanwhile a writer who finds the tier full learns that they wait for a retry, not seconds.
    NodeStatus g = nn.create("/g", NodeType.FILE, StorageClass.NVMF, false);
    EmberException full = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 0));
    assertEquals(
        "no NVMf capacity left for 4 KiB (block 0 of /g); 3 freed blocks were not confirmed"
            + " deallocated by their data node and are sent again every 120 s (a failure shows in"
            + " the data node's log)",
        full.getMessage());
    clock.addAndGet(1);
    assertEquals(slots, new HashSet<>(nn.heartbeat(dn, List.of())));
    full = assertThrows(EmberException.class, () -> nn.allocateBlock(g.id(), 0));
    assertEquals(
        "no NVMf capacity left for 4 KiB (block 0 of /g); 3 freed blocks are still being"
            + " deallocated and will be free within seconds",
        full.getMessage());
    // Done, reported (twice, as after a lost answer to the report): nothing goes out again, and
    // the blocks come back once the reuse delay has passed.
    assertEquals(List.of(), nn.heartbeat(dn, List.copyOf(slots)));
    assertEquals(List.of(), nn.heartbeat(dn, List.copyOf(slots)));
    assertEquals(List.of(), nn.heartbeat(dn, List.of()));
    clock.addAndGet(BlockLocation.UNCHECKED_REUSE_DELAY.toNanos());
    assertEquals(3, usage(StorageClass.NVMF).freeBlocks());
  }

  @Test
  void silentDataNodeIsLostAndItsBlocksSaySo() throws Exception {
    int a = nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS).datanodeId();
    int b = nn.register(StorageClass.DRAM, "dram", "h:2", 4L * BS).datanodeId();
    NodeStatus f = file("/f");
    nn.allocateBlock(f.id(), 0);
    nn.allocateBlock(f.id(), 1);
    nn.closeFile(f.id(), 2L * BS);
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    nn.heartbeat(b);
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    assertEquals(1, nn.expireDatanodes());
    List<BlockLocation> blocks = nn.getBlocks(f.id(), 0, 10);
    assertEquals(1, blocks.stream().filter(BlockLocation::lost).count());
    assertTrue(blocks.stream().filter(BlockLocation::lost).allMatch(x -> x.datanodeId() == a));
    ClassUsage u = usage(StorageClass.DRAM);
    assertEquals(1, u.liveNodes());
    assertEquals(1, u.lostNodes());
    assertEquals(4, u.totalBlocks());
    assertCode(ErrorCode.UNKNOWN_DATANODE, () -> nn.heartbeat(a));
    assertCode(ErrorCode.UNKNOWN_DATANODE, () -> nn.heartbeat(999));
    // New files never get blocks of the lost node.
    NodeStatus g = file("/g");
    for (int i = 0; i < 3; i++) {
      assertEquals(b, nn.allocateBlock(g.id(), i).datanodeId());
    }
    // Deleting /f frees its block on the live node, but its lost node's block stays gone.
    nn.delete("/f", false);
    assertEquals(1, usage(StorageClass.DRAM).freeBlocks());
    assertEquals(4, usage(StorageClass.DRAM).totalBlocks());
  }

  @Test
  void aLiveNodeRegisteringAgainIsSentItsDeallocationsAgain() throws Exception {
    int a = nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId();
    oneBlockFile("/g");
    nn.delete("/g", false);
    List<Long> sent = nn.heartbeat(a, List.of());
    assertEquals(1, sent.size());
    // Its link lost an answer and registered again while the name node still has it live.
    assertEquals(a, nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId());
    assertEquals(sent, nn.heartbeat(a, List.of()), "the forgotten deallocation is sent again");
  }

  @Test
  void lateNodeRegisteringWithItsIncarnationGetsItsBlocksBack() throws Exception {
    int a = nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId();
    NodeStatus f = oneBlockFile("/f");
    oneBlockFile("/g");
    nn.delete("/g", false);
    assertEquals(1, nn.heartbeat(a, List.of()).size()); // sent for deallocation...
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    assertEquals(1, nn.expireDatanodes());
    assertTrue(nn.getBlocks(f.id(), 0, 1).get(0).lost());
    // ...and forgotten by the node when it registers again: the name node sends it again.
    assertEquals(a, nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId());
    assertFalse(nn.getBlocks(f.id(), 0, 1).get(0).lost());
    assertEquals(1, usage(StorageClass.NVMF).liveNodes());
    assertEquals(0, usage(StorageClass.NVMF).lostNodes());
    List<Long> again = nn.heartbeat(a, List.of());
    assertEquals(1, again.size());
    nn.heartbeat(a, again);
    clock.addAndGet(BlockLocation.UNCHECKED_REUSE_DELAY.toNanos());
    assertEquals(3, usage(StorageClass.NVMF).freeBlocks());
    // The revived node takes new blocks again.
    NodeStatus h = file("/h");
    assertEquals(a, nn.allocateBlock(h.id(), 0).datanodeId());
  }

  @Test
  void nodeWithOtherContentsIsANewNode() throws Exception {
    int a = nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS, false, 42).datanodeId();
    NodeStatus f = oneBlockFile("/f");
    // Registering again while live (its first answer was lost) is the same node.
    assertEquals(a, nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS, false, 42).datanodeId());
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    nn.expireDatanodes();
    // A restarted process (new incarnation), or one claiming none, does not get the old blocks.
    int b = nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS, false, 43).datanodeId();
    int c = nn.register(StorageClass.DRAM, "dram", "h:1", 4L * BS, false, 0).datanodeId();
    assertNotEquals(a, b);
    assertNotEquals(b, c);
    assertTrue(nn.getBlocks(f.id(), 0, 1).get(0).lost());
    // Nor does the same incarnation at another endpoint.
    int d = nn.register(StorageClass.DRAM, "dram", "h:2", 4L * BS, false, 42).datanodeId();
    assertNotEquals(a, d);
    assertTrue(nn.getBlocks(f.id(), 0, 1).get(0).lost());
  }

  @Test
  void newNodeAtALiveNodesEndpointMakesTheOldOneLostAtOnce() throws Exception {
    int a = nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId();
    NodeStatus f = oneBlockFile("/f");
    // The target came back empty before the old registration's heartbeats timed out.
    int b = nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 43).datanodeId();
    assertNotEquals(a, b);
    assertTrue(nn.getBlocks(f.id(), 0, 1).get(0).lost());
    assertEquals(1, usage(StorageClass.NVMF).liveNodes());
    assertEquals(1, usage(StorageClass.NVMF).lostNodes());
    assertCode(ErrorCode.UNKNOWN_DATANODE, () -> nn.heartbeat(a));
    // Only the new node's blocks are handed out, though they share the old ones' addresses.
    NodeStatus g = file("/g");
    for (int i = 0; i < 4; i++) {
      assertEquals(b, nn.allocateBlock(g.id(), i).datanodeId());
    }
    assertCode(ErrorCode.NO_CAPACITY, () -> nn.allocateBlock(g.id(), 4));
    // Even if the old contents turned up again at that endpoint, they are not the old node's.
    assertCode(
        ErrorCode.UNKNOWN_DATANODE,
        () -> nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42, true));
    assertTrue(nn.getBlocks(f.id(), 0, 1).get(0).lost());
  }

  @Test
  void reviveOnlyRegistrationComesBackOrIsRefused() throws Exception {
    int a = nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42).datanodeId();
    NodeStatus f = oneBlockFile("/f");
    assertEquals(42, nn.getBlocks(f.id(), 0, 1).get(0).incarnation());
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    nn.expireDatanodes();
    // Contents this name node never knew (it restarted, say) are not taken under a new id.
    assertCode(
        ErrorCode.UNKNOWN_DATANODE,
        () -> nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 7, true));
    assertEquals(0, usage(StorageClass.NVMF).liveNodes());
    // Known ones are.
    assertEquals(
        a, nn.register(StorageClass.NVMF, "nvmf", "t", 4L * BS, true, 42, true).datanodeId());
    assertFalse(nn.getBlocks(f.id(), 0, 1).get(0).lost());
  }

  private ClassUsage usage(StorageClass sc) {
    return nn.usage().stream().filter(u -> u.storageClass().equals(sc)).findFirst().orElseThrow();
  }
}
