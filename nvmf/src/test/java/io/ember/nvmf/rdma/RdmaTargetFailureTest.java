package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.NvmfUri;
import io.ember.rdma.RdmaSupport;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * What the RDMA host does when things go wrong on a real target: Linux's nvmet-rdma, whose RDMA
 * port (its configfs folder, {@code EMBER_TEST_NVMET_RDMA_PORT}) this test takes away and gives
 * back. Run inside the kernel-nvmet VM by {@link RdmaInVmTest}.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMET_RDMA_PORT",
    matches = ".+",
    disabledReason =
        "EMBER_TEST_NVMET_RDMA_PORT is not set (the nvmet configfs folder of the RDMA port;"
            + " RdmaInVmTest sets it inside the kernel-nvmet VM)")
class RdmaTargetFailureTest {
  private static NvmfHostOptions.Builder options() {
    return NvmfHostOptions.builder()
        .ioQueues(2)
        .ioQueueSize(32)
        .keepAlive(Duration.ofSeconds(2))
        .commandTimeout(Duration.ofSeconds(20))
        .connectTimeout(Duration.ofSeconds(20));
  }

  private static String target() {
    var reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
    return System.getenv("EMBER_TEST_NVMF_RDMA_TARGET");
  }

  @Test
  void targetGoingAwayMidIoFailsEveryCommandAndNoneHangs() throws Exception {
    String uri = target();
    String nqn = NvmfUri.parse(uri).subsystemNqn();
    Path port = Path.of(System.getenv("EMBER_TEST_NVMET_RDMA_PORT"));
    Path link = port.resolve("subsystems").resolve(nqn);
    Path subsystem = port.getParent().getParent().resolve("subsystems").resolve(nqn);
    NvmfController c = NvmfHost.connect(uri, options().build());
    try {
      int nsid = c.namespaces().get(0).nsid();
      int bs = c.namespaces().get(0).blockSize();
      // An open loop of 8 KiB writes, 64 in flight, until the first failure.
      Semaphore window = new Semaphore(64);
      AtomicLong completed = new AtomicLong();
      AtomicReference<Throwable> firstFailure = new AtomicReference<>();
      List<CompletableFuture<Void>> all = new CopyOnWriteArrayList<>();
      Thread loop =
          new Thread(
              () -> {
                Random r = new Random(3);
                long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
                for (long i = 0;
                    firstFailure.get() == null && System.nanoTime() - deadline < 0;
                    i++) {
                  try {
                    if (!window.tryAcquire(1, TimeUnit.SECONDS)) {
                      continue;
                    }
                  } catch (InterruptedException e) {
                    return;
                  }
                  ByteBuffer b = ByteBuffer.allocateDirect(8192);
                  byte[] p = new byte[8192];
                  r.nextBytes(p);
                  b.put(p).flip();
                  CompletableFuture<Void> f =
                      c.ioQueue((int) (i % 2)).write(nsid, (i % 1024) * 8192 / bs, b);
                  all.add(f);
                  var unused =
                      f.whenComplete(
                          (v, err) -> {
                            window.release();
                            if (err == null) {
                              completed.incrementAndGet();
                            } else {
                              firstFailure.compareAndSet(null, err);
                            }
                          });
                }
              },
              "rdma-open-loop");
      loop.start();
      long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      while (completed.get() < 500 && System.nanoTime() - end < 0) {
        Thread.sleep(5);
      }
      assertTrue(completed.get() >= 500, "the loop got going: " + completed.get());
      Files.delete(link); // the target drops the port's controllers and stops listening
      loop.join(TimeUnit.MINUTES.toMillis(4));
      assertFalse(loop.isAlive(), "the loop saw the failure");
      int failed = 0;
      for (CompletableFuture<Void> f : all) {
        try {
          f.get(2, TimeUnit.MINUTES); // none hangs
        } catch (ExecutionException e) {
          assertInstanceOf(NvmfException.class, e.getCause(), String.valueOf(e.getCause()));
          failed++;
        }
      }
      assertTrue(failed > 0, "commands were in flight when the port went away");
      end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      while (c.isConnected() && System.nanoTime() - end < 0) {
        Thread.sleep(20);
      }
      assertFalse(c.isConnected(), "the controller noticed that the target went away");
      ExecutionException later =
          assertThrows(
              ExecutionException.class,
              () ->
                  c.ioQueue(0)
                      .read(nsid, 0, ByteBuffer.allocateDirect(bs))
                      .get(2, TimeUnit.MINUTES));
      assertInstanceOf(NvmfException.class, later.getCause());
      System.out.println(
          failed
              + " of "
              + all.size()
              + " writes failed when the port went away, with: "
              + firstFailure.get());
    } finally {
      if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
        Files.createSymbolicLink(link, subsystem);
      }
      closeAndReport(c, "close of a lost controller");
    }
    // The port is back: a new association works and the data path is whole.
    try (NvmfController again = NvmfHost.connect(uri, options().build())) {
      int nsid = again.namespaces().get(0).nsid();
      ByteBuffer w = ByteBuffer.allocateDirect(4096);
      new Random(4).ints(1024).forEach(w::putInt);
      w.flip();
      again.ioQueue(0).write(nsid, 0, w.duplicate()).get(1, TimeUnit.MINUTES);
      ByteBuffer back = ByteBuffer.allocateDirect(4096);
      again.ioQueue(1).read(nsid, 0, back).get(1, TimeUnit.MINUTES);
      byte[] a = new byte[4096];
      byte[] b = new byte[4096];
      w.duplicate().get(a);
      back.get(b);
      assertArrayEquals(a, b);
    }
  }

  @Test
  void closeWithCommandsInFlightFailsThemAndReturns() throws Exception {
    NvmfController c = NvmfHost.connect(target(), options().build());
    int nsid = c.namespaces().get(0).nsid();
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    for (int i = 0; i < 256; i++) {
      fs.add(c.ioQueue(i % 2).read(nsid, i * 8L, ByteBuffer.allocateDirect(4096)));
    }
    closeAndReport(c, "close with reads in flight");
    for (CompletableFuture<Void> f : fs) {
      try {
        f.get(1, TimeUnit.MINUTES);
      } catch (ExecutionException e) {
        assertInstanceOf(NvmfException.class, e.getCause());
      }
    }
    assertTrue(fs.stream().allMatch(CompletableFuture::isDone));
    ExecutionException after =
        assertThrows(
            ExecutionException.class,
            () ->
                c.ioQueue(0)
                    .read(nsid, 0, ByteBuffer.allocateDirect(4096))
                    .get(1, TimeUnit.MINUTES));
    assertInstanceOf(NvmfException.class, after.getCause());
  }

  @Test
  void killedClientLeavesNothingBehindOnEitherSide() throws Exception {
    String uri = target();
    Map<String, Long> before = rdmaResources();
    Process child = RdmaVm.startJvm(RdmaLoadClient.class, uri);
    try {
      StringBuilder seen = new StringBuilder();
      assertTrue(RdmaVm.awaitLine(child, "RUNNING", seen), "the client got going:\n" + seen);
      Map<String, Long> during = rdmaResources();
      assertTrue(
          during.getOrDefault("qp", 0L) > before.getOrDefault("qp", 0L),
          "the client's queue pairs show: " + during);
    } finally {
      child.destroyForcibly(); // SIGKILL: no close, no disconnect from the client
      child.waitFor(1, TimeUnit.MINUTES);
    }
    // The kernel tears the dead process's connections down, and the target frees its side: queue
    // pairs, CM ids, memory regions and CQs all return to what they were.
    assertEquals(before, awaitResources(before), "RDMA resources after the client was killed");
    // And the target serves the next host.
    try (NvmfController again = NvmfHost.connect(uri, options().build())) {
      ByteBuffer w = ByteBuffer.allocateDirect(4096);
      new Random(5).ints(1024).forEach(w::putInt);
      w.flip();
      int nsid = again.namespaces().get(0).nsid();
      again.ioQueue(0).write(nsid, 64, w.duplicate()).get(1, TimeUnit.MINUTES);
      ByteBuffer back = ByteBuffer.allocateDirect(4096);
      again.ioQueue(1).read(nsid, 64, back).get(1, TimeUnit.MINUTES);
      assertEquals(w, back, "the bytes read back");
    }
    // Our own host frees everything at close too.
    assertEquals(
        before, awaitResources(before), "RDMA resources after this host closed its controller");
  }

  /** Closes {@code c} and prints how long it took (a figure for the note, not an assertion). */
  private static void closeAndReport(NvmfController c, String what) {
    long t0 = System.nanoTime();
    c.close();
    System.out.println(
        what + " took " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms");
  }

  /** The resource counts once they equal {@code want}, or as they are after two minutes. */
  private static Map<String, Long> awaitResources(Map<String, Long> want) throws Exception {
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    Map<String, Long> now = rdmaResources();
    while (!now.equals(want) && System.nanoTime() - end < 0) {
      Thread.sleep(100);
      now = rdmaResources();
    }
    return now;
  }

  /** The RDMA device's resource counts (pd, cq, qp, cm_id, mr, ...) from iproute2's rdma tool. */
  private static Map<String, Long> rdmaResources() throws Exception {
    String tool = Files.isExecutable(Path.of("/usr/bin/rdma")) ? "/usr/bin/rdma" : "/sbin/rdma";
    assumeTrue(Files.isExecutable(Path.of(tool)), "no rdma tool (iproute2) to count resources");
    Process p = new ProcessBuilder(tool, "resource", "show").redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(1, TimeUnit.MINUTES);
    Map<String, Long> counts = new TreeMap<>();
    Matcher m = Pattern.compile("\\b(pd|cq|qp|cm_id|mr|ctx|srq) (\\d+)").matcher(text);
    while (m.find()) {
      counts.merge(m.group(1), Long.parseLong(m.group(2)), Long::sum);
    }
    assertTrue(counts.containsKey("qp"), "rdma resource show: " + text);
    return counts;
  }

  @Test
  void unreachableAddressIsAClearError() {
    var reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
    NvmfUri u = NvmfUri.parse(target());
    // A port nobody listens on: the connection manager rejects (or gives up); either way one line.
    NvmfException e =
        assertThrows(
            NvmfException.class,
            () ->
                NvmfHost.connect(
                        "nvmf+rdma://" + u.host() + ":4999/" + u.subsystemNqn(),
                        options().connectTimeout(Duration.ofSeconds(10)).build())
                    .close());
    assertTrue(e.getMessage().contains(":4999"), e.getMessage());
  }
}
