package io.ember.minicluster;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict parser of Prometheus' text exposition format (version 0.0.4), for tests: it refuses what
 * a Prometheus server would refuse, rather than reading what it can.
 */
final class PrometheusText {
  private static final Pattern NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
  private static final Pattern LABEL = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
  private static final Pattern COMMENT =
      Pattern.compile("# (HELP|TYPE) (" + NAME.pattern() + ") ?(.*)");

  private PrometheusText() {}

  /**
   * The samples of {@code text}, keyed by series as {@code name{a="x",b="y"}} with labels sorted.
   *
   * @throws IllegalArgumentException naming the line for anything that is not the format
   */
  static Map<String, Double> parse(String text) {
    Map<String, String> types = new HashMap<>();
    Map<String, Double> samples = new LinkedHashMap<>();
    if (!text.endsWith("\n")) {
      throw new IllegalArgumentException("the text does not end with a newline");
    }
    int lineNo = 0;
    for (String line : text.split("\n", -1)) {
      lineNo++;
      if (line.isEmpty()) {
        continue;
      }
      String where = "line " + lineNo + " '" + line + "'";
      if (line.startsWith("#")) {
        Matcher m = COMMENT.matcher(line);
        if (m.matches() && m.group(1).equals("TYPE")) {
          if (!m.group(3).matches("counter|gauge|histogram|summary|untyped")) {
            throw new IllegalArgumentException(where + ": unknown type");
          }
          if (types.put(m.group(2), m.group(3)) != null) {
            throw new IllegalArgumentException(where + ": second TYPE of " + m.group(2));
          }
        }
        continue;
      }
      int i = 0;
      while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
        i++;
      }
      String name = line.substring(0, i);
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(where + ": bad metric name");
      }
      Map<String, String> labels = new java.util.TreeMap<>();
      if (i < line.length() && line.charAt(i) == '{') {
        i++;
        while (line.charAt(i) != '}') {
          int eq = line.indexOf('=', i);
          String label = line.substring(i, eq);
          if (!LABEL.matcher(label).matches() || line.charAt(eq + 1) != '"') {
            throw new IllegalArgumentException(where + ": bad label at " + i);
          }
          StringBuilder value = new StringBuilder();
          int j = eq + 2;
          for (; line.charAt(j) != '"'; j++) {
            char c = line.charAt(j);
            if (c == '\\') {
              char e = line.charAt(++j);
              value.append(e == 'n' ? '\n' : e);
              if (e != 'n' && e != '\\' && e != '"') {
                throw new IllegalArgumentException(where + ": bad escape \\" + e);
              }
            } else {
              value.append(c);
            }
          }
          if (labels.put(label, value.toString()) != null) {
            throw new IllegalArgumentException(where + ": label " + label + " twice");
          }
          i = j + 1;
          if (line.charAt(i) == ',') {
            i++;
          } else if (line.charAt(i) != '}') {
            throw new IllegalArgumentException(where + ": expected , or } at " + i);
          }
        }
        i++;
      }
      if (i >= line.length() || line.charAt(i) != ' ') {
        throw new IllegalArgumentException(where + ": no value");
      }
      String[] rest = line.substring(i + 1).split(" ", -1);
      if (rest.length > 2) {
        throw new IllegalArgumentException(where + ": more than a value and a timestamp");
      }
      double value =
          switch (rest[0]) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> Double.parseDouble(rest[0]);
          };
      if (rest.length == 2) {
        Long.parseLong(rest[1]);
      }
      String family = family(name, types);
      if (family == null) {
        throw new IllegalArgumentException(where + ": no TYPE line before the sample");
      }
      StringBuilder series = new StringBuilder(name).append('{');
      labels.forEach((k, v) -> series.append(k).append("=\"").append(v).append("\","));
      if (!labels.isEmpty()) {
        series.setLength(series.length() - 1);
      }
      series.append('}');
      if (samples.put(series.toString(), value) != null) {
        throw new IllegalArgumentException(where + ": series " + series + " twice");
      }
    }
    return samples;
  }

  /**
   * The family a sample belongs to: its name, or its name less a histogram's or counter's suffix.
   */
  private static String family(String name, Map<String, String> types) {
    if (types.containsKey(name)) {
      return name;
    }
    for (String suffix : new String[] {"_total", "_created", "_bucket", "_sum", "_count"}) {
      if (name.endsWith(suffix)) {
        String base = name.substring(0, name.length() - suffix.length());
        if (types.containsKey(base)) {
          return base;
        }
      }
    }
    return null;
  }
}
