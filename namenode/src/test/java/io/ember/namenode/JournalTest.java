package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The journal's records, torn tails and damage, and a namespace rebuilt from it. */
class JournalTest {
  private static final int BS = 4096;
  private final AtomicLong clock = new AtomicLong();

  @TempDir Path dir;

  private static byte[] payload(int i) {
    return ("record " + i + " " + "x".repeat(i % 50)).getBytes(StandardCharsets.UTF_8);
  }

  private static List<String> replayAll(Path dir) throws IOException {
    List<String> out = new ArrayList<>();
    Journal.replay(
        dir,
        0,
        (seq, p) -> {
          byte[] b = new byte[p.remaining()];
          p.get(b);
          out.add(seq + ":" + new String(b, StandardCharsets.UTF_8));
        });
    return out;
  }

  private void writeRecords(Journal.Sync sync, int n) throws Exception {
    Journal j = Journal.open(dir, sync, 1);
    List<CompletableFuture<Void>> acks = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      acks.add(j.append(payload(i)));
    }
    for (CompletableFuture<Void> ack : acks) {
      ack.get(60, TimeUnit.SECONDS);
    }
    j.close();
  }

  @Test
  void recordsComeBackInOrderInEverySyncMode() throws Exception {
    for (Journal.Sync sync : Journal.Sync.values()) {
      for (Path p : Journal.segments(dir)) {
        Files.delete(p);
      }
      writeRecords(sync, 100);
      List<String> got = replayAll(dir);
      assertEquals(100, got.size(), sync.name());
      for (int i = 1; i <= 100; i++) {
        assertEquals(i + ":" + new String(payload(i), StandardCharsets.UTF_8), got.get(i - 1));
      }
    }
  }

  @Test
  void aChangesRecordsAreWrittenAndForcedTogether() throws Exception {
    Checkpoints.write(dir, 0, newState()::save);
    // Records never announced would wait an hour: each batch below is one change, whole.
    Journal j = Journal.open(dir, Journal.Sync.ALWAYS, 1, TimeUnit.HOURS.toMillis(1));
    String live;
    try {
      NameNodeState s = journaled(j);
      s.register(StorageClass.DRAM, "dram", "h:1", 16L * BS);
      s.takeLogged().get(60, TimeUnit.SECONDS);
      long before = j.batchesWritten();
      // A create with its first block, and the close of the empty file that gives the block back,
      // are two records each.
      NodeStatus f = s.create("/f", NodeType.FILE, StorageClass.DRAM, false, "w", true).status();
      s.takeLogged().get(60, TimeUnit.SECONDS);
      assertEquals(before + 1, j.batchesWritten());
      s.closeFile(f.id(), 0);
      s.takeLogged().get(60, TimeUnit.SECONDS);
      assertEquals(before + 2, j.batchesWritten());
      live = describe(s, "/f");
    } finally {
      j.close();
    }
    assertEquals(live, describe(restored(), "/f"));
  }

  @Test
  void aCutAtEveryByteOfTheLastRecordReplaysTheRecordsBeforeIt() throws Exception {
    writeRecords(Journal.Sync.ALWAYS, 5);
    Path segment = Journal.segments(dir).get(0);
    byte[] whole = Files.readAllBytes(segment);
    int lastRecord = whole.length - (Journal.RECORD_HEADER + payload(5).length);
    for (int cut = lastRecord; cut < whole.length; cut++) {
      Files.write(segment, java.util.Arrays.copyOf(whole, cut));
      List<String> got = replayAll(dir);
      assertEquals(4, got.size(), "cut at " + cut);
      // Replay cut the torn bytes off, so the next start finds a clean end.
      assertEquals(lastRecord, Files.size(segment), "cut at " + cut);
    }
    Files.write(segment, whole);
    assertEquals(5, replayAll(dir).size());
  }

  @Test
  void aFlippedByteInTheMiddleRefusesToReplay() throws Exception {
    writeRecords(Journal.Sync.ALWAYS, 5);
    Path segment = Journal.segments(dir).get(0);
    byte[] whole = Files.readAllBytes(segment);
    int second = Journal.SEGMENT_HEADER + Journal.RECORD_HEADER + payload(1).length;
    // Each byte of the second record, header and payload: all refuse, naming file and offset.
    for (int at = second; at < second + Journal.RECORD_HEADER + payload(2).length; at++) {
      byte[] damaged = whole.clone();
      damaged[at] ^= 0x40;
      Files.write(segment, damaged);
      Journal.CorruptJournalException e =
          assertThrows(Journal.CorruptJournalException.class, () -> replayAll(dir), "at " + at);
      assertTrue(e.getMessage().contains(segment.toString()), e.getMessage());
      assertTrue(e.getMessage().contains("offset " + second), e.getMessage());
      // Refusing changed nothing on disk.
      assertEquals(whole.length, Files.size(segment));
    }
  }

  @Test
  void zerosWrittenAheadOfRecordsAreNotDamage() throws Exception {
    writeRecords(Journal.Sync.ALWAYS, 4);
    Path segment = Journal.segments(dir).get(0);
    byte[] whole = Files.readAllBytes(segment);
    // A crash leaves the zeros written ahead of the records behind them.
    byte[] withZeros = java.util.Arrays.copyOf(whole, whole.length + 3 * Journal.RECORD_HEADER);
    Files.write(segment, withZeros);
    assertEquals(4, replayAll(dir).size());
    assertEquals(whole.length, Files.size(segment));
    // A last record torn mid-payload, zeros after it: the records before it replay.
    withZeros = java.util.Arrays.copyOf(whole, whole.length + 100);
    int lastPayload = whole.length - payload(4).length;
    java.util.Arrays.fill(withZeros, lastPayload + 2, withZeros.length, (byte) 0);
    Files.write(segment, withZeros);
    assertEquals(3, replayAll(dir).size());
  }

  @Test
  void aFlippedByteInTheLastRecordIsATornTail() throws Exception {
    writeRecords(Journal.Sync.ALWAYS, 3);
    Path segment = Journal.segments(dir).get(0);
    byte[] whole = Files.readAllBytes(segment);
    whole[whole.length - 2] ^= 1;
    Files.write(segment, whole);
    assertEquals(2, replayAll(dir).size());
  }

  private NameNodeState newState() {
    return new NameNodeState(
        BS, List.of(StorageClass.DRAM, StorageClass.NVMF), Duration.ofSeconds(10), clock::get);
  }

  /** A journal on a directory formatted for an empty namespace, as {@code --format} leaves it. */
  private Journal formatted(Journal.Sync sync) throws IOException {
    Checkpoints.write(dir, 0, newState()::save);
    return Journal.open(dir, sync, 1);
  }

  /** A state that journals, loaded from the formatted directory as a name node's is. */
  private NameNodeState journaled(Journal j) throws IOException {
    NameNodeState s = restored();
    s.attachJournal(j);
    return s;
  }

  private NameNodeState restored() throws IOException {
    List<Path> checkpoints = Checkpoints.list(dir);
    NameNodeState s = newState();
    long seq = Checkpoints.read(checkpoints.get(0), s::load);
    Journal.replay(dir, seq, (n, p) -> s.replay(p));
    s.finishRestore();
    return s;
  }

  /** Everything a client can see of a namespace, as text. */
  private static String describe(NameNodeState s, String path) throws EmberException {
    StringBuilder out = new StringBuilder();
    NodeStatus st = s.lookup(path);
    out.append(path)
        .append(' ')
        .append(st.type())
        .append(" id=")
        .append(st.id())
        .append(" len=")
        .append(st.length())
        .append(" open=")
        .append(st.open())
        .append(" blocks=")
        .append(st.blockCount())
        .append(" mtime=")
        .append(st.modificationTime())
        .append(' ')
        .append(st.owner())
        .append(':')
        .append(st.group())
        .append(' ')
        .append(Integer.toOctalString(st.permission()))
        .append('\n');
    if (st.type() == NodeType.FILE) {
      for (BlockLocation b : s.getBlocks(st.id(), 0, 1000)) {
        out.append("  ")
            .append(b.blockId())
            .append('/')
            .append(b.generation())
            .append('@')
            .append(b.endpoint())
            .append(':')
            .append(b.address())
            .append('\n');
      }
    } else {
      for (DirEntry e : s.list(path, "", 10_000).entries()) {
        out.append(describe(s, path.equals("/") ? "/" + e.name() : path + "/" + e.name()));
      }
    }
    return out.toString();
  }

  private static void mutate(NameNodeState s, int round) throws Exception {
    s.create("/r" + round + "/a/b", NodeType.DIRECTORY, StorageClass.DRAM, true);
    NodeStatus f = s.create("/r" + round + "/a/b/f", NodeType.FILE, StorageClass.DRAM, false);
    s.allocateBlock(f.id(), 0);
    s.allocateBlock(f.id(), 1);
    s.allocateBlock(f.id(), 2);
    s.closeFile(f.id(), BS + 10); // gives the third block back
    // Runs of blocks asked ahead: one file closed inside its run, one left open holding it all.
    NodeStatus run = s.create("/r" + round + "/run", NodeType.FILE, StorageClass.DRAM, false);
    s.allocateBlocks(run.id(), 0, 4);
    s.closeFile(run.id(), 2L * BS);
    NodeStatus open = s.create("/r" + round + "/open", NodeType.FILE, StorageClass.DRAM, false);
    s.allocateBlocks(open.id(), 0, 3);
    NodeStatus g = s.create("/r" + round + "/g", NodeType.FILE, StorageClass.NVMF, false);
    s.allocateBlock(g.id(), 0);
    s.create("/r" + round + "/m", NodeType.MULTIFILE, StorageClass.DRAM, false);
    s.create("/r" + round + "/m/part", NodeType.FILE, StorageClass.DRAM, false);
    s.rename("/r" + round + "/a", "/r" + round + "/moved");
    NodeStatus h = s.create("/r" + round + "/h", NodeType.FILE, StorageClass.DRAM, false);
    s.allocateBlock(h.id(), 0);
    s.closeFile(h.id(), 1);
    s.delete("/r" + round + "/h", false);
    // An overwriting create: a delete and a create in one step, replayed as both.
    NodeStatus o = s.create("/r" + round + "/o", NodeType.FILE, StorageClass.DRAM, false);
    s.allocateBlock(o.id(), 0);
    s.closeFile(o.id(), 7);
    NodeStatus o2 =
        s.create("/r" + round + "/o", NodeType.FILE, StorageClass.DRAM, false, "", true, true)
            .status();
    s.closeFile(o2.id(), 0); // gives its first block back
    // Owners and modes: a caller's entries, parents made for it, and changes of both.
    Caller alice = s.caller("alice");
    s.setAttributes(s.internal(), "/r" + round, "", "", 0777);
    s.create(
        alice,
        "/r" + round + "/al",
        NodeType.DIRECTORY,
        StorageClass.DRAM,
        false,
        "",
        false,
        false,
        0700);
    s.create(
        alice,
        "/r" + round + "/al/x/y",
        NodeType.FILE,
        StorageClass.DRAM,
        true,
        "",
        false,
        false,
        0600);
    s.setAttributes(s.internal(), "/r" + round + "/g", "bob", "staff", 01750);
    s.setAttributes(alice, "/r" + round + "/al/x", "", "", 0711);
  }

  @Test
  void delegationTokensAndTheirKeysComeBackFromCheckpointAndJournal() throws Exception {
    Journal j = formatted(Journal.Sync.ALWAYS);
    NameNodeState live = journaled(j);
    Caller alice = live.caller("alice");
    io.ember.protocol.DelegationToken kept = live.issueDelegationToken(alice, "");
    io.ember.protocol.DelegationToken cancelled = live.issueDelegationToken(alice, "spark");
    // A checkpoint in the middle: the first key and tokens come from it, the rest from the journal.
    live.checkpoint(dir);
    long renewed = live.renewDelegationToken(live.caller("spark"), cancelled);
    live.cancelDelegationToken(alice, cancelled);
    io.ember.protocol.DelegationToken late = live.issueDelegationToken(live.caller("bob"), "");
    live.takeLogged().get(60, TimeUnit.SECONDS);
    j.close();
    assertTrue(renewed > System.currentTimeMillis(), "renewed until " + renewed);

    NameNodeState back = restored();
    assertEquals("alice", back.authenticate(kept).name());
    assertEquals("bob", back.authenticate(late).name());
    EmberException e = assertThrows(EmberException.class, () -> back.authenticate(cancelled));
    assertEquals(ErrorCode.UNAUTHENTICATED, e.code());
    assertTrue(e.getMessage().contains("cancelled"), e.getMessage());
    // Numbers are not handed out twice after a restart.
    io.ember.protocol.DelegationToken next = back.issueDelegationToken(alice, "");
    assertTrue(
        next.identifier().sequence() > late.identifier().sequence(), next + " after " + late);
    assertEquals(2 + 1, back.delegationTokenCount());
    // The files hold the keys that sign tokens: only the name node's user reads them.
    try (var files = Files.list(dir)) {
      for (Path f : files.filter(f -> !f.getFileName().toString().endsWith(".lock")).toList()) {
        assertEquals(
            "rw-------",
            java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)),
            f.toString());
      }
    }
  }

  @Test
  void aNamespaceComesBackFromCheckpointAndJournal() throws Exception {
    Journal j = formatted(Journal.Sync.ALWAYS);
    NameNodeState live = journaled(j);
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    live.register(StorageClass.NVMF, "nvmf", "nvmf+tcp://t/n", 64L * BS, true, 12);
    mutate(live, 1);
    // A checkpoint in the middle: the rest comes from the journal after it.
    live.checkpoint(dir);
    mutate(live, 2);
    live.create("/r2/p/q/m", NodeType.MULTIFILE, StorageClass.DRAM, true);
    live.takeLogged().get(60, TimeUnit.SECONDS);
    j.close();

    NameNodeState back = restored();
    assertEquals(describe(live, "/"), describe(back, "/"));
    // Blocks no file holds are free again, and none is handed out twice.
    NodeStatus n = back.create("/new", NodeType.FILE, StorageClass.DRAM, false);
    back.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11, true);
    List<Long> taken = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      try {
        taken.add(back.allocateBlock(n.id(), i).address());
      } catch (EmberException e) {
        assertEquals(ErrorCode.NO_CAPACITY, e.code());
        break;
      }
    }
    String all = describe(back, "/");
    for (Long address : taken) {
      long holders =
          all.lines()
              .filter(l -> l.endsWith("@127.0.0.1:1:" + address) && l.startsWith("  "))
              .count();
      assertEquals(1, holders, "block at " + address + " held once:\n" + all);
    }
    // 64 blocks: each round's DRAM files hold 2, 2 and 3 (the open one its whole run); the rest
    // went to the new file.
    assertEquals(50, taken.size());
  }

  @Test
  void anUnreportedDataNodeServesItsBlocksUntilItsTimeout() throws Exception {
    Journal j = formatted(Journal.Sync.NONE);
    NameNodeState live = journaled(j);
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus f = live.create("/f", NodeType.FILE, StorageClass.DRAM, false);
    live.allocateBlock(f.id(), 0);
    live.closeFile(f.id(), 5);
    j.close();

    NameNodeState back = restored();
    assertFalse(back.getBlocks(f.id(), 0, 1).get(0).lost());
    // It takes no new blocks before it says it still holds its contents.
    NodeStatus g = back.create("/g", NodeType.FILE, StorageClass.DRAM, false);
    EmberException none = assertThrows(EmberException.class, () -> back.allocateBlock(g.id(), 0));
    assertEquals(ErrorCode.NO_CAPACITY, none.code());
    // Its heartbeats are refused until it registers again.
    EmberException hb = assertThrows(EmberException.class, () -> back.heartbeat(1));
    assertEquals(ErrorCode.UNKNOWN_DATANODE, hb.code());
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    assertEquals(1, back.expireDatanodes());
    assertTrue(back.getBlocks(f.id(), 0, 1).get(0).lost());
  }

  @Test
  void anExpiredLeaseClosesTheFileAtTheReportedLengthAndSurvivesARestart() throws Exception {
    Journal j = formatted(Journal.Sync.ALWAYS);
    NameNodeState live = journaled(j);
    live.leaseTimeout(Duration.ofSeconds(5));
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus f = live.create("/w", NodeType.FILE, StorageClass.DRAM, false, "writer-1");
    NodeStatus other = live.create("/o", NodeType.FILE, StorageClass.DRAM, false, "writer-2");
    for (int i = 0; i < 3; i++) {
      live.allocateBlock(f.id(), i);
    }
    assertEquals(
        List.of(),
        live.renewLease(
            "writer-1", List.of(new io.ember.protocol.Messages.WrittenLength(f.id(), BS + 7))));
    live.allocateBlock(other.id(), 0);
    clock.addAndGet(Duration.ofSeconds(3).toNanos());
    live.renewLease(
        "writer-2", List.of(new io.ember.protocol.Messages.WrittenLength(other.id(), 5)));
    clock.addAndGet(Duration.ofSeconds(3).toNanos());
    // writer-1 went silent 6 s ago; writer-2 renewed 3 s ago.
    assertEquals(1, live.expireLeases());
    NodeStatus closed = live.lookup("/w");
    assertFalse(closed.open());
    assertEquals(BS + 7, closed.length());
    assertEquals(2, closed.blockCount()); // the third block went back
    assertTrue(live.lookup("/o").open());
    EmberException write = assertThrows(EmberException.class, () -> live.allocateBlock(f.id(), 2));
    assertEquals(ErrorCode.LEASE_RECOVERED, write.code());
    assertTrue(write.getMessage().contains("writer-1"), write.getMessage());
    EmberException close =
        assertThrows(EmberException.class, () -> live.closeFile(f.id(), 3L * BS));
    assertEquals(ErrorCode.LEASE_RECOVERED, close.code());
    // A writer that had reported every byte closes at the same length: nothing is lost.
    assertEquals(BS + 7, live.closeFile(f.id(), BS + 7).length());
    assertEquals(
        List.of(f.id()),
        live.renewLease(
            "writer-1", List.of(new io.ember.protocol.Messages.WrittenLength(f.id(), BS + 7))));
    live.takeLogged().get(60, TimeUnit.SECONDS);
    j.close();

    NameNodeState back = restored();
    back.leaseTimeout(Duration.ofSeconds(5));
    assertEquals(describe(live, "/"), describe(back, "/"));
    EmberException after = assertThrows(EmberException.class, () -> back.allocateBlock(f.id(), 2));
    assertEquals(ErrorCode.LEASE_RECOVERED, after.code());
    // The open file's writer gets a whole timeout from the restart to renew.
    clock.addAndGet(Duration.ofSeconds(4).toNanos());
    assertEquals(0, back.expireLeases());
    clock.addAndGet(Duration.ofSeconds(2).toNanos());
    assertEquals(1, back.expireLeases());
    // What writer-2 reported before the restart is kept.
    assertEquals(5, back.lookup("/o").length());
    assertFalse(back.lookup("/o").open());
    assertEquals(other.id(), back.lookup("/o").id());
  }

  @Test
  void leaseRecoveryKeepsWhatTheDataNodesHoldPastTheReportedLength() throws Exception {
    NameNodeState live = newState();
    live.leaseTimeout(Duration.ofSeconds(5));
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus f = live.create("/full", NodeType.FILE, StorageClass.DRAM, false, "w");
    NodeStatus g = live.create("/gap", NodeType.FILE, StorageClass.DRAM, false, "w");
    List<Long> asked = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      live.allocateBlock(f.id(), i);
      live.allocateBlock(g.id(), i);
    }
    live.renewLease(
        "w",
        List.of(
            new io.ember.protocol.Messages.WrittenLength(f.id(), BS + 7),
            new io.ember.protocol.Messages.WrittenLength(g.id(), BS + 7)));
    List<BlockLocation> gBlocks = live.getBlocks(g.id(), 0, 3);
    NameNodeState.HeldLengths held =
        block -> {
          asked.add(block.blockId());
          if (block.blockId() == gBlocks.get(2).blockId()) {
            // Its data node does not answer: the file waits for it, up to one more timeout.
            return CompletableFuture.failedFuture(new IOException("unreachable"));
          }
          // Each of the last two blocks is full up to 100 bytes into the third.
          return CompletableFuture.completedFuture(
              java.util.OptionalLong.of(block.index() == 1 ? BS : 100));
        };
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    assertEquals(1, live.expireLeases(held));
    // Blocks before the reported length are not asked about.
    assertEquals(4, asked.size());
    assertEquals(2L * BS + 100, live.lookup("/full").length());
    assertTrue(live.lookup("/gap").open());
    clock.addAndGet(Duration.ofSeconds(5).toNanos());
    assertEquals(1, live.expireLeases(held));
    // The count stopped at the block whose data node never answered.
    assertEquals(2L * BS, live.lookup("/gap").length());
    assertEquals(2, live.lookup("/gap").blockCount()); // the unconfirmed third went back
  }

  @Test
  void aDataNodeThatDoesNotAnswerHoldsRecoveryUpToOneMoreTimeout() throws Exception {
    NameNodeState live = newState();
    live.leaseTimeout(Duration.ofSeconds(5));
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus f = live.create("/f", NodeType.FILE, StorageClass.DRAM, false, "w");
    live.allocateBlock(f.id(), 0);
    live.allocateBlock(f.id(), 1);
    live.renewLease("w", List.of(new io.ember.protocol.Messages.WrittenLength(f.id(), 9)));
    NameNodeState.HeldLengths silent =
        block -> CompletableFuture.failedFuture(new IOException("no answer"));
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    assertEquals(0, live.expireLeases(silent));
    assertTrue(live.lookup("/f").open());
    // A throwing asker is a data node that did not answer, not the end of lease recovery.
    assertEquals(
        0,
        live.expireLeases(
            block -> {
              throw new IllegalStateException("broken");
            }));
    clock.addAndGet(Duration.ofSeconds(5).toNanos());
    // Two timeouts without a renewal: closed at what its writer reported.
    assertEquals(1, live.expireLeases(silent));
    assertEquals(9, live.lookup("/f").length());
    assertEquals(1, live.lookup("/f").blockCount());
  }

  @Test
  void blockNumbersLostWithTheJournalsTailAreNotHandedOutAgain() throws Exception {
    // sync=batch or none can lose the last changes, though data nodes saw their blocks: a DRAM
    // data node refuses a write naming an older generation than the one its block holds.
    Journal j = formatted(Journal.Sync.ALWAYS);
    NameNodeState live = journaled(j);
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus kept = live.create("/kept", NodeType.FILE, StorageClass.DRAM, false, "w");
    live.allocateBlock(kept.id(), 0);
    live.takeLogged().get(60, TimeUnit.SECONDS);
    Path segment = Journal.segments(dir).get(0);
    byte[] beforeTheLoss = Files.readAllBytes(segment);
    NodeStatus lost = live.create("/lost", NodeType.FILE, StorageClass.DRAM, false, "w");
    long lostGeneration = 0;
    long lostBlock = 0;
    for (int i = 0; i < 3; i++) {
      BlockLocation b = live.allocateBlock(lost.id(), i);
      lostGeneration = Math.max(lostGeneration, b.generation());
      lostBlock = Math.max(lostBlock, b.blockId());
    }
    live.takeLogged().get(60, TimeUnit.SECONDS);
    j.close();
    Files.write(segment, beforeTheLoss);

    NameNodeState back = restored();
    assertThrows(EmberException.class, () -> back.lookup("/lost"));
    back.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11);
    NodeStatus next = back.create("/next", NodeType.FILE, StorageClass.DRAM, false, "w");
    BlockLocation b = back.allocateBlock(next.id(), 0);
    assertTrue(b.generation() > lostGeneration, b.generation() + " <= " + lostGeneration);
    assertTrue(b.blockId() > lostBlock, b.blockId() + " <= " + lostBlock);
  }

  @Test
  void aBlockReportMarksBlocksOverwrittenByLostAllocationsAsLost() throws Exception {
    NameNodeState live = newState();
    int dn =
        live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 64L * BS, false, 11).datanodeId();
    NodeStatus f = live.create("/f", NodeType.FILE, StorageClass.DRAM, false, "w");
    BlockLocation kept = live.allocateBlock(f.id(), 0);
    BlockLocation overwritten = live.allocateBlock(f.id(), 1);
    List<io.ember.protocol.Messages.HeldBlock> report =
        List.of(
            new io.ember.protocol.Messages.HeldBlock(kept.address(), kept.generation()),
            new io.ember.protocol.Messages.HeldBlock(
                overwritten.address(), overwritten.generation() + 1000),
            // A slot no file holds: what a lost allocation wrote there is simply free space.
            new io.ember.protocol.Messages.HeldBlock(40L * BS, overwritten.generation() + 2000));
    EmberException wrongContents =
        assertThrows(EmberException.class, () -> live.blockReport(dn, 12, report));
    assertEquals(ErrorCode.UNKNOWN_DATANODE, wrongContents.code());
    EmberException notABlock =
        assertThrows(
            EmberException.class,
            () ->
                live.blockReport(
                    dn, 11, List.of(new io.ember.protocol.Messages.HeldBlock(BS + 1, 3))));
    assertEquals(ErrorCode.INVALID_ARGUMENT, notABlock.code());
    assertEquals(1, live.blockReport(dn, 11, report));
    assertEquals(0, live.blockReport(dn, 11, report), "reported again: nothing new");
    List<BlockLocation> blocks = live.getBlocks(f.id(), 0, 2);
    assertFalse(blocks.get(0).lost());
    assertTrue(blocks.get(1).lost());
    // New blocks are numbered past every generation reported, so the node accepts their writes.
    NodeStatus g = live.create("/g", NodeType.FILE, StorageClass.DRAM, false, "w");
    assertTrue(live.allocateBlock(g.id(), 0).generation() > overwritten.generation() + 2000);
    // Freed, the slot is an ordinary free block again.
    live.delete("/f", false);
    NodeStatus h = live.create("/h", NodeType.FILE, StorageClass.DRAM, false, "w");
    // Every slot but /g's, the overwritten one among them.
    for (int i = 0; i < 63; i++) {
      assertFalse(live.allocateBlock(h.id(), i).lost(), "block " + i);
    }
  }

  @Test
  void anAbandonedFileIsGoneAfterARestartToo() throws Exception {
    Journal j = formatted(Journal.Sync.ALWAYS);
    NameNodeState live = journaled(j);
    live.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 4L * BS, false, 11);
    NodeStatus f = live.create("/a", NodeType.FILE, StorageClass.DRAM, false, "w");
    live.allocateBlock(f.id(), 0);
    live.allocateBlock(f.id(), 1);
    live.abandon(f.id());
    live.abandon(f.id()); // again: nothing left to give up
    assertThrows(EmberException.class, () -> live.lookup("/a"));
    live.takeLogged().get(60, TimeUnit.SECONDS);
    j.close();
    NameNodeState back = restored();
    assertThrows(EmberException.class, () -> back.lookup("/a"));
    back.register(StorageClass.DRAM, "dram", "127.0.0.1:1", 4L * BS, false, 11, true);
    NodeStatus g = back.create("/g", NodeType.FILE, StorageClass.DRAM, false);
    for (int i = 0; i < 4; i++) {
      back.allocateBlock(g.id(), i); // all four blocks are free again
    }
  }
}
