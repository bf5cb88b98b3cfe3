package io.ember.benchmarks.spark;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.Partitioner;

/**
 * Sends each key to the range it falls in, between split points sampled from the input (as Hadoop's
 * TeraSort does), so the sorted output is the partitions concatenated in order.
 */
public final class TeraPartitioner extends Partitioner {
  private static final long serialVersionUID = 1L;

  private final TeraKey[] splits;

  /**
   * @param sample keys read from the input, in any order
   * @param partitions how many ranges to cut the key space into
   * @throws IllegalArgumentException when partitions is less than 1
   */
  public TeraPartitioner(List<TeraKey> sample, int partitions) {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be at least 1, got " + partitions);
    }
    TeraKey[] sorted = sample.toArray(new TeraKey[0]);
    Arrays.sort(sorted);
    splits = new TeraKey[sorted.length == 0 ? 0 : partitions - 1];
    for (int i = 0; i < splits.length; i++) {
      splits[i] = sorted[(int) ((long) (i + 1) * sorted.length / partitions)];
    }
  }

  @Override
  public int numPartitions() {
    return splits.length + 1;
  }

  @Override
  public int getPartition(Object key) {
    int at = Arrays.binarySearch(splits, (TeraKey) key);
    // Keys equal to a split point go to the range above it.
    return at >= 0 ? at + 1 : -at - 1;
  }
}
