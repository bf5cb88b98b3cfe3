package io.ember.hadoop;

import io.ember.client.EmberOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.StreamStatisticNames;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsBinding;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;

/**
 * An Ember output stream with Hadoop's IOStatistics. It claims neither hflush nor hsync: flush()
 * gets every byte to its data node, but readers see the file only once it is closed.
 */
final class EmberFsOutputStream extends OutputStream
    implements StreamCapabilities, IOStatisticsSource {
  private final EmberOutputStream out;
  private final IOStatisticsStore ioStatistics =
      IOStatisticsBinding.iostatisticsStore()
          .withCounters(
              StreamStatisticNames.STREAM_WRITE_BYTES, StreamStatisticNames.STREAM_WRITE_EXCEPTIONS)
          .build();

  EmberFsOutputStream(EmberOutputStream out) {
    this.out = out;
  }

  @Override
  public void write(int b) throws IOException {
    try {
      out.write(b);
    } catch (IOException e) {
      ioStatistics.incrementCounter(StreamStatisticNames.STREAM_WRITE_EXCEPTIONS);
      throw e;
    }
    ioStatistics.incrementCounter(StreamStatisticNames.STREAM_WRITE_BYTES);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    try {
      out.write(b, off, len);
    } catch (IOException e) {
      ioStatistics.incrementCounter(StreamStatisticNames.STREAM_WRITE_EXCEPTIONS);
      throw e;
    }
    ioStatistics.incrementCounter(StreamStatisticNames.STREAM_WRITE_BYTES, len);
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }

  @Override
  public void close() throws IOException {
    out.close();
  }

  @Override
  public boolean hasCapability(String capability) {
    return capability.equalsIgnoreCase(StreamCapabilities.IOSTATISTICS);
  }

  @Override
  public IOStatistics getIOStatistics() {
    return ioStatistics;
  }
}
