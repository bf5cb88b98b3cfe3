package io.ember.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Pins this JVM's threads to CPUs (Linux, with {@code taskset}) so that the calling threads of a
 * measure sit on one CPU and the servers they call on the others.
 *
 * <p>Left to the scheduler on a small machine, a caller that alternates between two servers shares
 * its core with one of them and wakes the other across cores. On virtual machines whose idle CPUs
 * halt, a cross-core wake-up costs tens of microseconds, so whichever server the scheduler happens
 * to keep beside the caller answers several times faster, and a ratio between the two says where
 * the threads landed rather than what either costs. With every server on the other CPUs, each call
 * pays the same wake-ups, as calls from another host do.
 */
final class ThreadPlacement implements AutoCloseable {
  private final List<Integer> allowed;
  private final String description;

  private ThreadPlacement(List<Integer> allowed, String description) {
    this.allowed = allowed;
    this.description = description;
  }

  /** A placement that pins nothing, described by {@code why}. */
  static ThreadPlacement unpinned(String why) {
    return new ThreadPlacement(List.of(), why);
  }

  /** What the placement is, or why threads were left where they were, for the printed notes. */
  String description() {
    return description;
  }

  /**
   * Pins the current thread, and threads named as callers, to the first CPU this process may use,
   * and every other thread of the process to the rest. Threads started later inherit their
   * creator's CPUs, so callers the current thread starts stay on the callers' CPU.
   *
   * @param isCaller true for the name of a thread (as {@code /proc} shows it, at most 15
   *     characters) that belongs with the callers
   * @return the placement; when pinning is not possible (not Linux, one CPU, no {@code taskset}),
   *     one that changed nothing and says why
   */
  static ThreadPlacement splitCallersFromServers(Predicate<String> isCaller) {
    List<Integer> cpus;
    String self;
    try {
      cpus = allowedCpus();
      self = Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
    } catch (IOException | RuntimeException e) {
      return new ThreadPlacement(List.of(), "threads not pinned: no /proc here (" + e + ")");
    }
    if (cpus.size() < 2) {
      return new ThreadPlacement(List.of(), "threads not pinned: one CPU");
    }
    String callerCpu = Integer.toString(cpus.get(0));
    String serverCpus = list(cpus.subList(1, cpus.size()));
    int pinned = 0;
    try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
      for (Path task : (Iterable<Path>) tasks::iterator) {
        String tid = task.getFileName().toString();
        String name;
        try {
          name = Files.readString(task.resolve("comm"), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
          continue; // the thread ended
        }
        boolean caller = tid.equals(self) || isCaller.test(name);
        if (taskset(caller ? callerCpu : serverCpus, tid)) {
          pinned++;
        }
      }
    } catch (IOException e) {
      return new ThreadPlacement(cpus, "threads not pinned: " + e.getMessage());
    }
    if (pinned == 0) {
      return new ThreadPlacement(List.of(), "threads not pinned: taskset failed or is missing");
    }
    return new ThreadPlacement(
        cpus,
        "callers pinned to CPU " + callerCpu + ", servers and baselines to CPU(s) " + serverCpus);
  }

  /** Lets every thread of the process run on any of its CPUs again. */
  @Override
  public void close() {
    if (allowed.isEmpty()) {
      return;
    }
    String all = list(allowed);
    try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
      tasks.forEach(t -> taskset(all, t.getFileName().toString()));
    } catch (IOException e) {
      // The threads keep their CPUs; the bench ends soon after.
    }
  }

  /** The CPUs the process may use, from /proc/self/status ("Cpus_allowed_list: 0-3,8"). */
  private static List<Integer> allowedCpus() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("Cpus_allowed_list:")) {
        List<Integer> cpus = new ArrayList<>();
        for (String range : line.substring(line.indexOf(':') + 1).strip().split(",", -1)) {
          int dash = range.indexOf('-');
          int first = Integer.parseInt(dash < 0 ? range : range.substring(0, dash));
          int last = dash < 0 ? first : Integer.parseInt(range.substring(dash + 1));
          for (int c = first; c <= last; c++) {
            cpus.add(c);
          }
        }
        return cpus;
      }
    }
    throw new IOException("no Cpus_allowed_list in /proc/self/status");
  }

  private static String list(List<Integer> cpus) {
    return cpus.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  /** Sets thread {@code tid}'s CPUs; false when taskset is missing or refused (thread gone). */
  private static boolean taskset(String cpus, String tid) {
    try {
      Process p =
          new ProcessBuilder("taskset", "-p", "-c", cpus, tid)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return false;
      }
      return p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
