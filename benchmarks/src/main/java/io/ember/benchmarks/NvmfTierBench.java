package io.ember.benchmarks;

import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.ClientMetrics;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.NvmfUri;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench nvmf}: the NVMf tier through Ember's client beside the bare nvmf host against
 * the same target, in the same run: sequential 1 MiB write and read (8 in flight), random 4 KiB
 * reads and sequential 4 KiB writes one at a time. Then an unaligned 4 KiB write workload, to count
 * the sectors read-modify-write touched.
 */
@Command(
    name = "nvmf",
    mixinStandardHelpOptions = true,
    description = "Benchmark the NVMf tier beside the bare NVMf host on the same target.")
public final class NvmfTierBench implements Callable<Integer> {
  @Option(
      names = "--target",
      paramLabel = "URI",
      description = "target namespace (default: an embedded in-memory target)")
  String target;

  @Option(
      names = "--size",
      defaultValue = "256m",
      description = "bytes per sequential round (default ${DEFAULT-VALUE})")
  String size;

  @Option(
      names = "--ops",
      defaultValue = "5000",
      description = "4 KiB operations per round (default ${DEFAULT-VALUE})")
  int ops;

  @Option(
      names = "--rounds",
      defaultValue = "3",
      description = "rounds; medians are reported (default ${DEFAULT-VALUE})")
  int rounds;

  @Option(
      names = "--queues",
      defaultValue = "1",
      description =
          "I/O queues of the bare host and of Ember's client alike " + "(default ${DEFAULT-VALUE})")
  int queues;

  @Option(
      names = "--warmup",
      defaultValue = "15",
      description =
          "seconds of unmeasured rounds first, so the JIT has compiled both paths "
              + "(default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @Option(
      names = "--busy-poll",
      paramLabel = "DURATION",
      defaultValue = "0",
      description =
          "how long the NVMf network threads of Ember's client, and of the embedded target, poll"
              + " after each event before they sleep, e.g. 10ms (default ${DEFAULT-VALUE}: they"
              + " sleep at once)")
  String busyPoll;

  @Option(
      names = "--bare-busy-poll",
      paramLabel = "DURATION",
      defaultValue = "0",
      description = "the same for the bare host (default ${DEFAULT-VALUE})")
  String bareBusyPoll;

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private static final int SEQ = 1 << 20;
  private static final int SMALL = 4096;
  private static final int DEPTH = 8;

  /** How long a round waits for the blocks the last one freed. */
  private static final Duration FREE_WAIT = Duration.ofMinutes(2);

  private static long freeNvmfBlocks(EmberClient client) throws EmberException {
    return client.df().stream()
        .filter(u -> StorageClass.NVMF.equals(u.storageClass()))
        .mapToLong(ClassUsage::freeBlocks)
        .sum();
  }

