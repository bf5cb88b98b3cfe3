package io.ember.benchmarks.spark;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.FixedLengthInputFormat;
import org.apache.spark.api.java.JavaNewHadoopRDD;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.SerializableConfiguration;
import scala.Tuple2;

/**
 * TeraGen, TeraSort and TeraValidate as Spark jobs over any Hadoop file system, on Hadoop's
 * 100-byte record format ({@link TeraRecords}).
 */
public final class Tera {
  private Tera() {}

  /** Record count and order-independent checksum of a data set. */
  // Classes rather than records: Spark's Kryo cannot build records.
  public static final class Summary implements Serializable {
    private static final long serialVersionUID = 1L;
    private final long records;
    private final long checksum;

    public Summary(long records, long checksum) {
      this.records = records;
      this.checksum = checksum;
    }

    public long records() {
      return records;
    }

    public long checksum() {
      return checksum;
    }

    Summary plus(Summary o) {
      return new Summary(records + o.records, checksum + o.checksum);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Summary s && s.records == records && s.checksum == checksum;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(records) * 31 + Long.hashCode(checksum);
    }

    @Override
    public String toString() {
      return records + " records, checksum " + Long.toHexString(checksum);
    }
  }

  /** TeraValidate's answer: whether the output is the input, sorted, and why not. */
  public record Verdict(boolean ok, String detail) implements Serializable {}

  /**
   * Writes {@code records} rows as {@code partitions} files {@code part-NNNNN} under output.
   *
   * @return the records' count and checksum, for TeraValidate
   * @throws IllegalArgumentException when records or partitions is not positive
   */
  public static Summary generate(
      JavaSparkContext sc, String output, long records, int partitions, long seed) {
    if (records <= 0 || partitions <= 0) {
      throw new IllegalArgumentException("records and partitions must be positive");
    }
    List<Integer> ids =
        LongStream.range(0, partitions).mapToObj(i -> (int) i).collect(Collectors.toList());
    SerializableConfiguration conf = new SerializableConfiguration(sc.hadoopConfiguration());
    return sc.parallelize(ids, partitions)
        .map(
            p -> {
              long first = records * p / partitions;
              long end = records * (p + 1) / partitions;
              Path file = new Path(output, String.format("part-%05d", p));
              byte[] buf = new byte[TeraRecords.RECORD * 10_000];
              SplittableRandom rng = TeraRecords.randomFrom(seed, first);
              CRC32C crc = new CRC32C();
              long checksum = 0;
              // A retried task overwrites what a failed attempt left.
              try (OutputStream out = file.getFileSystem(conf.value()).create(file, true)) {
                long row = first;
                while (row < end) {
                  int n = (int) Math.min(10_000, end - row);
                  for (int i = 0; i < n; i++) {
                    TeraRecords.generate(buf, i * TeraRecords.RECORD, row + i, rng);
                    checksum += TeraRecords.checksum(crc, buf, i * TeraRecords.RECORD);
                  }
                  out.write(buf, 0, n * TeraRecords.RECORD);
                  row += n;
                }
              }
              return new Summary(end - first, checksum);
            })
        .reduce(Summary::plus);
  }

  /**
   * Sorts the records under input by key into {@code partitions} files under output.
   *
   * @throws IOException when the input cannot be sampled
   */
  public static void sort(JavaSparkContext sc, String input, String output, int partitions)
      throws IOException {
    Configuration conf = inputConf(sc, 128L << 20);
    TeraPartitioner partitioner = new TeraPartitioner(sample(conf, input, 10, 10_000), partitions);
    JavaPairRDD<LongWritable, BytesWritable> in =
        sc.newAPIHadoopFile(
            input, FixedLengthInputFormat.class, LongWritable.class, BytesWritable.class, conf);
    in.mapToPair(
            r -> {
              // The reader reuses its buffer: copy the value out.
              byte[] record = r._2.getBytes();
              return new Tuple2<>(
                  TeraKey.of(record, 0),
                  Arrays.copyOfRange(record, TeraRecords.KEY, TeraRecords.RECORD));
            })
        .repartitionAndSortWithinPartitions(partitioner, TeraKey.ORDER)
        .mapToPair(
            r -> {
              byte[] record = new byte[TeraRecords.RECORD];
              r._1.writeTo(record, 0);
              System.arraycopy(r._2, 0, record, TeraRecords.KEY, r._2.length);
              return new Tuple2<>(NullWritable.get(), new BytesWritable(record));
            })
        .saveAsNewAPIHadoopFile(
            output, NullWritable.class, BytesWritable.class, RawRecordOutputFormat.class, conf);
  }

  /** What TeraValidate learns from one file of sorted output. */
  private static final class FilePart implements Serializable {
    private static final long serialVersionUID = 1L;
    final String file;
    final long records;
    final long checksum;
    final long outOfOrder;
    final byte[] firstKey;
    final byte[] lastKey;

    FilePart(
        String file,
        long records,
        long checksum,
        long outOfOrder,
        byte[] firstKey,
        byte[] lastKey) {
      this.file = file;
      this.records = records;
      this.checksum = checksum;
      this.outOfOrder = outOfOrder;
      this.firstKey = firstKey;
      this.lastKey = lastKey;
    }
  }

