package io.ember.spark;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.protocol.EmberException;
import io.ember.protocol.Futures;
import io.ember.protocol.Paths;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.FetchFailedException;
import org.apache.spark.shuffle.ShuffleDataIOUtils;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Product2;
import scala.Tuple2;
import scala.Tuple3;

/**
 * Reads a reduce task's input straight from Ember: for each map output in the asked range of map
 * indexes and partitions (as the map output tracker lists them, so adaptive execution's coalesced
 * and split reads work), the partition's bytes are read, checked against their CRC32C, and
 * deserialized. Then, as Spark's own reader does, records are combined and sorted when the
 * dependency asks. Bytes that cannot be read or do not match their checksum fail the task with a
 * {@link FetchFailedException}, so Spark recomputes the map output instead of using it.
 */
final class EmberShuffleReader<K, C> implements ShuffleReader<K, C> {
  private final BaseShuffleHandle<K, ?, C> handle;
  private final int startMapIndex;
  private final int endMapIndex;
  private final int startPartition;
  private final int endPartition;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter metrics;

  EmberShuffleReader(
      BaseShuffleHandle<K, ?, C> handle,
      int startMapIndex,
      int endMapIndex,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    this.handle = handle;
    this.startMapIndex = startMapIndex;
    this.endMapIndex = endMapIndex;
    this.startPartition = startPartition;
    this.endPartition = endPartition;
    this.context = context;
    this.metrics = metrics;
  }

  /** One partition of one map output to read, of the size its map task reported. */
  private record Segment(BlockManagerId location, ShuffleBlockId block, long size, int mapIndex) {}

  @Override
  @SuppressWarnings("unchecked")
  public scala.collection.Iterator<Product2<K, C>> read() {
    SparkEnv env = SparkEnv.get();
    ShuffleDependency<K, ?, C> dep = handle.dependency();
    int shuffleId = dep.shuffleId();
    List<Segment> segments = new ArrayList<>();
    scala.collection.Iterator<
            Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>>>
        byLocation =
            env.mapOutputTracker()
                .getMapSizesByExecutorId(
                    shuffleId, startMapIndex, endMapIndex, startPartition, endPartition);
    while (byLocation.hasNext()) {
      Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>> e =
          byLocation.next();
      scala.collection.Iterator<Tuple3<BlockId, Object, Object>> blocks = e._2().iterator();
      while (blocks.hasNext()) {
        Tuple3<BlockId, Object, Object> b = blocks.next();
        segments.add(new Segment(e._1(), (ShuffleBlockId) b._1(), (Long) b._2(), (Integer) b._3()));
      }
    }
    String root =
        env.conf()
            .get(ShuffleDataIOUtils.SHUFFLE_SPARK_CONF_PREFIX() + EmberShuffleDataIO.ROOT_KEY);
    EmberClient client;
    try {
      client = EmberShuffleConf.client(env.conf());
    } catch (EmberException e) {
      throw new IllegalStateException("Ember shuffle: " + e.getMessage(), e);
    }
    SerializerInstance serializer = dep.serializer().newInstance();
    Iterator<Product2<Object, Object>> records =
        new RecordIterator(
            client,
            EmberShuffleDataIO.shuffleDir(root, shuffleId),
            dep.partitioner().numPartitions(),
            segments,
            serializer,
            env.conf().getSizeAsBytes("spark.reducer.maxSizeInFlight", "48m"),
            concatenable(dep, env.conf()));
    scala.collection.Iterator<Product2<K, C>> it =
        new InterruptibleIterator<>(context, (scala.collection.Iterator) ScalaIterator.of(records));
    if (dep.aggregator().isDefined()) {
      it =
          dep.mapSideCombine()
              ? dep.aggregator()
                  .get()
                  .combineCombinersByKey((scala.collection.Iterator) it, context)
              : dep.aggregator().get().combineValuesByKey((scala.collection.Iterator) it, context);
    }
    if (dep.keyOrdering().isDefined()) {
      ExternalSorter<K, C, C> sorter =
          SparkLine.sorterByKey(context, dep.keyOrdering(), dep.serializer());
      it = sorter.insertAllAndUpdateMetrics((scala.collection.Iterator) it);
    }
    return it instanceof InterruptibleIterator ? it : new InterruptibleIterator<>(context, it);
  }

