package io.ember.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.shuffle.checksum.RowBasedChecksum;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.math.Ordering;

/**
 * What the Ember shuffle does differently on Spark 4.1: the one place where Spark's internal APIs
 * differ between the lines it is built for (each line has its own copy of this class, in {@code
 * line-X.Y}; everything else is shared).
 */
final class SparkLine {
  private SparkLine() {}

  /** A sorter of a reduce task's records by key, as Spark's own shuffle reader makes it. */
  static <K, C> ExternalSorter<K, C, C> sorterByKey(
      TaskContext context, Option<Ordering<K>> ordering, Serializer serializer) {
    // Spark 4.1 added row-based shuffle checksums (RowBasedChecksum) and gave ExternalSorter an
    // array of them to keep for the output it writes; a reader's sorter writes no shuffle output.
    return new ExternalSorter<>(
        context, Option.empty(), Option.empty(), ordering, serializer, new RowBasedChecksum[0]);
  }
}
