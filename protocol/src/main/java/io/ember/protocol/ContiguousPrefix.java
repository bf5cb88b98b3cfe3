package io.ember.protocol;

import java.util.Map;
import java.util.TreeMap;

/**
 * How many bytes from offset 0 are present without a gap, as ranges arrive in any order: what a
 * writer's data nodes acknowledged, or what a block holds. Not thread-safe: callers hold a lock.
 */
public final class ContiguousPrefix {
  private long prefix;

  /**
   * Ranges past a gap (start to end), kept until the gap fills; made on the first such range, as
   * most writers' ranges arrive in order and every block holds one of these.
   */
  private TreeMap<Long, Long> ahead;

  /**
   * Counts bytes {@code start} to {@code end} as present (ranges may overlap).
   *
   * @return the bytes now present from 0 without a gap
   */
  public long add(long start, long end) {
    if (start > prefix) {
      if (ahead == null) {
        ahead = new TreeMap<>();
      }
      ahead.merge(start, end, Math::max);
      return prefix;
    }
    long upTo = Math.max(prefix, end);
    if (ahead != null) {
      for (Map.Entry<Long, Long> next = ahead.firstEntry();
          next != null && next.getKey() <= upTo;
          next = ahead.firstEntry()) {
        upTo = Math.max(upTo, next.getValue());
        ahead.pollFirstEntry();
      }
    }
    prefix = upTo;
    return prefix;
  }

  /** The bytes present from 0 without a gap. */
  public long prefix() {
    return prefix;
  }
}
