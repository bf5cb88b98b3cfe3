package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.EmberException;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.time.Duration;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;

/**
 * A large file's writer asks the name node for its next run of blocks half way through the current
 * one, so its writes never wait for an allocation; what it did not use goes back at close, and a
 * tier too full to give a whole run ahead still takes the file to its last block.
 */
class AskAheadTest {
  private static final int MIB = 1 << 20;

  /** Far longer than any step takes even on a starved machine: the test waits for events. */
  private static final Duration PATIENCE = Duration.ofSeconds(90);

  private static MiniCluster cluster(String capacity) throws EmberException {
    return MiniCluster.builder().dramDatanodes(1).dramCapacity(capacity).blockSize("1m").build();
  }

  private static long usedBlocks(EmberClient c) throws EmberException {
    ClassUsage u =
        c.df().stream()
            .filter(x -> x.storageClass().equals(StorageClass.DRAM))
            .findFirst()
            .orElseThrow();
    return u.totalBlocks() - u.freeBlocks();
  }

  private static void awaitUsed(EmberClient c, LongPredicate ok, String what) throws Exception {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    long used = usedBlocks(c);
    while (!ok.test(used)) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + PATIENCE + ": " + what + " (" + used + " used)");
      }
      Thread.sleep(20);
      used = usedBlocks(c);
    }
  }

  @Test
  void theNextRunIsAskedHalfWayThroughAndWhatIsNotUsedGoesBackAtClose() throws Exception {
    try (MiniCluster cluster = cluster("128m");
        EmberClient c = cluster.newClient()) {
      // Runs of 1, 1, 2, 4 and 8 blocks take the file to 16 MiB, then runs of 16 (16 MiB ahead).
      byte[] bytes = data(25 * MIB, 7);
      try (EmberOutputStream out = c.create("/big", CreateOptions.DEFAULT)) {
        out.write(bytes, 0, 24 * MIB);
        // Every write so far is on its data node, so the run of blocks 16 to 31 is answered.
        out.flush();
        out.write(bytes, 24 * MIB, MIB);
        // Block 24 is half way through that run: blocks 32 to 47 are asked for now, not when a
        // write first needs block 32.
        awaitUsed(c, used -> used == 48, "the run of blocks 32 to 47 to be given");
      }
      awaitUsed(c, used -> used == 25, "the 23 blocks the file did not use to be given back");
      assertArrayEquals(bytes, TestFiles.readAll(c, "/big"));
    }
  }

  @Test
  void aTierTooFullToGiveARunAheadStillTakesTheFileToItsLastBlock() throws Exception {
    try (MiniCluster cluster = cluster("40m");
        EmberClient c = cluster.newClient()) {
      // The run asked at block 24 comes back short (the tier keeps an eighth of its blocks for
      // writes that need them), and the rest of the file is asked for block by block.
      byte[] bytes = data(40 * MIB, 8);
      try (EmberOutputStream out = c.create("/full", CreateOptions.DEFAULT)) {
        out.write(bytes);
      }
      assertEquals(40, usedBlocks(c));
      assertArrayEquals(bytes, TestFiles.readAll(c, "/full"));
    }
  }

  @Test
  void aRunAskedAheadLeavesTheTiersReserveToAnotherWriter() throws Exception {
    try (MiniCluster cluster = cluster("37m");
        EmberClient c = cluster.newClient()) {
      byte[] bytes = data(25 * MIB, 9);
      byte[] other = data(5 * MIB, 11);
      try (EmberOutputStream out = c.create("/ahead", CreateOptions.DEFAULT)) {
        out.write(bytes, 0, 24 * MIB);
        out.flush();
        // Block 24 is half way through the run of blocks 16 to 31: the run from block 32 is asked
        // now, ahead of need, when the file holds 32 blocks and the 5 free are the tier's reserve
        // (an eighth, rounded up). Block 32 had been taken as needed, leaving the other file 4.
        out.write(bytes, 24 * MIB, MIB);
        // The name node answers one connection's requests in order: this create comes after.
        try (EmberOutputStream second = c.create("/other", CreateOptions.DEFAULT)) {
          second.write(other);
        }
      }
      assertEquals(30, usedBlocks(c));
      assertArrayEquals(bytes, TestFiles.readAll(c, "/ahead"));
      assertArrayEquals(other, TestFiles.readAll(c, "/other"));
    }
  }

  @Test
  void aRunAskedAheadThatComesBackEmptyIsAskedAgainWhenNeeded() throws Exception {
    try (MiniCluster cluster = cluster("37m");
        EmberClient c = cluster.newClient()) {
      // At block 24 the file holds 32 of the 37 blocks, and the 5 free are the tier's reserve:
      // the run asked ahead comes back empty, and each block after is asked as a write needs it.
      byte[] bytes = data(37 * MIB, 10);
      try (EmberOutputStream out = c.create("/last", CreateOptions.DEFAULT)) {
        out.write(bytes);
      }
      assertEquals(37, usedBlocks(c));
      assertArrayEquals(bytes, TestFiles.readAll(c, "/last"));
    }
  }
}