  /**
   * Whether adjacent partitions' bytes read as one stream: the conditions under which Spark's own
   * reader fetches a coalesced range of partitions as one batch. Reading a run of a hundred
   * partitions as one stream saves a decompressor and a deserializer per partition.
   */
  private static boolean concatenable(ShuffleDependency<?, ?, ?> dep, SparkConf conf) {
    boolean compressed = conf.getBoolean("spark.shuffle.compress", true);
    boolean codecConcatenates =
        !compressed
            || CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(
                CompressionCodec$.MODULE$.createCodec(conf));
    return dep.serializer().supportsRelocationOfSerializedObjects()
        && codecConcatenates
        && !conf.getBoolean("spark.io.encryption.enabled", false);
  }

  /**
   * Records of the segments, a run of them at a time. Runs are fetched ahead of use, up to Spark's
   * {@code spark.reducer.maxSizeInFlight} bytes at once, so that a reduce task reading many small
   * map outputs waits for one round trip's worth of them rather than for each in turn.
   */
  private final class RecordIterator implements Iterator<Product2<Object, Object>> {
    /** Runs in flight at most, however small: each holds two open files on the way. */
    private static final int MAX_RUNS_IN_FLIGHT = 64;

    /**
     * Bytes beyond a task's runs worth reading to save a round trip: a reducer wanting half of a
     * large file must not read it all (and wait for all of it before its first record).
     */
    private static final long WHOLE_READ_SLACK = 256 << 10;

    private final EmberClient client;
    private final String dir;
    private final List<List<Segment>> runs;
    private final SerializerInstance serializer;
    private final long maxBytesInFlight;
    private final int partitions;
    private final boolean concatenable;
    private final Map<Long, CompletableFuture<MapOutput>> outputs = new HashMap<>();

    /** Per map output: the runs this task reads of it, and their bytes as Spark reported them. */
    private final Map<Long, Integer> runsOf = new HashMap<>();

    private final Map<Long, Long> wanted = new HashMap<>();
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private int issued;
    private long bytesInFlight;
    private scala.collection.Iterator<Tuple2<Object, Object>> current;
    private boolean merged;

    /** A run's fetch under way, and the bytes it counts against the window. */
    private record Pending(List<Segment> run, long size, CompletableFuture<Fetched> data) {}

    /**
     * A run's bytes: partitions {@code run}'s first to last, in {@code bytes} (which starts at byte
     * {@code from} of the file, and holds the whole file when it was read whole).
     */
    private static final class Fetched {
      final ShuffleIndex index;
      final long from;
      final byte[] bytes;

      Fetched(ShuffleIndex index, long from, byte[] bytes) {
        this.index = index;
        this.from = from;
        this.bytes = bytes;
      }

      /** Where partition {@code p} starts in {@code bytes}. */
      int offsetOf(int p) {
        return (int) (index.offset(p) - from);
      }

      /** Bytes of partitions {@code first} to {@code last}. */
      int sizeOf(int first, int last) {
        return (int) (index.offset(last + 1) - index.offset(first));
      }
    }

    /** A map output's file, open, and its index; {@code whole} is all of it, if it was read. */
    private static final class MapOutput {
      final EmberInputStream in;
      final ShuffleIndex index;
      final byte[] whole;
      final AtomicInteger runsLeft;

      MapOutput(EmberInputStream in, ShuffleIndex index, byte[] whole, AtomicInteger runsLeft) {
        this.in = in;
        this.index = index;
        this.whole = whole;
        this.runsLeft = runsLeft;
      }
    }

    RecordIterator(
        EmberClient client,
        String dir,
        int partitions,
        List<Segment> segments,
        SerializerInstance serializer,
        long maxBytesInFlight,
        boolean concatenable) {
      this.client = client;
      this.concatenable = concatenable;
      this.dir = dir;
      this.partitions = partitions;
      this.runs = runs(segments);
      for (List<Segment> run : runs) {
        long mapId = run.get(0).block().mapId();
        runsOf.merge(mapId, 1, Integer::sum);
        wanted.merge(mapId, run.stream().mapToLong(Segment::size).sum(), Long::sum);
      }
      this.serializer = serializer;
      this.maxBytesInFlight = maxBytesInFlight;
    }

    @Override
    public boolean hasNext() {
      while (current == null || !current.hasNext()) {
        fetchAhead();
        if (pending.isEmpty()) {
          if (!merged) {
            merged = true;
            context.taskMetrics().mergeShuffleReadMetrics();
          }
          return false;
        }
        current = open(pending.poll());
      }
      return true;
    }

