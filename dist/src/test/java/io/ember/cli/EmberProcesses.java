package io.ember.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ember} commands run as separate JVMs, the way a user runs them, each with its output in a
 * log file; every one still running is killed at {@link #close}.
 */
final class EmberProcesses implements AutoCloseable {
  private final List<Process> processes = new ArrayList<>();
  private final long patienceSeconds;

  /**
   * @param patienceSeconds how long {@link #awaitLine} waits for a process to print a line: far
   *     longer than it takes on a starved machine, as tests wait for events, never for a time
   */
  EmberProcesses(long patienceSeconds) {
    this.patienceSeconds = patienceSeconds;
  }

  /** Starts {@code ember ARGS...} on this JVM's class path, its output to {@code log}. */
  Process start(Path log, String... args) throws IOException {
    return start(List.of(), log, args);
  }

  /**
   * Starts {@code ember ARGS...} through {@code prefix} (a command that runs another, such as
   * {@code ip netns exec NAME}), its output to {@code log}.
   */
  Process start(List<String> prefix, Path log, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            EmberCli.class.getName()));
    cmd.addAll(List.of(args));
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    return p;
  }

  /**
   * Waits until {@code log} has a line matching {@code pattern} and returns its first group.
   *
   * @param process the process writing the log, or null: fails at once if it exits first
   */
  String awaitLine(Path log, Pattern pattern, Process process) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(patienceSeconds);
    while (System.nanoTime() - deadline < 0) {
      if (Files.exists(log)) {
        try (BufferedReader r =
            new BufferedReader(
                new InputStreamReader(Files.newInputStream(log), StandardCharsets.UTF_8))) {
          String line;
          while ((line = r.readLine()) != null) {
            Matcher m = pattern.matcher(line);
            if (m.find()) {
              return m.group(1);
            }
          }
        }
      }
      if (process != null && !process.isAlive()) {
        throw new AssertionError(
            "the process exited before printing " + pattern + ":\n" + Files.readString(log));
      }
      Thread.sleep(50);
    }
    throw new AssertionError(
        "no line matching "
            + pattern
            + " in "
            + log
            + ":\n"
            + (Files.exists(log) ? Files.readString(log) : "(no log)"));
  }

  /** Kills every process still running and waits until each has ended. */
  @Override
  public void close() {
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (Process p : processes) {
      try {
        p.waitFor(patienceSeconds, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