  /** Checks that the files under output, in name order, hold the expected records sorted by key. */
  public static Verdict validate(JavaSparkContext sc, String output, Summary expected) {
    // One split per file, so each task sees one whole file in order.
    Configuration conf = inputConf(sc, Long.MAX_VALUE);
    JavaNewHadoopRDD<LongWritable, BytesWritable> in =
        (JavaNewHadoopRDD<LongWritable, BytesWritable>)
            sc.newAPIHadoopFile(
                output,
                FixedLengthInputFormat.class,
                LongWritable.class,
                BytesWritable.class,
                conf);
    List<FilePart> parts =
        new ArrayList<>(
            in.mapPartitionsWithInputSplit(
                    (split, it) -> {
                      long n = 0;
                      long checksum = 0;
                      long outOfOrder = 0;
                      byte[] first = null;
                      byte[] previous = new byte[TeraRecords.KEY];
                      CRC32C crc = new CRC32C();
                      while (it.hasNext()) {
                        byte[] record = it.next()._2.getBytes();
                        checksum += TeraRecords.checksum(crc, record, 0);
                        if (first == null) {
                          first = Arrays.copyOf(record, TeraRecords.KEY);
                        } else if (TeraRecords.compareKeys(previous, 0, record, 0) > 0) {
                          outOfOrder++;
                        }
                        System.arraycopy(record, 0, previous, 0, TeraRecords.KEY);
                        n++;
                      }
                      FilePart part =
                          new FilePart(
                              ((FileSplit) split).getPath().getName(),
                              n,
                              checksum,
                              outOfOrder,
                              first,
                              n == 0 ? null : previous);
                      return List.of(part).iterator();
                    },
                    true)
                .collect());
    parts.sort(Comparator.comparing(p -> p.file));
    Summary found = new Summary(0, 0);
    byte[] lastKey = null;
    String lastFile = null;
    for (FilePart p : parts) {
      if (p.outOfOrder > 0) {
        return new Verdict(false, p.file + " has " + p.outOfOrder + " records out of order");
      }
      if (p.records > 0) {
        if (lastKey != null && TeraRecords.compareKeys(lastKey, 0, p.firstKey, 0) > 0) {
          return new Verdict(false, p.file + " starts below the end of " + lastFile);
        }
        lastKey = p.lastKey;
        lastFile = p.file;
      }
      found = found.plus(new Summary(p.records, p.checksum));
    }
    if (found.records() != expected.records()) {
      return new Verdict(
          false, "expected " + expected.records() + " records, found " + found.records());
    }
    if (found.checksum() != expected.checksum()) {
      return new Verdict(
          false,
          "the records' checksum differs from the input's: the same count"
              + " of records, but not the same records");
    }
    return new Verdict(
        true, found.records() + " records in " + parts.size() + " files, sorted, checksum matches");
  }

  /** The input's count and checksum, for data TeraGen did not just write. */
  public static Summary summarize(JavaSparkContext sc, String input) {
    Configuration conf = inputConf(sc, 128L << 20);
    return sc.newAPIHadoopFile(
            input, FixedLengthInputFormat.class, LongWritable.class, BytesWritable.class, conf)
        .mapPartitions(
            records -> {
              CRC32C crc = new CRC32C();
              long n = 0;
              long checksum = 0;
              while (records.hasNext()) {
                checksum += TeraRecords.checksum(crc, records.next()._2.getBytes(), 0);
                n++;
              }
              return List.of(new Summary(n, checksum)).iterator();
            })
        .fold(new Summary(0, 0), Summary::plus);
  }

  private static Configuration inputConf(JavaSparkContext sc, long minSplit) {
    Configuration conf = new Configuration(sc.hadoopConfiguration());
    FixedLengthInputFormat.setRecordLength(conf, TeraRecords.RECORD);
    conf.setLong(FileInputFormat.SPLIT_MINSIZE, minSplit);
    return conf;
  }

  /** Keys from the front of up to {@code files} input files, {@code perFile} from each. */
  static List<TeraKey> sample(Configuration conf, String input, int files, int perFile)
      throws IOException {
    Path dir = new Path(input);
    FileSystem fs = dir.getFileSystem(conf);
    FileStatus[] all =
        fs.listStatus(dir, p -> !p.getName().startsWith("_") && !p.getName().startsWith("."));
    Arrays.sort(all, Comparator.comparing(s -> s.getPath().getName()));
    List<TeraKey> keys = new ArrayList<>();
    byte[] record = new byte[TeraRecords.RECORD];
    for (int f = 0; f < all.length && f < files; f++) {
      try (DataInputStream in = new DataInputStream(fs.open(all[f].getPath()))) {
        for (int i = 0; i < perFile; i++) {
          try {
            in.readFully(record);
          } catch (EOFException end) {
            break;
          }
          keys.add(TeraKey.of(record, 0));
        }
      }
    }
    if (keys.isEmpty()) {
      throw new IOException("no records to sample under " + input);
    }
    return keys;
  }
}
