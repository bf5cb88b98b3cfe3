package io.ember.benchmarks.nvmf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * The floor for {@link NvmfBenchmark}'s queued benchmarks: the same bytes as its QD32 and QD8
 * exchanges on one raw loopback connection, with as many requests in flight, kept full the same way
 * (each answer read sends the next request). One client thread and one server thread, blocking: a 4
 * KiB read is a 72-byte request and a 4 KiB + 24 answer; a write is 4 KiB + 72 out, 24 back.
 */
@State(Scope.Benchmark)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class TcpStreamBenchmark {
  /** "read" (small request, big answer) or "write" (big request, small answer). */
  @Param({"read", "write"})
  public String shape;

  @Param({"4096", "131072"})
  public int size;

  /** Requests in flight; 0 means NvmfBenchmark's depth for the size: 32 for 4 KiB, 8 above. */
  @Param("0")
  public int depth;

  private ShapedEchoServer server;
  private SocketChannel client;
  private final Completions completions = new Completions();

  @Setup(Level.Trial)
  public void setup(BenchmarkParams params) throws IOException {
    if (params.getThreads() != 1) {
      throw new IllegalStateException("the stream runs on one thread (-t 1); raise the depth");
    }
    int reqLen = shape.equals("read") ? 72 : size + 72;
    int respLen = shape.equals("read") ? size + 24 : 24;
    int inFlight = depth > 0 ? depth : size <= 4096 ? 32 : 8;
    server = new ShapedEchoServer(reqLen, respLen, inFlight, "stream-server");
    client = server.connect();
    Thread pump =
        new Thread(
            () -> {
              try {
                ShapedEchoServer.writeFully(client, ByteBuffer.allocateDirect(reqLen * inFlight));
                ShapedEchoServer.answerEach(
                    client, respLen, reqLen, inFlight, completions::completed);
              } catch (IOException e) {
                if (client.isOpen()) {
                  completions.failed(e);
                }
              }
            },
            "stream-client");
    pump.setDaemon(true);
    pump.start();
  }

  @Setup(Level.Iteration)
  public void measureFromNow() {
    completions.skipToNow();
    ThreadCpuProfiler.iterationStarted();
  }

  @TearDown(Level.Iteration)
  public void readCpuClocks() {
    ThreadCpuProfiler.iterationEnded();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    client.close();
    server.close();
  }

  @Benchmark
  @OperationsPerInvocation(NvmfBenchmark.BATCH)
  public void stream() throws Exception {
    completions.await(NvmfBenchmark.BATCH);
  }
}