    /**
     * The segments grouped into runs of consecutive partitions of one map output, which lie side by
     * side in its data file, so one read serves each run (a coalesced reduce task asks for many).
     */
    private static List<List<Segment>> runs(List<Segment> segments) {
      List<List<Segment>> runs = new ArrayList<>();
      List<Segment> run = null;
      for (Segment s : segments) {
        ShuffleBlockId last = run == null ? null : run.get(run.size() - 1).block();
        if (last == null
            || s.block().mapId() != last.mapId()
            || s.block().reduceId() != last.reduceId() + 1) {
          run = new ArrayList<>();
          runs.add(run);
        }
        run.add(s);
      }
      return runs;
    }

    /** Starts fetching runs until the window is full; at least one when none is in flight. */
    private void fetchAhead() {
      while (issued < runs.size() && pending.size() < MAX_RUNS_IN_FLIGHT) {
        List<Segment> run = runs.get(issued);
        long size = run.stream().mapToLong(Segment::size).sum();
        if (!pending.isEmpty() && bytesInFlight + size > maxBytesInFlight) {
          return;
        }
        issued++;
        bytesInFlight += size;
        pending.add(new Pending(run, size, fetch(run)));
      }
    }

    @Override
    public Product2<Object, Object> next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      metrics.incRecordsRead(1);
      return current.next();
    }

    /**
     * Opens a map output's file and reads its trailer, once per map output. A file is read whole
     * instead, saving each of its runs a round trip, when that costs at most {@link
     * #WHOLE_READ_SLACK} bytes more than the runs (as Spark reported their sizes).
     */
    private CompletableFuture<MapOutput> output(long mapId) {
      return outputs.computeIfAbsent(
          mapId,
          id ->
              client
                  .openAsync(Paths.child(dir, id + ShuffleIndex.DATA))
                  .thenCompose(
                      in -> {
                        long length = in.length();
                        long trailer = ShuffleIndex.trailerSize(partitions);
                        if (length < trailer) {
                          throw new CompletionException(
                              new IOException(
                                  "map output "
                                      + id
                                      + " is "
                                      + length
                                      + " bytes, too short for its index of "
                                      + partitions
                                      + " partitions"));
                        }
                        boolean whole = length <= wanted.get(id) + WHOLE_READ_SLACK;
                        long from = whole ? 0 : length - trailer;
                        byte[] bytes = new byte[Math.toIntExact(length - from)];
                        return readFully(in, from, bytes)
                            .thenApply(
                                v -> {
                                  ShuffleIndex ix;
                                  try {
                                    ix = ShuffleIndex.decodeTrailer(bytes);
                                  } catch (IOException e) {
                                    throw new CompletionException(e);
                                  }
                                  if (ix.partitions() != partitions
                                      || ix.offset(partitions) + trailer != length) {
                                    throw new CompletionException(
                                        new IOException(
                                            "map output "
                                                + id
                                                + " has an index of "
                                                + ix.partitions()
                                                + " partitions ending at byte "
                                                + ix.offset(ix.partitions())
                                                + ", not of "
                                                + partitions
                                                + " ending at "
                                                + (length - trailer)));
                                  }
                                  return new MapOutput(
                                      in,
                                      ix,
                                      whole ? bytes : null,
                                      new AtomicInteger(runsOf.get(id)));
                                });
                      }));
    }

    /** Reads a run's bytes, opening its map output first if no run has yet; without waiting. */
    private CompletableFuture<Fetched> fetch(List<Segment> run) {
      ShuffleBlockId id = run.get(0).block();
      int lastPartition = run.get(run.size() - 1).block().reduceId();
      CompletableFuture<MapOutput> output = output(id.mapId());
      CompletableFuture<Fetched> fetched =
          output.thenCompose(
              out -> {
                ShuffleIndex ix = out.index;
                if (out.whole != null) {
                  return CompletableFuture.completedFuture(new Fetched(ix, 0, out.whole));
                }
                long from = ix.offset(id.reduceId());
                byte[] bytes = new byte[Math.toIntExact(ix.offset(lastPartition + 1) - from)];
                return readFully(out.in, from, bytes).thenApply(v -> new Fetched(ix, from, bytes));
              });
      // The file closes once its last run here is read. A task that stops early leaves it to the
      // garbage collector, which is harmless: positioned reads hold no buffers. The output is
      // complete by then (fetched follows it); when it failed, no file was opened.
      return fetched.whenComplete(
          (f, e) -> {
            MapOutput out = output.isCompletedExceptionally() ? null : output.getNow(null);
            if (out != null && out.runsLeft.decrementAndGet() == 0) {
              out.in.close();
            }
          });
    }

