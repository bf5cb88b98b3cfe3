package io.ember.benchmarks.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;

/**
 * How long a job's stages took, for the report's chart of TeraSort's stages: map stages (those that
 * write a shuffle) and reduce stages (the rest), by the call that made them. A stage run again
 * after an executor is lost adds its attempts' time to the same entry.
 */
final class StageTimes extends SparkListener {
  private final Map<String, Double> seconds = new LinkedHashMap<>();

  @Override
  public void onStageCompleted(SparkListenerStageCompleted e) {
    StageInfo info = e.stageInfo();
    if (info.submissionTime().isEmpty() || info.completionTime().isEmpty()) {
      return;
    }
    long millis = (Long) info.completionTime().get() - (Long) info.submissionTime().get();
    // "mapToPair at Tera.java:137": the call site's line changes with every edit of the file.
    String call = info.name().replaceFirst(" at .*", "");
    String name = (info.shuffleDepId().isDefined() ? "map: " : "reduce: ") + call;
    synchronized (seconds) {
      seconds.merge(name, millis / 1e3, Double::sum);
    }
  }

  /**
   * Seconds per stage, in the order stages first completed, once Spark has told the listener about
   * every event so far (stage events arrive on the listener bus's thread, after the job returns).
   *
   * @throws TimeoutException if the listener bus has not caught up in two minutes
   */
  Map<String, Double> seconds(SparkContext sc) throws TimeoutException {
    sc.listenerBus().waitUntilEmpty(TimeUnit.MINUTES.toMillis(2));
    synchronized (seconds) {
      return new LinkedHashMap<>(seconds);
    }
  }
}
