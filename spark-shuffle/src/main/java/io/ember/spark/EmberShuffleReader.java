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
        current = open(segments.get(next++));
      }
      return true;
    }

    @Override
    public Product2<Object, Object> next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      metrics.incRecordsRead(1);
      return current.next();
    }

    private scala.collection.Iterator<Tuple2<Object, Object>> open(Segment s) {
      ShuffleBlockId id = s.block();
      try {
        long t0 = System.nanoTime();
        ShuffleIndex index = indexes.get(id.mapId());
        if (index == null) {
          index = ShuffleIndex.decode(readAll(Paths.child(dir, id.mapId() + ShuffleIndex.INDEX)));
          indexes.put(id.mapId(), index);
        }
        int p = id.reduceId();
        if (p >= index.partitions()) {
          throw new IOException("map output " + id.mapId() + " has " + index.partitions()
              + " partitions, not " + (p + 1));
        }
        long from = index.offsets()[p];
        int len = Math.toIntExact(index.offsets()[p + 1] - from);
        byte[] bytes = new byte[len];
        try (EmberInputStream in = client.open(Paths.child(dir, id.mapId() + ShuffleIndex.DATA))) {
          in.readFully(from, bytes, 0, len);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, len);
        if (crc.getValue() != index.checksums()[p]) {
          throw new IOException("checksum mismatch in partition " + p + " of map output "
              + id.mapId() + ": the bytes read are not the bytes written");
        }
        metrics.incFetchWaitTime((System.nanoTime() - t0) / 1_000_000);
        metrics.incRemoteBlocksFetched(1);
        metrics.incRemoteBytesRead(len);
        InputStream wrapped = SparkEnv.get().serializerManager().wrapStream(id,
            new ByteArrayInputStream(bytes));
        return serializer.deserializeStream(wrapped).asKeyValueIterator();
      } catch (IOException | ArithmeticException e) {
        throw unchecked(new FetchFailedException(s.location(), id.shuffleId(), id.mapId(),
            s.mapIndex(), id.reduceId(), "Ember shuffle: cannot read partition " + id.reduceId()
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
