package io.ember.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The Spark line and Scala version this jar was built for. Spark's internal shuffle API differs
 * between lines, so a jar on another Spark fails late and obscurely (a missing method in a task);
 * {@link #check()} says which jar to use instead, when Spark starts the shuffle manager.
 */
final class BuiltFor {
  private static final Properties BUILD = load();

  /** The artifact this jar is, e.g. {@code ember-spark-3.5_2.12}. */
  static final String ARTIFACT = BUILD.getProperty("artifact");

  /** The Spark line, e.g. {@code 3.5}. */
  static final String SPARK_LINE = BUILD.getProperty("spark.line");

  /** Scala's binary version, e.g. {@code 2.12}. */
  static final String SCALA = BUILD.getProperty("scala.binary.version");

  /**
   * The builds there are, as {@code <line>_<scala>}: the {@code spark-shuffle/spark-<line>_<scala>}
   * module folders ({@code BuiltForTest} checks the two agree).
   */
  static final java.util.List<String> BUILDS =
      java.util.List.of("3.5_2.12", "3.5_2.13", "4.1_2.13");

  private BuiltFor() {}

  private static Properties load() {
    Properties p = new Properties();
    try (InputStream in = BuiltFor.class.getResourceAsStream("built-for.properties")) {
      if (in == null) {
        throw new IllegalStateException("built-for.properties is missing from the Ember jar");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  /**
   * Why this jar cannot run on Spark {@code sparkVersion} with Scala {@code scalaVersion} (as
   * {@code 4.1.3} and {@code 2.13.16}), or null when it can.
   */
  static String mismatch(String sparkVersion, String scalaVersion) {
    String line = firstTwo(sparkVersion);
    String scala = firstTwo(scalaVersion);
    if (line.equals(SPARK_LINE) && scala.equals(SCALA)) {
      return null;
    }
    String other = line + "_" + scala;
    return ARTIFACT
        + " is built for Spark "
        + SPARK_LINE
        + " with Scala "
        + SCALA
        + ", but this is Spark "
        + sparkVersion
        + " with Scala "
        + scalaVersion
        + (BUILDS.contains(other)
            ? ": use ember-spark-" + other + " instead"
            : ": Ember's shuffle is built for Spark "
                + String.join(", ", BUILDS).replace("_", " with Scala ")
                + " only");
  }

  /**
   * Checks that the running Spark is the one this jar was built for.
   *
   * @throws IllegalStateException naming the jar to use instead, when it is not
   */
  static void check() {
    String why =
        mismatch(
            org.apache.spark.package$.MODULE$.SPARK_VERSION(),
            scala.util.Properties.versionNumberString());
    if (why != null) {
      throw new IllegalStateException(why);
    }
  }

  /** {@code 3.5} of {@code 3.5.9}, {@code 4.1} of {@code 4.1.0-SNAPSHOT}. */
  private static String firstTwo(String version) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("^(\\d+\\.\\d+)([.-].*)?$").matcher(version);
    return m.matches() ? m.group(1) : version;
  }
}
