package io.ember.benchmarks.spark;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/** Writes each value's bytes one after another, with nothing between: TeraSort's output. */
public final class RawRecordOutputFormat extends FileOutputFormat<NullWritable, BytesWritable> {
  @Override
  public RecordWriter<NullWritable, BytesWritable> getRecordWriter(TaskAttemptContext job)
      throws IOException {
    Path file = getDefaultWorkFile(job, "");
    // Records are 100 bytes; the file system sees 1 MiB writes.
    OutputStream out =
        new BufferedOutputStream(
            file.getFileSystem(job.getConfiguration()).create(file, false), 1 << 20);
    return new RecordWriter<>() {
      @Override
      public void write(NullWritable key, BytesWritable value) throws IOException {
        out.write(value.getBytes(), 0, value.getLength());
      }

      @Override
      public void close(TaskAttemptContext context) throws IOException {
        out.close();
      }
    };
  }
}
