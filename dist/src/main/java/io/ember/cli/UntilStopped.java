package io.ember.cli;

import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;

/** Keeps a started server (or cluster) running until the process is asked to stop. */
final class UntilStopped {
  private UntilStopped() {}

  /** Prints {@code banner}, then blocks until Ctrl-C (or SIGTERM), closing {@code server}. */
  static void run(AutoCloseable server, PrintWriter out, String banner)
      throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    server.close();
                  } catch (Exception e) {
                    System.err.println("ember: closing failed: " + EmberCli.oneLine(e));
                  }
                  stopped.countDown();
                }));
    out.println(banner);
    out.flush();
    stopped.await();
  }
}
