package io.ember.benchmarks.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategorySeries;

class ChartsTest {
  private static List<Number> values(CategorySeries s) {
    return new ArrayList<>(s.getYData());
  }

  @Test
  void besideDrawsMediansWithWhiskersToTheFarthestRound() {
    Map<String, List<double[]>> rounds = new LinkedHashMap<>();
    rounds.put("Ember", List.of(new double[] {1, 2, 10}, new double[] {4, 6}));
    rounds.put("raw socket", List.of(new double[] {3}, new double[] {5, 5, 5, 9}));
    CategoryChart chart = Charts.beside("t", "MiB/s", List.of("write", "read"), rounds);
    CategorySeries ember = chart.getSeriesMap().get("Ember");
    assertEquals(List.of(2.0, 5.0), values(ember));
    assertEquals(List.of(8.0, 1.0), new ArrayList<>(ember.getExtraValues()));
    CategorySeries raw = chart.getSeriesMap().get("raw socket");
    assertEquals(List.of(3.0, 5.0), values(raw));
    assertEquals(List.of(0.0, 4.0), new ArrayList<>(raw.getExtraValues()));
    assertEquals(List.of("Ember", "raw socket"), new ArrayList<>(chart.getSeriesMap().keySet()));
  }

  @Test
  void aSeriesThatDoesNotCoverEveryCategoryIsRefused() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Charts.ratios(
                    "t", "ratio", List.of("q1", "q2"), Map.of("dram", new double[] {1.0})));
    assertTrue(e.getMessage().contains("'dram' has 1 values, not 2"), e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> Charts.beside("t", "s", List.of("a"), Map.of("x", List.of(new double[0]))));
  }

  @Test
  void stackedChartsStackTheirParts() {
    Map<String, double[]> parts = new LinkedHashMap<>();
    parts.put("map", new double[] {10, 12});
    parts.put("reduce", new double[] {20, 0});
    CategoryChart chart = Charts.stacked("stages", "s", List.of("spark", "ember"), parts);
    assertTrue(chart.getStyler().isStacked());
    assertEquals(List.of(20.0, 0.0), values(chart.getSeriesMap().get("reduce")));
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertEquals(2.5, Charts.median(new double[] {4, 1, 3, 2}));
    assertEquals(3.0, Charts.median(new double[] {5, 3, 1}));
  }
}
