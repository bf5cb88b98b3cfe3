package io.ember.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

class OptionValuesTest {
  @Command(name = "probe")
  static final class Probe {}

  private final CommandSpec spec = new CommandLine(new Probe()).getCommandSpec();

  @Test
  void sizesAreReadAsTheConfigurationReadsThemAndCheckedAgainstTheirRange() {
    assertEquals(3L << 20, OptionValues.size(spec, "--size", "3m", 1 << 20, 1L << 30));
    assertEquals(1L << 30, OptionValues.size(spec, "--size", "1g", 1 << 20, 1L << 30));
    assertEquals(0, OptionValues.size(spec, "--size", "0", 0, Long.MAX_VALUE));
    assertEquals(
        "--size: 2g is not between 1m and 1g",
        assertThrows(
                ParameterException.class,
                () -> OptionValues.size(spec, "--size", "2g", 1 << 20, 1L << 30))
            .getMessage());
    assertEquals(
        "--size: 1023k is less than 1m",
        assertThrows(
                ParameterException.class,
                () -> OptionValues.size(spec, "--size", "1023k", 1 << 20, Long.MAX_VALUE))
            .getMessage());
    assertEquals(
        "--size: '99999999999t' is not a size such as 512m or 4g",
        assertThrows(
                ParameterException.class,
                () -> OptionValues.size(spec, "--size", "99999999999t", 0, Long.MAX_VALUE))
            .getMessage());
  }

  @Test
  void durationsAreCheckedAgainstTheirRangeWhichIsShownInItsLargestWholeUnit() {
    assertEquals(
        Duration.ofMillis(10),
        OptionValues.duration(spec, "--poll", "10ms", Duration.ZERO, Duration.ofSeconds(1)));
    assertEquals(
        "--poll: 1001ms is not between 0 and 1s",
        assertThrows(
                ParameterException.class,
                () ->
                    OptionValues.duration(
                        spec, "--poll", "1001ms", Duration.ZERO, Duration.ofSeconds(1)))
            .getMessage());
    assertEquals(
        "--poll: 10us is not between 200us and 90m",
        assertThrows(
                ParameterException.class,
                () ->
                    OptionValues.duration(
                        spec, "--poll", "10us", Duration.ofNanos(200_000), Duration.ofMinutes(90)))
            .getMessage());
    assertEquals("2h", OptionValues.shown(Duration.ofHours(2)));
    assertEquals("1500ms", OptionValues.shown(Duration.ofMillis(1500)));
    assertEquals(
        "--poll: '9223372036854775807h' is not a duration such as 10ms or 200us",
        assertThrows(
                ParameterException.class,
                () ->
                    OptionValues.duration(
                        spec, "--poll", "9223372036854775807h", Duration.ZERO, Duration.ofHours(1)))
            .getMessage());
  }
}
