package io.ember.spark;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;
import org.apache.spark.shuffle.api.ShuffleMapOutputWriter;
import org.apache.spark.shuffle.api.ShufflePartitionWriter;
import org.apache.spark.shuffle.api.metadata.MapOutputCommitMessage;

/**
 * One map task's output in Ember, one file {@code <mapTaskId>.data}: the partitions one after
 * another (written through a buffered stream, so Ember operations stay large), then their offsets
 * and CRC32C checksums as a {@link ShuffleIndex} trailer. One file rather than data plus index
 * saves the map task a create and a close on the name node, and a reducer a lookup. Spark asks for
 * partitions in increasing order, each at most once. Every attempt of a map task has its own task
 * id, so only the attempt Spark registers is ever read.
 */
final class EmberMapOutputWriter implements ShuffleMapOutputWriter {
  private final EmberClient client;
  private final String base;
  private final int numPartitions;
  private final long[] lengths;
  private final long[] checksums;

  /**
   * The file, asked for when the writer is made: Spark's bypass-merge writer (most SQL shuffles)
   * makes it before it reads its first record, so the name node's answer and the first block's
   * allocation arrive while the task computes.
   */
  private final CompletableFuture<EmberOutputStream> creating;

  private EmberOutputStream data;
  private int lastPartition = -1;

  EmberMapOutputWriter(
      EmberClient client, String base, int numPartitions, StorageClass storageClass) {
    this.client = client;
    this.base = base;
    this.numPartitions = numPartitions;
    this.lengths = new long[numPartitions];
    this.checksums = new long[numPartitions];
    CRC32C empty = new CRC32C();
    java.util.Arrays.fill(checksums, empty.getValue());
    this.creating =
        client.createBufferedAsync(base + ShuffleIndex.DATA, new CreateOptions(storageClass, true));
  }

  private EmberOutputStream data() throws IOException {
    if (data == null) {
      data = Futures.await(creating);
    }
    return data;
  }

  @Override
  public ShufflePartitionWriter getPartitionWriter(int reducePartitionId) throws IOException {
    if (reducePartitionId <= lastPartition || reducePartitionId >= numPartitions) {
      throw new IllegalArgumentException(
          "partition "
              + reducePartitionId
              + " asked for after "
              + lastPartition
              + " (of "
              + numPartitions
              + ")");
    }
    lastPartition = reducePartitionId;
    return new PartitionWriter(reducePartitionId);
  }

  @Override
  public MapOutputCommitMessage commitAllPartitions(long[] sparkChecksums) throws IOException {
    long[] offsets = new long[numPartitions + 1];
    for (int p = 0; p < numPartitions; p++) {
      offsets[p + 1] = offsets[p] + lengths[p];
    }
    EmberOutputStream out = data();
    out.write(new ShuffleIndex(offsets, checksums).encodeTrailer());
    out.close();
    return MapOutputCommitMessage.of(lengths.clone());
  }

  @Override
  public void abort(Throwable error) {
    try {
      data().close();
    } catch (IOException ignored) {
      // the file is deleted next, if it was created
    }
    try {
      client.delete(base + ShuffleIndex.DATA, false);
    } catch (EmberException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        org.slf4j.LoggerFactory.getLogger(EmberMapOutputWriter.class)
            .warn("Ember shuffle: cannot delete {}: {}", base + ShuffleIndex.DATA, e.getMessage());
      }
    }
  }

  private final class PartitionWriter implements ShufflePartitionWriter {
    private final int partition;
    private long written;

    PartitionWriter(int partition) {
      this.partition = partition;
    }

    @Override
    public OutputStream openStream() throws IOException {
      EmberOutputStream out = data();
      CRC32C crc = new CRC32C();
      return new OutputStream() {
        private boolean closed;

        @Override
        public void write(int b) throws IOException {
          out.write(b);
          crc.update(b);
          written++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          out.write(b, off, len);
          crc.update(b, off, len);
          written += len;
        }

        @Override
        public void close() {
          // The data file stays open for the next partition; its length and checksum are final.
          if (!closed) {
            closed = true;
            lengths[partition] = written;
            checksums[partition] = crc.getValue();
          }
        }
      };
    }

    @Override
    public long getNumBytesWritten() {
      return written;
    }
  }
}
