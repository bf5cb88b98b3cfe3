package io.ember.benchmarks;

import io.ember.benchmarks.report.Charts;
import io.ember.benchmarks.report.HtmlReport;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Figures measured beside a baseline in the same run, every round kept: printed as a bench's table
 * (medians and their ratio) and drawn in its {@code --report} (bars with the rounds' spread, and
 * the ratios against parity).
 */
final class Comparison {
  /** One measure's rounds. A class, not a record: a record's equality would ignore the arrays. */
  private static final class Row {
    final String measure;
    final String unit;
    final double[] measured;
    final double[] baseline;
    final String goal;
    private final double ratio;

    Row(String measure, String unit, double[] measured, double[] baseline, String goal) {
      this.measure = measure;
      this.unit = unit;
      this.measured = measured;
      this.baseline = baseline;
      this.goal = goal;
      this.ratio = Charts.median(measured) / Charts.median(baseline);
    }

    /** The median measured over the median baseline (each median sorts a copy, so once). */
    double ratio() {
      return ratio;
    }
  }

  private final String measuredLabel;
  private final String baselineLabel;
  private final String ratioFormat;
  private final List<Row> rows = new ArrayList<>();

  /**
   * @param ratioDigits decimals of the printed ratios: 3 where a 3% difference is the point
   */
  Comparison(String measuredLabel, String baselineLabel, int ratioDigits) {
    this.measuredLabel = measuredLabel;
    this.baselineLabel = baselineLabel;
    this.ratioFormat = "%." + ratioDigits + "f";
  }

  /**
   * Adds a measure: every round's figure of the measured thing and of its baseline, in {@code
   * unit}; {@code goal} is the ratio aimed for, or empty.
   */
  void add(String measure, String unit, double[] measured, double[] baseline, String goal) {
    rows.add(new Row(measure, unit, measured.clone(), baseline.clone(), goal));
  }

  private List<String> headers(String measureHeader) {
    List<String> h = new ArrayList<>(List.of(measureHeader, measuredLabel, baselineLabel, "ratio"));
    if (hasGoals()) {
      h.add("goal");
    }
    return h;
  }

  private boolean hasGoals() {
    return rows.stream().anyMatch(r -> !r.goal.isEmpty());
  }

  private List<List<String>> cells() {
    List<List<String>> cells = new ArrayList<>();
    for (Row r : rows) {
      List<String> c = new ArrayList<>();
      c.add(r.measure);
      c.add(withUnit(Charts.median(r.measured), r.unit));
      c.add(withUnit(Charts.median(r.baseline), r.unit));
      c.add(String.format(Locale.ROOT, ratioFormat, r.ratio()));
      if (hasGoals()) {
        c.add(r.goal);
      }
      cells.add(c);
    }
    return cells;
  }

  private static String withUnit(double value, String unit) {
    return BenchCommand.fmt(value) + (unit.isEmpty() ? "" : " " + unit);
  }

  /** Prints the table: the measure's column left-aligned, the figures right-aligned. */
  void print(PrintWriter out, String measureHeader) {
    List<String> headers = headers(measureHeader);
    List<List<String>> cells = cells();
    int[] widths = new int[headers.size()];
    for (int i = 0; i < widths.length; i++) {
      widths[i] = headers.get(i).length();
      for (List<String> row : cells) {
        widths[i] = Math.max(widths[i], row.get(i).length());
      }
    }
    List<List<String>> lines = new ArrayList<>();
    lines.add(headers);
    lines.addAll(cells);
    for (List<String> line : lines) {
      StringBuilder s = new StringBuilder();
      for (int i = 0; i < line.size(); i++) {
        String cell = line.get(i);
        String pad = " ".repeat(widths[i] - cell.length());
        s.append(i == 0 ? cell + pad : "  " + pad + cell);
      }
      out.println(s.toString().stripTrailing());
    }
  }

  /**
   * Adds the table to {@code report} under {@code heading}, then a chart of the figures beside
   * their baselines for each unit, then one of the ratios.
   */
  void addTo(HtmlReport report, String heading, String measureHeader) {
    report.heading(heading).table(headers(measureHeader), cells());
    Map<String, List<Row>> byUnit = new LinkedHashMap<>();
    rows.forEach(r -> byUnit.computeIfAbsent(r.unit, u -> new ArrayList<>()).add(r));
    int rounds = rows.isEmpty() ? 0 : rows.get(0).measured.length;
    for (Map.Entry<String, List<Row>> unit : byUnit.entrySet()) {
      List<Row> unitRows = unit.getValue();
      Map<String, List<double[]>> series = new LinkedHashMap<>();
      series.put(measuredLabel, unitRows.stream().map(r -> r.measured).toList());
      series.put(baselineLabel, unitRows.stream().map(r -> r.baseline).toList());
      report.chart(
          Charts.beside(
              heading + (byUnit.size() > 1 ? ", " + unit.getKey() : ""),
              unit.getKey(),
              unitRows.stream().map(r -> r.measure).toList(),
              series),
          Charts.spreadCaption(rounds + " round(s)"));
    }
    // A baseline of 0 has no ratio to draw; the table still shows it.
    List<Row> drawable = rows.stream().filter(r -> Double.isFinite(r.ratio())).toList();
    if (drawable.isEmpty()) {
      return;
    }
    String ratio = measuredLabel + " / " + baselineLabel;
    report.chart(
        Charts.ratios(
            heading + ": " + ratio,
            "ratio",
            drawable.stream().map(r -> r.measure).toList(),
            Map.of(ratio, drawable.stream().mapToDouble(Row::ratio).toArray())),
        "The line marks 1, the baseline's figure"
            + (hasGoals() ? "; the table gives each measure's goal" : "")
            + (drawable.size() < rows.size() ? "; measures without a ratio are left out." : "."));
  }
}
