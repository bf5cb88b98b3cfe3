package io.ember.benchmarks.nvmf;

import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * NVMe/TCP host performance: 4 KiB random read/write latency at QD1, 4 KiB random IOPS at QD32 on 1
 * and 4 queues, 128 KiB sequential read/write at QD8. Against the embedded target with a memory
 * namespace by default ({@code -p target=embedded}); any target by URI, e.g. {@code -p
 * target=nvmf+tcp://127.0.0.1:4420/nqn.2014-08.org.nvmexpress:test-target}. The benchmarks write,
 * so point them only at scratch namespaces. The queued benchmarks keep their queue full from the
 * first call to the end of the trial (an open loop). Compare with the transport floors: {@link
 * TcpPingPongBenchmark} for QD1, {@link TcpStreamBenchmark} for the queued ones.
 */
@State(Scope.Benchmark)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
public class NvmfBenchmark {
  /** "embedded" or an nvmf+tcp:// URI. */
  @Param("embedded")
  public String target;

  /** I/O queues the QD32 benchmarks spread over. */
  @Param({"1", "4"})
  public int queues;

  /**
   * Write data the embedded target takes in the command capsule (its IOCCSZ less the 64-byte
   * command): larger writes are sent after the target asks for them (R2T).
   */
  @Param("16384")
  public int inCapsule;

  /**
   * Microseconds the host's network threads keep polling after their last event before they sleep
   * ({@link NvmfHostOptions.Builder#busyPoll}); 0 sleeps at once.
   */
  @Param("0")
  public long hostBusyPollMicros;

  /**
   * Microseconds the embedded target's network threads keep polling after their last event before
   * they sleep ({@link NvmfTarget.Builder#busyPoll}); 0 sleeps at once.
   */
  @Param("0")
  public long targetBusyPollMicros;

  /** Bytes of the namespace the random benchmarks touch. */
  @Param("268435456")
  public long span;

  /**
   * Completions the benchmark thread waits for at a time in the queued benchmarks: the queue does
   * not wait for it, but waking it less often keeps its cost out of the host's CPU figure.
   */
  static final int BATCH = 256;

  private NvmfTarget embedded;
  private NvmfController ctrl;
  private int nsid;
  private int bs;
  private ByteBuffer[] buffers;
  private final SplittableRandom random = new SplittableRandom(42);
  private long seqLba;

  @Setup(Level.Trial)
  public void setup(BenchmarkParams params) throws Exception {
    threads = params.getThreads();
    String uri = target;
    if (target.equals("embedded")) {
      Subsystem s = new Subsystem("nqn.2024-01.io.ember:bench");
      s.addNamespace(new MemoryNamespace(span, 4096));
      NvmfTarget.Builder b =
          NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).inCapsuleDataSize(inCapsule);
      b.busyPoll(Duration.ofNanos(targetBusyPollMicros * 1000));
      embedded = b.build().start();
      uri = embedded.uri(s.nqn());
    }
    ctrl =
        NvmfHost.connect(
            uri,
            NvmfHostOptions.builder()
                .ioQueues(4)
                .ioQueueSize(128)
                .busyPoll(Duration.ofNanos(hostBusyPollMicros * 1000))
                .build());
    IdentifyNamespace ns = ctrl.namespaces().get(0);
    nsid = ns.nsid();
    bs = ns.blockSize();
    span = Math.min(span, ns.sizeBytes());
    buffers = new ByteBuffer[64];
    for (int i = 0; i < buffers.length; i++) {
      buffers[i] = ByteBuffer.allocateDirect(128 * 1024);
      for (int j = 0; j < buffers[i].capacity(); j += 8) {
        buffers[i].putLong(j, random.nextLong());
      }
    }
    // Fill the span so that reads hit written data.
    ByteBuffer chunk = ByteBuffer.allocateDirect(1 << 20);
    for (long off = 0; off < span; off += chunk.capacity()) {
      ctrl.ioQueue(0)
          .write(
              nsid, off / bs, chunk.duplicate().limit((int) Math.min(chunk.capacity(), span - off)))
          .get(60, TimeUnit.SECONDS);
    }
  }

  @TearDown(Level.Iteration)
  public void readCpuClocks() {
    ThreadCpuProfiler.iterationEnded();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws InterruptedException {
    try {
      if (loop != null) {
        loop.stop();
      }
    } finally {
      if (ctrl != null) {
        ctrl.close();
      }
      if (embedded != null) {
        embedded.close();
      }
    }
  }

  private long randomLba4k() {
    return random.nextLong(span / 4096) * (4096 / bs);
  }

  private static ByteBuffer slice(ByteBuffer b, int len) {
    return b.duplicate().limit(len);
  }

  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public void randRead4kQd1() throws Exception {
    ctrl.ioQueue(0).read(nsid, randomLba4k(), slice(buffers[0], 4096)).get();
  }

  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public void randWrite4kQd1() throws Exception {
    ctrl.ioQueue(0).write(nsid, randomLba4k(), slice(buffers[0], 4096)).get();
  }

  /**
   * Keeps {@code depth} commands in flight over {@code nq} queues from the first call of a
   * benchmark to the end of its trial: each completion issues the next command on the I/O thread
   * that saw it, whatever the benchmark thread is doing, so the queue never drains between calls
   * (as SPDK's perf and fio keep theirs full).
   */
  private final class OpenLoop {
    private final boolean write;
    private final int len;
    private final int nq;
    private final boolean sequential;
    private final Completions completions = new Completions();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final CountDownLatch drained = new CountDownLatch(1);
    private volatile boolean stopping;

    OpenLoop(boolean write, int len, int depth, int nq, boolean sequential) {
      this.write = write;
      this.len = len;
      this.nq = nq;
      this.sequential = sequential;
      inFlight.set(depth);
      for (int i = 0; i < depth; i++) {
        new Slot(i).issue();
      }
    }

    private final class Slot implements NvmfCallback {
      private final NvmfQueue queue;
      private final ByteBuffer buffer;

      Slot(int id) {
        queue = ctrl.ioQueue(id % nq);
        buffer = slice(buffers[id], len);
      }

      void issue() {
        long lba;
        if (sequential) {
          synchronized (OpenLoop.this) {
            lba = seqLba;
            seqLba = (seqLba + len / bs) % (span / bs - len / bs);
          }
        } else {
          synchronized (random) {
            lba = randomLba4k();
          }
        }
        buffer.clear().limit(len);
        if (write) {
          queue.write(nsid, lba, buffer, this);
        } else {
          queue.read(nsid, lba, buffer, this);
        }
      }

      @Override
      public void complete(NvmfException e) {
        if (e != null) {
          // One failure ends the loop: the waiting call throws it, and JMH then skips teardown.
          stopping = true;
        }
        if (stopping) {
          if (inFlight.decrementAndGet() == 0) {
            drained.countDown();
          }
        } else {
          issue();
        }
        completions.completed(e);
      }
    }

    void stop() throws InterruptedException {
      stopping = true;
      if (!drained.await(60, TimeUnit.SECONDS)) {
        throw new IllegalStateException(inFlight.get() + " commands never completed");
      }
    }
  }

  private OpenLoop loop;
  private int threads;

  /**
   * Runs {@code batch} operations of the open loop, starting it on the first call. A failure stops
   * the loop before it is thrown: JMH skips the trial's teardown after a failed call, and a loop
   * left running would load the benchmarks after it.
   */
  private void openLoop(boolean write, int len, int depth, int nq, boolean sequential, int batch)
      throws Exception {
    if (threads != 1) {
      throw new IllegalStateException(
          "the queued benchmarks run on one thread (-t 1); raise the depth instead");
    }
    if (loop == null) {
      loop = new OpenLoop(write, len, depth, nq, sequential);
    }
    try {
      loop.completions.await(batch);
    } catch (Exception e) {
      OpenLoop failed = loop;
      loop = null;
      try {
        failed.stop();
      } catch (IllegalStateException | InterruptedException notDrained) {
        e.addSuppressed(notDrained);
      }
      throw e;
    }
  }

  @Setup(Level.Iteration)
  public void measureFromNow() {
    if (loop != null) {
      loop.completions.skipToNow();
    }
    ThreadCpuProfiler.iterationStarted();
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  @OperationsPerInvocation(BATCH)
  public void randRead4kQd32() throws Exception {
    openLoop(false, 4096, 32, queues, false, BATCH);
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  @OperationsPerInvocation(BATCH)
  public void randWrite4kQd32() throws Exception {
    openLoop(true, 4096, 32, queues, false, BATCH);
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  @OperationsPerInvocation(BATCH)
  public void seqRead128kQd8() throws Exception {
    openLoop(false, 128 * 1024, 8, 1, true, BATCH);
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  @OperationsPerInvocation(BATCH)
  public void seqWrite128kQd8() throws Exception {
    openLoop(true, 128 * 1024, 8, 1, true, BATCH);
  }
}
