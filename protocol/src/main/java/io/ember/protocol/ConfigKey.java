package io.ember.protocol;

import java.time.Duration;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A typed configuration key with its default, its parser and its check. Keys are defined as
 * constants in one class per module ({@link EmberKeys} here).
 *
 * @param <T> the value's type
 */
public final class ConfigKey<T> {
  private final String name;
  private final String defaultText;
  private final Function<String, T> parser;
  private final Predicate<T> check;
  private final String checkText;
  private final String description;
  private boolean secret;

  private ConfigKey(
      String name,
      String defaultText,
      Function<String, T> parser,
      Predicate<T> check,
      String checkText,
      String description) {
    this.name = name;
    this.defaultText = defaultText;
    this.parser = parser;
    this.check = check;
    this.checkText = checkText;
    this.description = description;
    parse(defaultText); // a bad default is a bug: fail at class load
  }

  /** An integer key with an inclusive range. */
  public static ConfigKey<Integer> ofInt(
      String name, int defaultValue, int min, int max, String description) {
    return new ConfigKey<>(
        name,
        Integer.toString(defaultValue),
        Integer::parseInt,
        v -> v >= min && v <= max,
        "a whole number from " + min + " to " + max,
        description);
  }

  /** A byte size key ("4g", "512k", "1048576") with an inclusive range. */
  public static ConfigKey<Long> ofSize(
      String name, String defaultValue, long min, long max, String description) {
    return new ConfigKey<>(
        name,
        defaultValue,
        ConfigKey::parseSize,
        v -> v >= min && v <= max,
        "a size from " + formatSize(min) + " to " + formatSize(max) + " (e.g. 512k, 4g)",
        description);
  }

  /** A duration key ("500ms", "10s", "2m") with an inclusive range. */
  public static ConfigKey<Duration> ofDuration(
      String name, String defaultValue, Duration min, Duration max, String description) {
    return new ConfigKey<>(
        name,
        defaultValue,
        ConfigKey::parseDuration,
        v -> v.compareTo(min) >= 0 && v.compareTo(max) <= 0,
        "a duration from " + min.toMillis() + "ms to " + max.toMillis() + "ms (e.g. 500ms, 10s)",
        description);
  }

  /** A key that is true or false. */
  public static ConfigKey<Boolean> ofBoolean(
      String name, boolean defaultValue, String description) {
    return new ConfigKey<>(
        name,
        Boolean.toString(defaultValue),
        s -> {
          if (s.equalsIgnoreCase("true") || s.equalsIgnoreCase("false")) {
            return Boolean.parseBoolean(s);
          }
          throw new IllegalArgumentException(s);
        },
        v -> true,
        "true or false",
        description);
  }

  /**
   * A string key holding a secret (a key, a password): its value never appears in an error message.
   */
  public static ConfigKey<String> ofSecret(
      String name, Predicate<String> check, String checkText, String description) {
    ConfigKey<String> k = new ConfigKey<>(name, "", s -> s, check, checkText, description);
    k.secret = true;
    return k;
  }

  /** A string key whose values must pass {@code check}. */
  public static ConfigKey<String> ofString(
      String name,
      String defaultValue,
      Predicate<String> check,
      String checkText,
      String description) {
    return new ConfigKey<>(name, defaultValue, s -> s, check, checkText, description);
  }

  /** The key's name, e.g. {@code ember.block-size}. */
  public String name() {
    return name;
  }

  /** The default as text. */
  public String defaultText() {
    return defaultText;
  }

  /** What the key sets. */
  public String description() {
    return description;
  }

  /**
   * Parses and checks a value.
   *
   * @throws IllegalArgumentException naming the key, the value and what is allowed
   */
  public T parse(String text) {
    T value;
    try {
      value = parser.apply(text.trim());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(name + ": " + shown(text) + " is not " + checkText, e);
    }
    if (!check.test(value)) {
      throw new IllegalArgumentException(name + ": " + shown(text) + " is not " + checkText);
    }
    return value;
  }

  private String shown(String text) {
    return secret ? "the value (not shown: it is secret)" : "'" + text + "'";
  }

  /** Parses "4g", "512k", "1m", "100" (bytes); suffixes are powers of 1024. */
  public static long parseSize(String text) {
    String t = text.trim().toLowerCase(Locale.ROOT);
    if (t.endsWith("ib")) {
      t = t.substring(0, t.length() - 2);
    } else if (t.endsWith("b")) {
      t = t.substring(0, t.length() - 1);
    }
    long mult = 1;
    if (!t.isEmpty()) {
      switch (t.charAt(t.length() - 1)) {
        case 'k' -> mult = 1L << 10;
        case 'm' -> mult = 1L << 20;
        case 'g' -> mult = 1L << 30;
        case 't' -> mult = 1L << 40;
        default -> mult = 1;
      }
    }
    if (mult != 1) {
      t = t.substring(0, t.length() - 1);
    }
    long n = Long.parseLong(t.trim());
    if (n < 0) {
      throw new NumberFormatException("negative size");
    }
    return Math.multiplyExact(n, mult);
  }

  /** Formats a byte count the way {@link #parseSize} reads it, e.g. "1 MiB" → "1m". */
  public static String formatSize(long bytes) {
    String[] units = {"", "k", "m", "g", "t"};
    int u = 0;
    long v = bytes;
    while (u < units.length - 1 && v != 0 && v % 1024 == 0) {
      v /= 1024;
      u++;
    }
    return v + units[u];
  }

  /**
   * Parses "50us", "500ms", "10s", "2m", "1h", "7d" or a plain number of milliseconds.
   *
   * @throws IllegalArgumentException when {@code text} is not such a duration, or one too long to
   *     hold
   */
  public static Duration parseDuration(String text) {
    try {
      return parseDuration0(text);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(text + " is too long a duration", e);
    }
  }

  private static Duration parseDuration0(String text) {
    String t = text.trim().toLowerCase(Locale.ROOT);
    if (t.endsWith("us")) {
      return Duration.ofNanos(
          Math.multiplyExact(Long.parseLong(t.substring(0, t.length() - 2).trim()), 1000L));
    }
    if (t.endsWith("ms")) {
      return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).trim()));
    }
    if (t.endsWith("s")) {
      return Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    if (t.endsWith("m")) {
      return Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    if (t.endsWith("h")) {
      return Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    if (t.endsWith("d")) {
      return Duration.ofDays(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    return Duration.ofMillis(Long.parseLong(t));
  }

  @Override
  public String toString() {
    return name;
  }
}
