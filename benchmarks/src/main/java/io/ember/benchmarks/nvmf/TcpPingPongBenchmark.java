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
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The transport floor for {@link NvmfBenchmark}: a plain blocking TCP ping-pong on loopback with
 * the same message sizes as an NVMe/TCP exchange. A 4 KiB read is a 72-byte command out and 4 KiB +
 * 24 back; a 4 KiB write is 4 KiB + 72 out and a 24-byte response back; likewise for 128 KiB.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class TcpPingPongBenchmark {
  /** "read" (small request, big answer) or "write" (big request, small answer). */
  @Param({"read", "write"})
  public String shape;

  @Param({"4096", "131072"})
  public int size;

  private ShapedEchoServer server;
  private SocketChannel client;
  private ByteBuffer request;
  private ByteBuffer response;

  @Setup(Level.Trial)
  public void setup() throws IOException {
    int reqLen = shape.equals("read") ? 72 : size + 72;
    int respLen = shape.equals("read") ? size + 24 : 24;
    server = new ShapedEchoServer(reqLen, respLen, 1, "pingpong-server");
    client = server.connect();
    request = ByteBuffer.allocateDirect(reqLen);
    response = ByteBuffer.allocateDirect(respLen);
  }

  @Setup(Level.Iteration)
  public void startCpuClocks() {
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
  public int pingPong() throws IOException {
    ShapedEchoServer.writeFully(client, request.clear());
    if (!ShapedEchoServer.readFully(client, response.clear())) {
      throw new IOException("server closed");
    }
    return response.get(0);
  }
}
