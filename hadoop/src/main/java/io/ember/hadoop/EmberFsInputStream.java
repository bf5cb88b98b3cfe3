package io.ember.hadoop;

import io.ember.client.EmberInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.hadoop.fs.ByteBufferReadable;
import org.apache.hadoop.fs.CanUnbuffer;
import org.apache.hadoop.fs.FSExceptionMessages;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.StreamStatisticNames;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsBinding;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;

/**
 * An Ember input stream as Hadoop sees one: seekable, positioned reads, ByteBuffer reads, and
 * IOStatistics of bytes read, read operations and seeks.
 */
final class EmberFsInputStream extends FSInputStream
    implements ByteBufferReadable, CanUnbuffer, StreamCapabilities, IOStatisticsSource {
  private final EmberInputStream in;
  private final FileSystem.Statistics statistics;
  private final IOStatisticsStore ioStatistics =
      IOStatisticsBinding.iostatisticsStore()
          .withCounters(
              StreamStatisticNames.STREAM_READ_BYTES,
              StreamStatisticNames.STREAM_READ_OPERATIONS,
              StreamStatisticNames.STREAM_READ_SEEK_OPERATIONS)
          .build();
  private boolean closed;

  EmberFsInputStream(EmberInputStream in, FileSystem.Statistics statistics) {
    this.in = in;
    this.statistics = statistics;
  }

  @Override
  public void seek(long pos) throws IOException {
    checkOpen();
    if (pos < 0) {
      throw new EOFException(FSExceptionMessages.NEGATIVE_SEEK + ": " + pos);
    }
    if (pos > in.length()) {
      throw new EOFException(
          FSExceptionMessages.CANNOT_SEEK_PAST_EOF
              + ": "
              + pos
              + " > "
              + in.length()
              + " in "
              + in.path());
    }
    in.seek(pos);
    ioStatistics.incrementCounter(StreamStatisticNames.STREAM_READ_SEEK_OPERATIONS);
  }

  @Override
  public long getPos() {
    // A query, answered after close too (as HDFS does): callers log positions of closed streams.
    return in.position();
  }

  @Override
  public boolean seekToNewSource(long targetPos) {
    return false;
  }

  @Override
  public int read() throws IOException {
    checkOpen();
    int b = in.read();
    if (b >= 0) {
      count(1);
    }
    return b;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    checkOpen();
    int n = in.read(b, off, len);
    count(n);
    return n;
  }

  @Override
  public int read(ByteBuffer buf) throws IOException {
    checkOpen();
    int n = in.read(buf);
    count(n);
    return n;
  }

  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, buffer, offset, length);
    if (length == 0) {
      return 0;
    }
    int n = in.read(position, buffer, offset, length);
    count(n);
    return n;
  }

  @Override
  public void readFully(long position, byte[] buffer, int offset, int length) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, buffer, offset, length);
    if (length == 0) {
      return;
    }
    in.readFully(position, buffer, offset, length);
    count(length);
  }

  @Override
  public int available() throws IOException {
    checkOpen();
    long left = in.length() - in.position();
    return (int) Math.min(Integer.MAX_VALUE, Math.max(0, left));
  }

  @Override
  public long skip(long n) throws IOException {
    checkOpen();
    return in.skip(n);
  }

  @Override
  public boolean hasCapability(String capability) {
    return capability.equalsIgnoreCase(StreamCapabilities.READBYTEBUFFER)
        || capability.equalsIgnoreCase(StreamCapabilities.UNBUFFER)
        || capability.equalsIgnoreCase(StreamCapabilities.IOSTATISTICS);
  }

  @Override
  public void unbuffer() {
    if (!closed) {
      in.unbuffer();
    }
  }

  @Override
  public IOStatistics getIOStatistics() {
    return ioStatistics;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      in.close();
    }
  }

  private void count(int n) {
    if (n > 0) {
      ioStatistics.incrementCounter(StreamStatisticNames.STREAM_READ_BYTES, n);
      ioStatistics.incrementCounter(StreamStatisticNames.STREAM_READ_OPERATIONS);
      if (statistics != null) {
        statistics.incrementBytesRead(n);
        statistics.incrementReadOps(1);
      }
    }
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(FSExceptionMessages.STREAM_IS_CLOSED + ": " + in.path());
    }
  }
}
