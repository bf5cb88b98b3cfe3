package io.ember.protocol;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * An immutable set of configuration values. Values are read through typed {@link ConfigKey}s, which
 * parse and check them; a bad value fails with a message naming the key.
 */
public final class EmberConfig {
  private static final EmberConfig EMPTY = new EmberConfig(Map.of());

  private final Map<String, String> values;

  private EmberConfig(Map<String, String> values) {
    this.values = Collections.unmodifiableMap(new TreeMap<>(values));
  }

  /** A configuration where every key has its default. */
  public static EmberConfig defaults() {
    return EMPTY;
  }

  /** A configuration of the given raw values. */
  public static EmberConfig of(Map<String, String> values) {
    return new EmberConfig(values);
  }

  /**
   * Reads a Java properties file.
   *
   * @throws IOException when the file cannot be read
   */
  public static EmberConfig load(Path file) throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    }
    Map<String, String> m = new TreeMap<>();
    for (String k : p.stringPropertyNames()) {
      m.put(k, p.getProperty(k));
    }
    return new EmberConfig(m);
  }

  /**
   * The key's value, or its default.
   *
   * @throws IllegalArgumentException when the set value does not parse or is out of range
   */
  public <T> T get(ConfigKey<T> key) {
    String v = values.get(key.name());
    return key.parse(v == null ? key.defaultText() : v);
  }

  /** True when the key has a value of its own (not the default). */
  public boolean isSet(ConfigKey<?> key) {
    return values.containsKey(key.name());
  }

  /**
   * A copy with one more value, checked now.
   *
   * @throws IllegalArgumentException when the value does not parse or is out of range
   */
  public EmberConfig with(ConfigKey<?> key, String value) {
    key.parse(value);
    Map<String, String> m = new TreeMap<>(values);
    m.put(key.name(), value);
    return new EmberConfig(m);
  }

  /** A copy where {@code overrides} win over this configuration's values. */
  public EmberConfig withAll(EmberConfig overrides) {
    Map<String, String> m = new TreeMap<>(values);
    m.putAll(overrides.values);
    return new EmberConfig(m);
  }

  /** The raw values. */
  public Map<String, String> asMap() {
    return values;
  }

  /**
   * Names set here that none of {@code known} defines: a typo in a config file shows up instead of
   * being ignored.
   */
  public List<String> unknownKeys(Collection<ConfigKey<?>> known) {
    Set<String> names = new HashSet<>();
    for (ConfigKey<?> k : known) {
      names.add(k.name());
    }
    List<String> unknown = new ArrayList<>();
    for (String k : values.keySet()) {
      if (!names.contains(k)) {
        unknown.add(k);
      }
    }
    return unknown;
  }

  /**
   * Checks every known key's value, so a bad value fails at start-up and not at first use.
   *
   * @throws IllegalArgumentException naming the first bad key
   */
  public void validate(Collection<ConfigKey<?>> known) {
    for (ConfigKey<?> k : known) {
      get(k);
    }
  }

  @Override
  public String toString() {
    return values.toString();
  }
}
