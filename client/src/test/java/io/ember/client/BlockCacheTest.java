package io.ember.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.StorageClass;
import java.util.List;
import org.junit.jupiter.api.Test;

class BlockCacheTest {
  private static BlockLocation block(int index) {
    return new BlockLocation(
        index, 100 + index, 1, 1, 7, StorageClass.NVMF, "nvmf", "e", 0, 4096, false);
  }

  @Test
  void keepsPagesOfAFileAndDropsItWholeOnInvalidate() {
    BlockCache cache = new BlockCache(4);
    cache.put(1, List.of(block(0), block(1)), 10);
    cache.put(1, List.of(block(4)), 20); // a later page, with a gap before it
    assertEquals(block(1), cache.get(1, 1).location());
    assertEquals(20, cache.get(1, 4).askedNanos());
    assertNull(cache.get(1, 2));
    assertNull(cache.get(1, 5));
    cache.invalidate(1);
    assertNull(cache.get(1, 0));
  }

  @Test
  void leastRecentlyUsedFileGoesFirst() {
    BlockCache cache = new BlockCache(2);
    cache.put(1, List.of(block(0)), 0);
    cache.put(2, List.of(block(0)), 0);
    cache.get(1, 0); // file 1 is now the most recent
    cache.put(3, List.of(block(0)), 0);
    assertTrue(cache.get(1, 0) != null);
    assertNull(cache.get(2, 0));
    assertTrue(cache.get(3, 0) != null);
  }

  @Test
  void aCacheOfNoFilesKeepsNothing() {
    BlockCache cache = new BlockCache(0);
    cache.put(1, List.of(block(0)), 0);
    assertNull(cache.get(1, 0));
  }

  @Test
  void aLocationIsTrustedForAWindowFromWhenItWasAskedFor() {
    BlockCache.Cached c = new BlockCache.Cached(block(0), 1_000);
    assertTrue(c.askedWithin(500, 1_400));
    assertFalse(c.askedWithin(500, 1_500));
    // nanoTime may be negative and wrap: only differences count.
    BlockCache.Cached wrapped = new BlockCache.Cached(block(0), Long.MAX_VALUE - 100);
    assertTrue(wrapped.askedWithin(500, Long.MIN_VALUE + 100));
  }
}
