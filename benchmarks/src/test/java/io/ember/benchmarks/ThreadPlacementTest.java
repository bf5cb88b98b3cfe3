package io.ember.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The bench's thread placement puts callers and servers on the CPUs it says, then undoes it. */
class ThreadPlacementTest {

  @Test
  void callersGoToTheFirstCpuServersToTheRestAndCloseUndoesIt() throws Exception {
    String all = cpusOf("thread-self");
    assumeTrue(
        !all.matches("\\d+"), "one CPU here (" + all + "): nothing to split callers from servers");
    assumeTrue(
        Files.isExecutable(Path.of("/usr/bin/taskset"))
            || Files.isExecutable(Path.of("/bin/taskset")),
        "no taskset here (util-linux): the bench runs its threads unpinned");
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    AtomicReference<String> serverTid = new AtomicReference<>();
    Thread server =
        new Thread(
            () -> {
              try {
                serverTid.set(
                    Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString());
                started.countDown();
                done.await();
              } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
              }
            },
            "placement-srv");
    server.start();
    started.await();
    try {
      String first = all.split("[-,]", 2)[0];
      try (ThreadPlacement placement =
          ThreadPlacement.splitCallersFromServers(name -> name.startsWith("bench-"))) {
        assertEquals(first, cpusOf("thread-self"), placement.description());
        String serverCpus = cpusOf("self/task/" + serverTid.get());
        assertFalse(
            serverCpus.equals(first) || serverCpus.equals(all),
            "a server thread may run on " + serverCpus + " of " + all);
      }
      assertEquals(all, cpusOf("thread-self"));
      assertEquals(all, cpusOf("self/task/" + serverTid.get()));
    } finally {
      done.countDown();
      server.join();
    }
  }

  /** A thread's Cpus_allowed_list, e.g. "0-1", from /proc/{@code task}/status. */
  private static String cpusOf(String task) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc", task, "status"))) {
      if (line.startsWith("Cpus_allowed_list:")) {
        return line.substring(line.indexOf(':') + 1).strip();
      }
    }
    throw new IOException("no Cpus_allowed_list for " + task);
  }
}
