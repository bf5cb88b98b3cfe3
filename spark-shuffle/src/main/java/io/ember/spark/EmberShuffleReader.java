package io.ember.spark;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.protocol.EmberException;
import io.ember.protocol.Paths;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.zip.CRC32C;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.FetchFailedException;
import org.apache.spark.shuffle.ShuffleDataIOUtils;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.checksum.RowBasedChecksum;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.Product2;
import scala.Tuple2;
import scala.Tuple3;
import scala.jdk.javaapi.CollectionConverters;

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

  EmberShuffleReader(BaseShuffleHandle<K, ?, C> handle, int startMapIndex, int endMapIndex,
      int startPartition, int endPartition, TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    this.handle = handle;
    this.startMapIndex = startMapIndex;
    this.endMapIndex = endMapIndex;
    this.startPartition = startPartition;
    this.endPartition = endPartition;
    this.context = context;
    this.metrics = metrics;
  }

  /** One partition of one map output to read. */
  private record Segment(BlockManagerId location, ShuffleBlockId block, int mapIndex) {}

  @Override
  @SuppressWarnings("unchecked")
  public scala.collection.Iterator<Product2<K, C>> read() {
    SparkEnv env = SparkEnv.get();
    ShuffleDependency<K, ?, C> dep = handle.dependency();
    int shuffleId = dep.shuffleId();
    List<Segment> segments = new ArrayList<>();
    scala.collection.Iterator<Tuple2<BlockManagerId,
        scala.collection.Seq<Tuple3<BlockId, Object, Object>>>> byLocation =
        env.mapOutputTracker().getMapSizesByExecutorId(shuffleId, startMapIndex, endMapIndex,
            startPartition, endPartition);
    while (byLocation.hasNext()) {
      Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>> e =
          byLocation.next();
      scala.collection.Iterator<Tuple3<BlockId, Object, Object>> blocks = e._2().iterator();
      while (blocks.hasNext()) {
        Tuple3<BlockId, Object, Object> b = blocks.next();
        segments.add(new Segment(e._1(), (ShuffleBlockId) b._1(), (Integer) b._3()));
      }
    }
    String root = env.conf().get(ShuffleDataIOUtils.SHUFFLE_SPARK_CONF_PREFIX()
        + EmberShuffleDataIO.ROOT_KEY);
    EmberClient client;
    try {
      client = EmberShuffleConf.client(env.conf());
    } catch (EmberException e) {
      throw new IllegalStateException("Ember shuffle: " + e.getMessage(), e);
    }
    SerializerInstance serializer = dep.serializer().newInstance();
    Iterator<Product2<Object, Object>> records =
        new RecordIterator(client, EmberShuffleDataIO.shuffleDir(root, shuffleId), segments,
            serializer);
    scala.collection.Iterator<Product2<K, C>> it =
        new InterruptibleIterator<>(context,
            (scala.collection.Iterator) CollectionConverters.asScala(records));
    if (dep.aggregator().isDefined()) {
      it = dep.mapSideCombine()
          ? (scala.collection.Iterator) dep.aggregator().get()
              .combineCombinersByKey((scala.collection.Iterator) it, context)
          : (scala.collection.Iterator) dep.aggregator().get()
              .combineValuesByKey((scala.collection.Iterator) it, context);
    }
    if (dep.keyOrdering().isDefined()) {
      ExternalSorter<K, C, C> sorter = new ExternalSorter<>(context, Option.empty(),
          Option.empty(), dep.keyOrdering(), dep.serializer(), new RowBasedChecksum[0]);
      it = sorter.insertAllAndUpdateMetrics((scala.collection.Iterator) it);
    }
    return it instanceof InterruptibleIterator ? it : new InterruptibleIterator<>(context, it);
  }

  /** Records of the segments, one segment at a time. */
  private final class RecordIterator implements Iterator<Product2<Object, Object>> {
    private final EmberClient client;
    private final String dir;
    private final List<Segment> segments;
    private final SerializerInstance serializer;
    private final Map<Long, ShuffleIndex> indexes = new HashMap<>();
    private int next;
    private scala.collection.Iterator<Tuple2<Object, Object>> current;
    private boolean merged;

    RecordIterator(EmberClient client, String dir, List<Segment> segments,
        SerializerInstance serializer) {
      this.client = client;
      this.dir = dir;
      this.segments = segments;
      this.serializer = serializer;
    }

    @Override
    public boolean hasNext() {
      while (current == null || !current.hasNext()) {
        if (next >= segments.size()) {
          if (!merged) {
            merged = true;
            context.taskMetrics().mergeShuffleReadMetrics();
          }
          return false;
        }
        current = open(nextRun());
      }
      return true;
    }

    /** The next segments that are consecutive partitions of one map output. */
    private List<Segment> nextRun() {
      List<Segment> run = new ArrayList<>();
      run.add(segments.get(next++));
      while (next < segments.size()) {
        ShuffleBlockId last = run.get(run.size() - 1).block();
        ShuffleBlockId candidate = segments.get(next).block();
        if (candidate.mapId() != last.mapId() || candidate.reduceId() != last.reduceId() + 1) {
          break;
        }
        run.add(segments.get(next++));
      }
      return run;
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
     * Reads a run of segments: consecutive partitions of one map output, which lie side by side
     * in its data file, so one read serves them all (a coalesced reduce task asks for many).
     * Each partition is still checked against its own checksum and read as its own stream.
     */
    private scala.collection.Iterator<Tuple2<Object, Object>> open(List<Segment> run) {
      Segment first = run.get(0);
      ShuffleBlockId id = first.block();
      try {
        long t0 = System.nanoTime();
        ShuffleIndex index = indexes.get(id.mapId());
        if (index == null) {
          index = ShuffleIndex.decode(readAll(Paths.child(dir, id.mapId() + ShuffleIndex.INDEX)));
          indexes.put(id.mapId(), index);
        }
        int lastPartition = run.get(run.size() - 1).block().reduceId();
        if (lastPartition >= index.partitions()) {
          throw new IOException("map output " + id.mapId() + " has " + index.partitions()
              + " partitions, not " + (lastPartition + 1));
        }
        long from = index.offsets()[id.reduceId()];
        int len = Math.toIntExact(index.offsets()[lastPartition + 1] - from);
        byte[] bytes = new byte[len];
        try (EmberInputStream in = client.open(Paths.child(dir, id.mapId() + ShuffleIndex.DATA))) {
          in.readFully(from, bytes, 0, len);
        }
        List<scala.collection.Iterator<Tuple2<Object, Object>>> parts = new ArrayList<>();
        for (Segment s : run) {
          int p = s.block().reduceId();
          int offset = (int) (index.offsets()[p] - from);
          int size = (int) (index.offsets()[p + 1] - index.offsets()[p]);
          CRC32C crc = new CRC32C();
          crc.update(bytes, offset, size);
          if (crc.getValue() != index.checksums()[p]) {
            throw new IOException("checksum mismatch in partition " + p + " of map output "
                + id.mapId() + ": the bytes read are not the bytes written");
          }
          InputStream wrapped = SparkEnv.get().serializerManager().wrapStream(s.block(),
              new ByteArrayInputStream(bytes, offset, size));
          parts.add(serializer.deserializeStream(wrapped).asKeyValueIterator());
        }
        metrics.incFetchWaitTime((System.nanoTime() - t0) / 1_000_000);
        metrics.incRemoteBlocksFetched(run.size());
        metrics.incRemoteBytesRead(len);
        return CollectionConverters.asScala(new Iterator<Tuple2<Object, Object>>() {
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
        throw unchecked(new FetchFailedException(first.location(), id.shuffleId(), id.mapId(),
            first.mapIndex(), id.reduceId(), "Ember shuffle: cannot read partitions "
                + id.reduceId() + "-" + run.get(run.size() - 1).block().reduceId()
                + " of map output " + id.mapId() + ": " + e.getMessage(), e));
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

    private byte[] readAll(String path) throws IOException {
      try (InputStream in = client.open(path)) {
        return in.readAllBytes();
      }
    }
  }
}
