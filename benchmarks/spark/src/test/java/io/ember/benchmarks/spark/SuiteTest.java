package io.ember.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SuiteTest {
  private static List<Tpcds.Outcome> runs(double... seconds) {
    return Arrays.stream(seconds).mapToObj(s -> new Tpcds.Outcome("q1", s, 1, "d", null)).toList();
  }

  @Test
  void aQueryIsSlowerInEveryRunOnlyWhenItsFastestRunLosesToTheBaselinesSlowest() {
    assertTrue(Suite.slowerInEveryRun(runs(1.25, 1.30, 1.40), runs(1.0, 1.1, 1.05), 1.10));
    // The median is 25% slower, but one run beats a baseline run: within the spread.
    assertFalse(Suite.slowerInEveryRun(runs(1.25, 1.30, 1.15), runs(1.0, 1.1, 1.05), 1.10));
    assertFalse(Suite.slowerInEveryRun(runs(1.0), runs(1.0), 1.10));
    assertTrue(Suite.slowerInEveryRun(runs(1.2), runs(1.0), 1.10));
  }
}
