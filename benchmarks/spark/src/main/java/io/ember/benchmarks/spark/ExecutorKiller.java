package io.ember.benchmarks.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskStart;

/**
 * Counts the map tasks Spark runs, and (when armed) kills the executor that starts the first reduce
 * task, so the job loses that executor early in its reduce stage.
 */
final class ExecutorKiller extends SparkListener {
  private final SparkContext sc;
  private final boolean armed;
  private final Set<Integer> mapStages = ConcurrentHashMap.newKeySet();
  private final AtomicInteger mapTasks = new AtomicInteger();
  private final AtomicInteger mapStageAttempts = new AtomicInteger();
  private final AtomicBoolean killed = new AtomicBoolean();
  private volatile String victim;

  ExecutorKiller(SparkContext sc, boolean armed) {
    this.sc = sc;
    this.armed = armed;
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted e) {
    if (e.stageInfo().shuffleDepId().isDefined()) {
      mapStages.add(e.stageInfo().stageId());
      mapStageAttempts.incrementAndGet();
    }
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart e) {
    if (mapStages.contains(e.stageId())) {
      mapTasks.incrementAndGet();
    } else if (armed && killed.compareAndSet(false, true)) {
      victim = e.taskInfo().executorId();
      // Not on the listener bus's thread: killing waits for the scheduler.
      new Thread(() -> sc.killExecutor(victim), "kill-executor-" + victim).start();
    }
  }

  /** Map tasks started, retries and re-runs included. */
  int mapTasks() {
    return mapTasks.get();
  }

  /** Map stages submitted, resubmissions included. */
  int mapStageAttempts() {
    return mapStageAttempts.get();
  }

  /** The executor killed, or null. */
  String victim() {
    return victim;
  }
}
