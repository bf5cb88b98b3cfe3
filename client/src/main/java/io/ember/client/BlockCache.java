package io.ember.client;

import io.ember.protocol.BlockLocation;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Block locations of recently opened or read files, least recently used first out. A file's
 * locations do not change once it is closed, so entries are dropped only when a read through them
 * fails; but a file can be deleted and its blocks reused, so each location keeps when it was asked
 * for, and storage that cannot check generations trusts it only for a while.
 */
final class BlockCache {
  /** A location and the {@link System#nanoTime()} at which the name node was asked for it. */
  record Cached(BlockLocation location, long askedNanos) {
    boolean askedWithin(long nanos, long nowNanos) {
      return nowNanos - askedNanos < nanos;
    }
  }

  private final int maxFiles;
  private final Map<Long, Cached[]> files;

  BlockCache(int maxFiles) {
    this.maxFiles = maxFiles;
    this.files =
        new LinkedHashMap<>(16, 0.75f, true) {
          private static final long serialVersionUID = 1L;

          @Override
          protected boolean removeEldestEntry(Map.Entry<Long, Cached[]> eldest) {
            return size() > BlockCache.this.maxFiles;
          }
        };
  }

  synchronized Cached get(long fileId, int index) {
    Cached[] known = files.get(fileId);
    return known != null && index < known.length ? known[index] : null;
  }

  /** Caches {@code blocks} of a file, asked of the name node at {@code askedNanos}. */
  synchronized void put(long fileId, List<BlockLocation> blocks, long askedNanos) {
    if (maxFiles == 0 || blocks.isEmpty()) {
      return;
    }
    int last = blocks.get(blocks.size() - 1).index();
    Cached[] known = files.get(fileId);
    if (known == null || known.length <= last) {
      known = known == null ? new Cached[last + 1] : Arrays.copyOf(known, last + 1);
      files.put(fileId, known);
    }
    for (BlockLocation b : blocks) {
      known[b.index()] = new Cached(b, askedNanos);
    }
  }

  synchronized void invalidate(long fileId) {
    files.remove(fileId);
  }
}
