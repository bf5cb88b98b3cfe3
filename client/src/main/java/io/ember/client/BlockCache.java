package io.ember.client;

import io.ember.protocol.BlockLocation;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Block locations of recently opened or read files, least recently used first out. A file's
 * locations do not change once it is closed, so entries are dropped only when a read through them
 * fails.
 */
final class BlockCache {
  private final int maxFiles;
  private final Map<Long, BlockLocation[]> files;

  BlockCache(int maxFiles) {
    this.maxFiles = maxFiles;
    this.files = new LinkedHashMap<>(16, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, BlockLocation[]> eldest) {
        return size() > BlockCache.this.maxFiles;
      }
    };
  }

  synchronized BlockLocation get(long fileId, int index) {
    BlockLocation[] known = files.get(fileId);
    return known != null && index < known.length ? known[index] : null;
  }

  synchronized void put(long fileId, List<BlockLocation> blocks) {
    if (maxFiles == 0 || blocks.isEmpty()) {
      return;
    }
    int last = blocks.get(blocks.size() - 1).index();
    BlockLocation[] known = files.get(fileId);
    if (known == null || known.length <= last) {
      known = known == null ? new BlockLocation[last + 1] : Arrays.copyOf(known, last + 1);
      files.put(fileId, known);
    }
    for (BlockLocation b : blocks) {
      known[b.index()] = b;
    }
  }

  synchronized void invalidate(long fileId) {
    files.remove(fileId);
  }
}
