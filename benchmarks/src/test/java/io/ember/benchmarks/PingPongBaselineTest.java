package io.ember.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The ping-pong baselines answer in both forms, and the forced one cleans up its file. */
class PingPongBaselineTest {
  private static List<Path> forcedLogs() throws IOException {
    List<Path> found = new ArrayList<>();
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    try (DirectoryStream<Path> d = Files.newDirectoryStream(tmp, "ember-ping-pong-*.log")) {
      d.forEach(found::add);
    }
    return found;
  }

  @Test
  void aForcedConnectionWritesEachRequestToItsOwnFileAndRemovesItAtTheEnd() throws Exception {
    List<Path> before = forcedLogs();
    try (PingPongBaseline pingPong = new PingPongBaseline();
        PingPongBaseline.Connection plain = pingPong.connect(100, 200);
        PingPongBaseline.Connection forced = pingPong.connect(100, 200, true)) {
      for (int i = 0; i < 3; i++) {
        plain.roundTrip();
        forced.roundTrip();
      }
      List<Path> during = forcedLogs();
      during.removeAll(before);
      assertEquals(1, during.size(), "one file for the one forced connection: " + during);
      // Written ahead as the journal is, so a force changes no size.
      assertEquals(8L << 20, Files.size(during.get(0)));
    }
    long deadline = System.nanoTime() + 60_000_000_000L;
    List<Path> after = forcedLogs();
    after.removeAll(before);
    while (!after.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20);
      after = forcedLogs();
      after.removeAll(before);
    }
    assertTrue(after.isEmpty(), "left behind: " + after);
  }
}
