package io.ember.benchmarks;

import io.ember.protocol.ConfigKey;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * Sizes and durations given as command-line options, read as the configuration reads them and
 * checked against a range, with a usage error that names the option and what it takes. Without this
 * a mistyped value ended the command with Java's own words ({@code For input string: "lots"}) and
 * no option named, or not at all until a cluster had started. Public because {@code ember}'s other
 * commands take such values too, and this is the lowest module that has picocli.
 */
public final class OptionValues {
  private OptionValues() {}

  /**
   * Reads {@code text} as a byte size ("512m", "4g", "1048576").
   *
   * @throws ParameterException naming {@code option} when {@code text} is not a size or is outside
   *     {@code min}..{@code max}
   */
  public static long size(CommandSpec spec, String option, String text, long min, long max) {
    long size;
    try {
      size = ConfigKey.parseSize(text);
    } catch (RuntimeException e) {
      throw new ParameterException(
          spec.commandLine(), option + ": '" + text + "' is not a size such as 512m or 4g");
    }
    if (size < min || size > max) {
      throw new ParameterException(
          spec.commandLine(),
          option
              + ": "
              + text
              + (max == Long.MAX_VALUE
                  ? " is less than " + ConfigKey.formatSize(min)
                  : " is not between "
                      + ConfigKey.formatSize(min)
                      + " and "
                      + ConfigKey.formatSize(max)));
    }
    return size;
  }

  /**
   * Reads {@code text} as a duration ("200us", "10ms", "5s", "1m").
   *
   * @throws ParameterException naming {@code option} when {@code text} is not a duration or is
   *     outside {@code min}..{@code max}
   */
  public static Duration duration(
      CommandSpec spec, String option, String text, Duration min, Duration max) {
    Duration duration;
    try {
      duration = ConfigKey.parseDuration(text);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          spec.commandLine(), option + ": '" + text + "' is not a duration such as 10ms or 200us");
    }
    if (duration.compareTo(min) < 0 || duration.compareTo(max) > 0) {
      throw new ParameterException(
          spec.commandLine(),
          option + ": " + text + " is not between " + shown(min) + " and " + shown(max));
    }
    return duration;
  }

  /** A duration the way {@link ConfigKey#parseDuration} reads it, in its largest whole unit. */
  static String shown(Duration d) {
    if (d.isZero()) {
      return "0";
    }
    long nanos = d.toNanos();
    if (nanos % 3_600_000_000_000L == 0) {
      return nanos / 3_600_000_000_000L + "h";
    }
    if (nanos % 60_000_000_000L == 0) {
      return nanos / 60_000_000_000L + "m";
    }
    if (nanos % 1_000_000_000L == 0) {
      return nanos / 1_000_000_000L + "s";
    }
    if (nanos % 1_000_000L == 0) {
      return nanos / 1_000_000L + "ms";
    }
    return nanos / 1000 + "us";
  }
}
