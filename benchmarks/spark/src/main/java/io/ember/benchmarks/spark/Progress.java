package io.ember.benchmarks.spark;

import java.io.PrintStream;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Prints the running stages' task counts every few seconds while long Spark work runs, so a person
 * watching knows it is moving. Started by its constructor, until {@link #stop()}; the stream it
 * prints to stays open.
 */
final class Progress {
  private final Thread thread;
  private volatile boolean stopped;

  Progress(JavaSparkContext sc, String what, PrintStream out, long periodMillis) {
    long start = System.nanoTime();
    thread =
        new Thread(
            () -> {
              String last = "";
              while (!stopped) {
                try {
                  Thread.sleep(periodMillis);
                } catch (InterruptedException e) {
                  return;
                }
                StringBuilder line = new StringBuilder();
                for (int id : sc.statusTracker().getActiveStageIds()) {
                  SparkStageInfo stage = sc.statusTracker().getStageInfo(id);
                  if (stage != null) {
                    line.append(
                        String.format(
                            " stage %d: %d/%d tasks done, %d running;",
                            id,
                            stage.numCompletedTasks(),
                            stage.numTasks(),
                            stage.numActiveTasks()));
                  }
                }
                String now = line.toString();
                if (!now.isEmpty() && !now.equals(last)) {
                  out.printf("    %s %4.0f s:%s%n", what, (System.nanoTime() - start) / 1e9, now);
                  last = now;
                }
              }
            },
            "spark-bench-progress");
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops printing. */
  void stop() {
    stopped = true;
    thread.interrupt();
  }
}
