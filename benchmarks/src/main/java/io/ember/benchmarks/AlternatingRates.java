package io.ember.benchmarks;

import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Rates of operations measured in turn, call by call, on the same threads: each thread calls the
 * first operation, then the second, and so on, each call timed on its own. On two shared cores,
 * rates measured one after the other differ by more than the costs being compared; taken in turns,
 * every operation sees the same machine.
 */
final class AlternatingRates {
  private AlternatingRates() {}

  /** One operation; {@code thread} says which of the threads calls it, {@code index} which call. */
  interface Op {
    void call(int thread, int index) throws Exception;
  }

  /**
   * Calls per second of each operation, summed over {@code threadCount} threads that each make
   * {@code calls} calls of every operation.
   *
   * @throws IllegalStateException when a call failed (the failure is printed on {@code progress})
   */
  static double[] measure(int threadCount, int calls, List<Op> ops, PrintWriter progress)
      throws InterruptedException {
    AtomicInteger failures = new AtomicInteger();
    long[][] nanos = new long[threadCount][ops.size()];
    Thread[] threads = new Thread[threadCount];
    CountDownLatch go = new CountDownLatch(1);
    for (int t = 0; t < threadCount; t++) {
      int id = t;
      threads[t] =
          new Thread(
              () -> {
                try {
                  go.await();
                  for (int i = 0; i < calls; i++) {
                    for (int o = 0; o < ops.size(); o++) {
                      long t0 = System.nanoTime();
                      ops.get(o).call(id, i);
                      nanos[id][o] += System.nanoTime() - t0;
                    }
                  }
                } catch (Exception e) {
                  failures.incrementAndGet();
                  synchronized (progress) {
                    progress.println("bench: " + e);
                    progress.flush();
                  }
                }
              },
              "bench-" + t);
      threads[t].start();
    }
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    if (failures.get() > 0) {
      throw new IllegalStateException(failures.get() + " benchmark thread(s) failed");
    }
    double[] rates = new double[ops.size()];
    for (int t = 0; t < threadCount; t++) {
      for (int o = 0; o < ops.size(); o++) {
        rates[o] += calls / (nanos[t][o] / 1e9);
      }
    }
    return rates;
  }
}
