package io.ember.datanode.dram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The bytes a block holds without a gap, as lease recovery asks for them. */
class BlockGenerationsTest {
  private static final int BLOCK = 1024;

  private static void write(BlockGenerations g, long gen, long address, int length)
      throws EmberException {
    g.checkWrite(1, gen, address, length, "test");
    g.wrote(address, length);
  }

  @Test
  void countsWhatWasWrittenFromTheStartWithoutAGap() throws EmberException {
    BlockGenerations g = new BlockGenerations(7, 4 * BLOCK, BLOCK);
    long block = 2 * BLOCK;
    assertEquals(0, g.heldLength(1, 5, block, "test"), "nothing written yet");
    write(g, 5, block, 100);
    write(g, 5, block + 100, 50);
    assertEquals(150, g.heldLength(1, 5, block, "test"));
    // Bytes after a hole are not part of what the block holds from its start.
    write(g, 5, block + 400, 10);
    assertEquals(150, g.heldLength(1, 5, block, "test"));
    // A rewrite inside what is held does not shorten it.
    write(g, 5, block, 10);
    assertEquals(150, g.heldLength(1, 5, block, "test"));
    write(g, 5, block + 150, BLOCK - 150);
    assertEquals(BLOCK, g.heldLength(1, 5, block, "test"));
  }

  @Test
  void writesThatArriveOutOfOrderCountOnceTheGapFills() throws EmberException {
    BlockGenerations g = new BlockGenerations(7, 4 * BLOCK, BLOCK);
    // A client's writes to one block, sent last first.
    write(g, 5, 600, 200);
    write(g, 5, 300, 300);
    write(g, 5, 900, 10);
    assertEquals(0, g.heldLength(1, 5, 0, "test"));
    write(g, 5, 0, 200);
    assertEquals(200, g.heldLength(1, 5, 0, "test"));
    // Overlapping what is held and reaching the writes set aside: all of them join, up to the
    // next gap (800 to 900).
    write(g, 5, 100, 250);
    assertEquals(800, g.heldLength(1, 5, 0, "test"));
    write(g, 5, 800, 100);
    assertEquals(910, g.heldLength(1, 5, 0, "test"));
    // A new generation forgets what the old one set aside.
    write(g, 5, 950, 10);
    write(g, 6, 0, 20);
    write(g, 6, 20, 920);
    assertEquals(940, g.heldLength(1, 6, 0, "test"));
  }

  @Test
  void aNewGenerationStartsEmptyAndAnOldOneIsRefused() throws EmberException {
    BlockGenerations g = new BlockGenerations(7, 4 * BLOCK, BLOCK);
    write(g, 5, 0, 300);
    // The block went to another file: its first write starts the count again.
    write(g, 6, 0, 20);
    assertEquals(20, g.heldLength(1, 6, 0, "test"));
    // Asked about a generation not written yet: nothing of it is here.
    assertEquals(0, g.heldLength(1, 9, 0, "test"));
    EmberException stale = assertThrows(EmberException.class, () -> g.heldLength(1, 5, 0, "test"));
    assertEquals(ErrorCode.STALE_LOCATION, stale.code());
    EmberException notAStart =
        assertThrows(EmberException.class, () -> g.heldLength(1, 6, 10, "test"));
    assertEquals(ErrorCode.OUT_OF_RANGE, notAStart.code());
  }

  @Test
  void writesOfAnotherGenerationWaitForReceivesInTheirSlotAndRunInOrder() throws EmberException {
    BlockGenerations g = new BlockGenerations(7, 4 * BLOCK, BLOCK);
    g.checkWrite(1, 5, BLOCK, 600, "test");
    g.startReceive(BLOCK, 5);
    g.startReceive(BLOCK + 600, 5);
    // The same generation goes on; another one in that slot waits; other slots are free.
    assertFalse(g.mustWait(BLOCK + 700, 5));
    assertTrue(g.mustWait(BLOCK + 10, 6));
    assertFalse(g.mustWait(2 * BLOCK, 6));
    assertFalse(g.mustWait(100 * BLOCK, 6), "outside the region: checkWrite refuses it");
    List<String> ran = new ArrayList<>();
    g.await(BLOCK, () -> ran.add("first"));
    // Once one waits, every later write to the slot queues behind it, even of the receiving one.
    assertTrue(g.mustWait(BLOCK + 900, 5));
    g.await(BLOCK, () -> ran.add("second"));
    assertEquals(List.of(), g.endReceive(BLOCK), "a receive is still arriving");
    List<Runnable> ready = g.endReceive(BLOCK + 600);
    ready.forEach(Runnable::run);
    assertEquals(List.of("first", "second"), ran);
    assertFalse(g.mustWait(BLOCK, 6));
  }

  @Test
  void aSlotMovingToANewerGenerationIsToldOnceWithTheSlotsStart() throws Exception {
    List<String> moves = new ArrayList<>();
    BlockGenerations g =
        new BlockGenerations(1, 4 * BLOCK, BLOCK, (slot, gen) -> moves.add(slot + "@" + gen));
    g.checkWrite(1, 5, BLOCK + 10, 10, "test");
    g.checkWrite(1, 5, BLOCK + 30, 10, "test"); // same generation: no move
    assertEquals(List.of(BLOCK + "@5"), moves);
    g.checkWrite(2, 6, BLOCK, 10, "test");
    assertEquals(List.of(BLOCK + "@5", BLOCK + "@6"), moves);
    // An older generation is refused, and moves nothing.
    assertThrows(EmberException.class, () -> g.checkWrite(1, 5, BLOCK, 10, "test"));
    assertEquals(2, moves.size());
  }
}
