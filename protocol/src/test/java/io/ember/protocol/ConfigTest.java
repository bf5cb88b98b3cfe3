package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigTest {
  @Test
  void parsesSizesAndDurations() {
    assertEquals(4L << 30, ConfigKey.parseSize("4g"));
    assertEquals(512L << 10, ConfigKey.parseSize("512K"));
    assertEquals(1L << 20, ConfigKey.parseSize("1MiB"));
    assertEquals(100, ConfigKey.parseSize("100"));
    assertEquals("1m", ConfigKey.formatSize(1L << 20));
    assertEquals("1536k", ConfigKey.formatSize(1536L << 10));
    assertEquals(Duration.ofNanos(50_000), ConfigKey.parseDuration("50us"));
    assertEquals(Duration.ofMillis(500), ConfigKey.parseDuration("500ms"));
    assertEquals(Duration.ofSeconds(10), ConfigKey.parseDuration("10s"));
    assertEquals(Duration.ofMinutes(2), ConfigKey.parseDuration("2m"));
    // Callers catch IllegalArgumentException alone: an overflow must be one too.
    assertThrows(
        IllegalArgumentException.class, () -> ConfigKey.parseDuration("9223372036854775807us"));
    assertThrows(
        IllegalArgumentException.class, () -> ConfigKey.parseDuration("9223372036854775807h"));
  }

  @Test
  void defaultsApplyAndBadValuesNameTheKey() {
    EmberConfig c = EmberConfig.defaults();
    assertEquals(1L << 20, c.get(EmberKeys.BLOCK_SIZE));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> c.with(EmberKeys.BLOCK_SIZE, "lots"));
    assertTrue(e.getMessage().contains("ember.block-size"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> c.with(EmberKeys.BLOCK_SIZE, "1g"));
    assertThrows(IllegalArgumentException.class, () -> c.with(EmberKeys.RPC_TRANSPORT, "carrier"));
    assertThrows(
        IllegalArgumentException.class,
        () -> EmberConfig.of(Map.of("ember.rpc.timeout", "soon")).validate(EmberKeys.ALL));
  }

  @Test
  void booleansAreTrueOrFalseAndNothingElse() {
    EmberConfig c = EmberConfig.defaults();
    assertEquals(true, c.get(EmberKeys.METRICS_ENABLED));
    assertEquals(false, c.with(EmberKeys.METRICS_ENABLED, "FALSE").get(EmberKeys.METRICS_ENABLED));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> c.with(EmberKeys.METRICS_ENABLED, "off"));
    assertEquals("ember.metrics.enabled: 'off' is not true or false", e.getMessage());
  }

  @Test
  void reportsUnknownKeysFromAFile(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("ember.properties");
    Files.writeString(f, "ember.block-size=64k\nember.blok-size=1m\n");
    EmberConfig c = EmberConfig.load(f);
    assertEquals(64L << 10, c.get(EmberKeys.BLOCK_SIZE));
    assertEquals(List.of("ember.blok-size"), c.unknownKeys(EmberKeys.ALL));
  }

  @Test
  void hostPortForms() {
    assertEquals(new HostPort("h", 9060), HostPort.parse("h", 9060));
    assertEquals(new HostPort("h", 1), HostPort.parse("h:1", 9060));
    assertEquals(new HostPort("::1", 5), HostPort.parse("[::1]:5", 9060));
    assertEquals("[::1]:5", new HostPort("::1", 5).toString());
    assertThrows(IllegalArgumentException.class, () -> HostPort.parse("h:99999", 1));
    assertThrows(IllegalArgumentException.class, () -> HostPort.parse(":5", 1));
    assertThrows(IllegalArgumentException.class, () -> HostPort.parse("h:x", 1));
  }

  @Test
  void lifeCycleRefusesIllegalMoves() throws Exception {
    LifeCycle lc = new LifeCycle("svc");
    assertThrows(EmberException.class, lc::checkRunning);
    lc.beginStart();
    assertThrows(IllegalStateException.class, lc::beginStart);
    lc.started();
    lc.checkRunning();
    assertTrue(lc.beginClose());
    assertEquals(false, lc.beginClose());
    lc.closed();
    assertThrows(IllegalStateException.class, lc::beginStart);
  }
}