  /**
   * Waits until the NVMf tier has {@code blocks} free again. A deleted file's NVMf blocks come back
   * only once the data node has deallocated them on the target and a short delay has passed, so a
   * round that wrote most of the tier cannot start right after the last one deleted its files.
   */
  private static void awaitFreeNvmfBlocks(EmberClient client, long blocks, PrintWriter progress)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + FREE_WAIT.toNanos();
    boolean told = false;
    for (long free = freeNvmfBlocks(client); free < blocks; free = freeNvmfBlocks(client)) {
      if (System.nanoTime() - deadline > 0) {
        throw new IOException(
            "the NVMf tier has "
                + free
                + " of its "
                + blocks
                + " blocks free "
                + FREE_WAIT.toSeconds()
                + " s after the bench deleted its files; are the data node's heartbeats reaching"
                + " the name node?");
      }
      if (!told) {
        progress.println("bench: waiting for the deleted files' blocks to be deallocated...");
        progress.flush();
        told = true;
      }
      Thread.sleep(100);
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter progress = spec.commandLine().getErr();
    long bytes = OptionValues.size(spec, "--size", size, SEQ, Long.MAX_VALUE);
    if (ops < 1 || rounds < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--ops and --rounds must be positive");
    }
    pollWindow("--busy-poll", busyPoll);
    Duration bareWindow = pollWindow("--bare-busy-poll", bareBusyPoll);
    MiniCluster.Builder b =
        MiniCluster.builder()
            .dramDatanodes(0)
            .set(EmberKeys.IO_THREADS, "0")
            .set(io.ember.tier.nvmf.NvmfTierKeys.QUEUES, Integer.toString(queues))
            .set(io.ember.tier.nvmf.NvmfTierKeys.BUSY_POLL, busyPoll)
            .set(NvmfDataNodeKeys.EMBEDDED_BUSY_POLL, busyPoll)
            // A round holds its two sequential files and the 4 KiB one at once.
            .set(
                NvmfDataNodeKeys.EMBEDDED_SIZE,
                Long.toString(2 * bytes + (long) ops * SMALL + (64L << 20)));
    b.nvmfDatanode(target == null ? "" : target);
    double[][] r = new double[10][rounds];
    long rmwSectors;
    long rmwWrites;
    try (MiniCluster cluster = b.build();
        EmberClient client = cluster.newClient()) {
      NvmfUri uri = NvmfUri.parse(cluster.nvmfDatanodes().get(0).target().toString());
      progress.println("bench: NVMf target " + uri);
      CreateOptions nvmf = CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
      byte[] buf = new byte[SEQ];
      new Random(1).nextBytes(buf);
      long seqOps = bytes / SEQ;
      try (NvmfController bare =
          NvmfHost.connect(
              uri,
              NvmfHostOptions.builder()
                  .ioQueues(queues)
                  .ioQueueSize(64)
                  .busyPoll(bareWindow)
                  .build())) {
        int nsid = uri.nsid();
        int lba = bare.namespace(nsid).blockSize();
        // The bare host works in the upper half of the namespace. The name node may place Ember's
        // blocks there too (it hands out blocks never used before first), and the bare host's
        // writes then overwrite them: the bench never checks what it reads, so neither side pays
        // for that. It must stop short of the last LBA, where the data node records its
        // registration. It starts on a 1 MiB boundary, as Ember's blocks do: the embedded target
        // keeps memory in 1 MiB chunks, and a transfer across two is received by a copy instead of
        // straight into the chunk.
        long bareBase = (bare.namespace(nsid).sizeBytes() / 2 & -(long) SEQ) / lba;
        if ((bareBase + 1) * lba + bytes > bare.namespace(nsid).sizeBytes()) {
          throw new CommandLine.ParameterException(
              spec.commandLine(),
              "--size "
                  + size
                  + " is more than half of NVMf target "
                  + uri
                  + "'s namespace, less one LBA");
        }
        NvmfQueue q = bare.ioQueue(0);
        java.util.concurrent.atomic.AtomicInteger nextQueue =
            new java.util.concurrent.atomic.AtomicInteger();
        java.util.function.Supplier<NvmfQueue> anyQueue =
            () -> bare.ioQueue(Math.floorMod(nextQueue.getAndIncrement(), bare.ioQueueCount()));
        ByteBuffer[] seqBufs = new ByteBuffer[DEPTH];
        for (int i = 0; i < DEPTH; i++) {
          seqBufs[i] = ByteBuffer.allocateDirect(SEQ).put(buf).flip();
        }
        ByteBuffer small = ByteBuffer.allocateDirect(SMALL);
        Random rnd = new Random(2);
        long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
        long freeAtStart = freeNvmfBlocks(client);
        for (int round = -1; round < rounds; round++) {
          // Round -1 repeats until the warm-up time is over; its figures are dropped.
          if (round == -1 && System.nanoTime() > warmupEnd && warmupSeconds > 0) {
            continue;
          }
          int slot = Math.max(round, 0);
          long span = seqOps * (SEQ / SMALL);
          String path = "/bench-nvmf-" + round;
          String roundName = round < 0 ? "warm-up" : "round " + (round + 1) + "/" + rounds;
          SequentialPart bareSeq =
              () -> {
                progress.printf(Locale.ROOT, "bench: %s: bare host...%n", roundName);
                progress.flush();
                long t0 = System.nanoTime();
                pipeline(
                    seqOps,
                    i ->
                        anyQueue
                            .get()
                            .write(
                                nsid,
                                bareBase + i * (SEQ / lba),
                                seqBufs[(int) (i % DEPTH)].duplicate()));
                long t1 = System.nanoTime();
                pipeline(
                    seqOps,
                    i ->
                        anyQueue
                            .get()
                            .read(
                                nsid,
                                bareBase + i * (SEQ / lba),
                                seqBufs[(int) (i % DEPTH)].duplicate()));
                long t2 = System.nanoTime();
                r[0][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t1 - t0);
                r[1][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t2 - t1);
              };
          SequentialPart emberSeq =
              () -> {
                progress.printf(Locale.ROOT, "bench: %s: Ember client...%n", roundName);
                progress.flush();
                long t5 = System.nanoTime();
                try (EmberOutputStream o = client.create(path, nvmf)) {
                  for (long i = 0; i < seqOps; i++) {
                    o.write(buf);
                  }
                }
                long t6 = System.nanoTime();
                try (EmberInputStream in = client.open(path)) {
                  for (long i = 0; i < seqOps; i++) {
                    in.readNBytes(buf, 0, SEQ);
                  }
                }
                long t7 = System.nanoTime();
                r[4][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t6 - t5);
                r[5][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t7 - t6);
                // The same through Ember's async calls with caller-owned direct buffers, 8 in
                // flight: the bare host's conditions, so the difference is the tier itself.
                String asyncPath = path + "-async";
                long t8 = System.nanoTime();
                try (EmberOutputStream o = client.create(asyncPath, nvmf)) {
                  pipeline(
                      seqOps,
                      i -> {
                        try {
                          return o.writeAsync(
                              io.netty.buffer.Unpooled.wrappedBuffer(
                                  seqBufs[(int) (i % DEPTH)].duplicate()));
                        } catch (java.io.IOException e) {
                          return CompletableFuture.failedFuture(e);
                        }
                      });
                }
                long t9 = System.nanoTime();
                try (EmberInputStream in = client.open(asyncPath)) {
                  pipeline(
                      seqOps,
                      i ->
                          in.readAsync(i * SEQ, seqBufs[(int) (i % DEPTH)].duplicate())
                              .thenApply(n -> (Void) null));
                }
                long t10 = System.nanoTime();
                r[8][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t9 - t8);
                r[9][slot] = BenchCommand.mibPerSec(seqOps * SEQ, t10 - t9);
              };
          // Even rounds start with the bare host and odd ones with Ember, so whatever the first
          // leaves behind (garbage to collect, a neighbour's burst) falls on both alike.
          if (round % 2 == 0) {
            bareSeq.run();
            emberSeq.run();
          } else {
            emberSeq.run();
            bareSeq.run();
          }
          progress.printf(
              Locale.ROOT,
              "bench: %s: 1 MiB MiB/s, Ember async vs bare: write %.0f vs %.0f, read %.0f vs"
                  + " %.0f%n",
              roundName,
              r[8][slot],
              r[0][slot],
              r[9][slot],
              r[1][slot]);
          // One at a time, latency-bound: bare and Ember alternate call by call and each call is
          // timed on its own, so both see the same machine.
          progress.printf(Locale.ROOT, "bench: %s: 4 KiB, alternating...%n", roundName);
          progress.flush();
          byte[] four = new byte[SMALL];
          long bareRead = 0;
          long emberRead = 0;
          try (EmberInputStream in = client.open(path)) {
            for (int i = 0; i < ops; i++) {
              long a = System.nanoTime();
              q.read(nsid, bareBase + (long) rnd.nextInt((int) span) * (SMALL / lba), small.clear())
                  .join();
              long c = System.nanoTime();
              in.readFully((long) rnd.nextInt((int) span) * SMALL, four, 0, SMALL);
              long d = System.nanoTime();
              bareRead += c - a;
              emberRead += d - c;
            }
          }
          client.delete(path, false);
          long bareWrite = 0;
          long emberWrite = 0;
          try (EmberOutputStream o = client.create(path + "-4k", nvmf)) {
            for (int i = 0; i < ops; i++) {
              long a = System.nanoTime();
              q.write(nsid, bareBase + (long) i * (SMALL / lba), small.clear()).join();
              long c = System.nanoTime();
              o.write(four);
              o.flush(); // waits until the write is on the target
              long d = System.nanoTime();
              bareWrite += c - a;
              emberWrite += d - c;
            }
          }
          client.delete(path + "-4k", false);
          // Deleted only now, with the round's other files: the data node deallocates the blocks
          // of a deleted file in the background, and that work must not fall on the other side's
          // timed transfers.
          client.delete(path + "-async", false);
          awaitFreeNvmfBlocks(client, freeAtStart, progress);
          r[2][slot] = ops / (bareRead / 1e9);
          r[3][slot] = ops / (bareWrite / 1e9);
          r[6][slot] = ops / (emberRead / 1e9);
          r[7][slot] = ops / (emberWrite / 1e9);
          if (round == -1 && System.nanoTime() < warmupEnd) {
            round--; // warm up again
          }
        }
        // Unaligned 4 KiB writes: each straddles two sectors of a 512-byte-LBA target.
        progress.println("bench: unaligned 4 KiB writes...");
        ClientMetrics m = client.metrics();
        long before = m.readModifyWriteSectors();
        String unaligned = "/bench-nvmf-unaligned";
        try (EmberOutputStream o = client.create(unaligned, nvmf)) {
          o.write(new byte[100]);
          for (int i = 0; i < ops; i++) {
            o.write(new byte[SMALL]);
          }
        }
        client.delete(unaligned, false);
        rmwSectors = m.readModifyWriteSectors() - before;
        rmwWrites = ops + 1L;
      }
    }
    Comparison figures = new Comparison("Ember client", "bare host", 2);
    figures.add("seq 1 MiB write, async, 8 in flight", "MiB/s", r[8], r[0], ">= 0.90");
    figures.add("seq 1 MiB read, async, 8 in flight", "MiB/s", r[9], r[1], ">= 0.90");
    figures.add("seq 1 MiB write, stream of byte[]", "MiB/s", r[4], r[0], "");
    figures.add("seq 1 MiB read, stream into byte[]", "MiB/s", r[5], r[1], "");
    figures.add("random 4 KiB read, one at a time*", "ops/s", r[6], r[2], ">= 0.80");
    figures.add("4 KiB write, one at a time*", "ops/s", r[7], r[3], ">= 0.80");
    figures.print(out, "measure");
    String rmw =
        String.format(
            Locale.ROOT,
            "unaligned 4 KiB workload: %d writes touched %d sectors by read-modify-write",
            rmwWrites,
            rmwSectors);
    String how =
        "figures are medians of "
            + rounds
            + " round(s) after "
            + warmupSeconds
            + " s of warm-up, measured in the same run, rounds starting with the bare host and"
            + " with Ember in turn"
            + ", NVMf threads polling after each event for "
            + busyPoll
            + " in Ember's client and the embedded target, "
            + bareBusyPoll
            + " in the bare host"
            + "; * bare and Ember calls alternate one by one;"
            + "\nthe bare host uses direct buffers with 8 in flight; 'async' rows give Ember the "
            + "same, 'stream' rows add the copy into the caller's byte[] and the stream's window.";
    out.println(rmw);
    out.println(how);
    HtmlReport page = report.start(spec, "ember bench nvmf: the NVMf tier beside a bare host");
    if (page != null) {
      figures.addTo(
          page,
          "NVMf tier, " + (target == null ? "embedded target" : "target " + target),
          "measure");
      page.paragraph(rmw).paragraph(how);
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }

  private Duration pollWindow(String option, String value) {
    return OptionValues.duration(spec, option, value, Duration.ZERO, Duration.ofSeconds(1));
  }

  /** One side's sequential transfers in a round. */
  private interface SequentialPart {
    void run() throws Exception;
  }

  private interface Issue {
    CompletableFuture<Void> op(long i);
  }

  /** Runs {@code n} operations with {@link #DEPTH} in flight. */
  private static void pipeline(long n, Issue issue) {
    ArrayDeque<CompletableFuture<Void>> inFlight = new ArrayDeque<>();
    for (long i = 0; i < n; i++) {
      if (inFlight.size() == DEPTH) {
        inFlight.poll().join();
      }
      inFlight.add(issue.op(i));
    }
    inFlight.forEach(CompletableFuture::join);
  }
}