    private CompletableFuture<Void> readFully(EmberInputStream in, long from, byte[] bytes) {
      if (bytes.length == 0) {
        return CompletableFuture.completedFuture(null);
      }
      return in.readAsync(from, ByteBuffer.wrap(bytes))
          .thenAccept(
              n -> {
                if (n != bytes.length) {
                  throw new CompletionException(
                      new IOException(
                          "read "
                              + n
                              + " of "
                              + bytes.length
                              + " bytes at "
                              + from
                              + " of "
                              + in.path()));
                }
              });
    }

    /**
     * Takes a fetched run: waits for its bytes, checks each partition against its own checksum, and
     * reads the run as one stream when its partitions' streams concatenate (else each as its own).
     */
    private scala.collection.Iterator<Tuple2<Object, Object>> open(Pending next) {
      List<Segment> run = next.run();
      Segment first = run.get(0);
      ShuffleBlockId id = first.block();
      try {
        long t0 = System.nanoTime();
        Fetched f;
        try {
          f = Futures.await(next.data());
        } finally {
          bytesInFlight -= next.size();
          metrics.incFetchWaitTime((System.nanoTime() - t0) / 1_000_000);
        }
        fetchAhead();
        // Every partition is checked before any of its records is passed on.
        for (Segment s : run) {
          int p = s.block().reduceId();
          CRC32C crc = new CRC32C();
          crc.update(f.bytes, f.offsetOf(p), f.sizeOf(p, p));
          if (crc.getValue() != f.index.checksum(p)) {
            throw new IOException(
                "checksum mismatch in partition "
                    + p
                    + " of map output "
                    + id.mapId()
                    + ": the bytes read are not the bytes written");
          }
        }
        List<scala.collection.Iterator<Tuple2<Object, Object>>> parts = new ArrayList<>();
        List<List<Segment>> streams =
            concatenable ? List.of(run) : run.stream().map(List::of).toList();
        for (List<Segment> stream : streams) {
          int from = stream.get(0).block().reduceId();
          int to = stream.get(stream.size() - 1).block().reduceId();
          InputStream wrapped =
              SparkEnv.get()
                  .serializerManager()
                  .wrapStream(
                      stream.get(0).block(),
                      new ByteArrayInputStream(f.bytes, f.offsetOf(from), f.sizeOf(from, to)));
          parts.add(serializer.deserializeStream(wrapped).asKeyValueIterator());
        }
        metrics.incRemoteBlocksFetched(run.size());
        metrics.incRemoteBytesRead(
            f.sizeOf(id.reduceId(), run.get(run.size() - 1).block().reduceId()));
        return ScalaIterator.of(
            new Iterator<Tuple2<Object, Object>>() {
              private int at;

              @Override
              public boolean hasNext() {
                while (at < parts.size() && !parts.get(at).hasNext()) {
                  at++;
                }
                return at < parts.size();
              }

              @Override
              public Tuple2<Object, Object> next() {
                if (!hasNext()) {
                  throw new NoSuchElementException();
                }
                return parts.get(at).next();
              }
            });
      } catch (IOException | ArithmeticException e) {
        throw unchecked(
            new FetchFailedException(
                first.location(),
                id.shuffleId(),
                id.mapId(),
                first.mapIndex(),
                id.reduceId(),
                "Ember shuffle: cannot read partitions "
                    + id.reduceId()
                    + "-"
                    + run.get(run.size() - 1).block().reduceId()
                    + " of map output "
                    + id.mapId()
                    + ": "
                    + e.getMessage(),
                e));
      }
    }

    /**
     * Throws Spark's FetchFailedException from an Iterator method. It is a checked exception to
     * Java and not to Scala, and Spark's task runner recognises it by its type.
     */
    @SuppressWarnings("unchecked")
    private <E extends Throwable> RuntimeException unchecked(Throwable e) throws E {
      throw (E) e;
    }
  }
}
