package io.ember.benchmarks.report;

import java.awt.Color;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.CategoryStyler;
import org.knowm.xchart.style.Styler;

/**
 * The charts benchmark reports draw: bars of figures beside their baselines, ratios against a line
 * at 1, and stacked parts of a whole. Every chart is made the same way so reports look alike.
 */
public final class Charts {
  private static final int WIDTH = 900;
  private static final int HEIGHT = 420;

  private Charts() {}

  /**
   * Bars of each series' median per category, with whiskers that reach the round farthest from the
   * median (XChart's error bars are symmetric), so a reader sees both the figure and how much the
   * rounds behind it agreed.
   *
   * @param rounds per series (in legend order), per category, the value of every round
   * @throws IllegalArgumentException if a series has not one list of rounds per category, or a
   *     category has no rounds
   */
  public static CategoryChart beside(
      String title, String axisTitle, List<String> categories, Map<String, List<double[]>> rounds) {
    CategoryChart chart = chart(title, axisTitle, categories.size(), rounds.size());
    for (Map.Entry<String, List<double[]>> series : rounds.entrySet()) {
      List<double[]> values = series.getValue();
      if (values.size() != categories.size()) {
        throw new IllegalArgumentException(
            "series '"
                + series.getKey()
                + "' has "
                + values.size()
                + " categories of rounds, not "
                + categories.size());
      }
      double[] medians = new double[values.size()];
      double[] spreads = new double[values.size()];
      for (int i = 0; i < values.size(); i++) {
        double[] v = values.get(i);
        if (v.length == 0) {
          throw new IllegalArgumentException(
              "series '" + series.getKey() + "' has no rounds for " + categories.get(i));
        }
        medians[i] = median(v);
        double lowest = Arrays.stream(v).min().orElseThrow();
        double highest = Arrays.stream(v).max().orElseThrow();
        spreads[i] = Math.max(medians[i] - lowest, highest - medians[i]);
      }
      chart.addSeries(series.getKey(), categories, boxed(medians), boxed(spreads));
    }
    chart.getStyler().setErrorBarsColor(Color.DARK_GRAY);
    return chart;
  }

  /** The caption of a {@link #beside} chart whose bars are medians of {@code what}. */
  public static String spreadCaption(String what) {
    return "Bars are medians of "
        + what
        + "; whiskers reach as far either side as the one farthest from the median.";
  }

  /**
   * Bars of ratios per category, one series each, beside a line at 1 (parity with the baseline).
   *
   * @param ratios per series (in legend order), one ratio per category
   * @throws IllegalArgumentException if a series has not one ratio per category
   */
  public static CategoryChart ratios(
      String title, String axisTitle, List<String> categories, Map<String, double[]> ratios) {
    CategoryChart chart = chart(title, axisTitle, categories.size(), ratios.size());
    for (Map.Entry<String, double[]> series : ratios.entrySet()) {
      check(series.getKey(), series.getValue(), categories);
      chart.addSeries(series.getKey(), categories, boxed(series.getValue()));
    }
    chart.addAnnotation(new AnnotationLine(1.0, false, false));
    return chart;
  }

  /**
   * Bars of parts stacked into their whole per category, e.g. a job's stages.
   *
   * @param parts per part (in legend order, bottom first), its value in each category (0 where it
   *     has none)
   * @throws IllegalArgumentException if a part has not one value per category
   */
  public static CategoryChart stacked(
      String title, String axisTitle, List<String> categories, Map<String, double[]> parts) {
    CategoryChart chart = chart(title, axisTitle, categories.size(), 1);
    chart.getStyler().setStacked(true);
    for (Map.Entry<String, double[]> part : parts.entrySet()) {
      check(part.getKey(), part.getValue(), categories);
      chart.addSeries(part.getKey(), categories, boxed(part.getValue()));
    }
    return chart;
  }

  /** A chart wide enough for {@code categories} groups of {@code series} bars each. */
  private static CategoryChart chart(String title, String axisTitle, int categories, int series) {
    CategoryChart chart =
        new CategoryChartBuilder()
            .width(Math.max(WIDTH, 160 + categories * (series * 12 + 8)))
            .height(HEIGHT)
            .title(title)
            .yAxisTitle(axisTitle)
            .build();
    CategoryStyler s = chart.getStyler();
    s.setChartBackgroundColor(Color.WHITE);
    s.setPlotBackgroundColor(Color.WHITE);
    s.setLegendPosition(Styler.LegendPosition.OutsideS);
    s.setLegendLayout(Styler.LegendLayout.Horizontal);
    // Benchmark measures have long names; slanted, they fit under narrow bars. Many short ones
    // (TPC-DS's queries) fit only upright.
    s.setXAxisLabelRotation(categories > 12 ? 90 : 20);
    return chart;
  }

  private static void check(String series, double[] values, List<String> categories) {
    if (values.length != categories.size()) {
      throw new IllegalArgumentException(
          "series '" + series + "' has " + values.length + " values, not " + categories.size());
    }
  }

  private static List<Double> boxed(double[] values) {
    return Arrays.stream(values).boxed().toList();
  }

  /** The median of {@code values} (the mean of the middle two when their number is even). */
  public static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
}
