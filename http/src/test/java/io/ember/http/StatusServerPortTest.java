package io.ember.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class StatusServerPortTest {
  @Test
  void theHttpPortIsNextToTheRpcPortUnlessSetOrOff() {
    assertEquals(9061, StatusServer.port("auto", 9060));
    assertEquals(0, StatusServer.port("auto", 0), "any free port beside any free port");
    assertEquals(0, StatusServer.port("auto", 65535), "no port after the last");
    assertEquals(8080, StatusServer.port(" 8080 ", 9060));
    assertEquals(0, StatusServer.port("0", 9060));
    assertEquals(-1, StatusServer.port("off", 9060));
    assertThrows(IllegalArgumentException.class, () -> StatusServer.port("65536", 9060));
    assertThrows(IllegalArgumentException.class, () -> StatusServer.port("-1", 9060));
    assertThrows(IllegalArgumentException.class, () -> StatusServer.port("on", 9060));
    assertEquals(false, StatusServer.validPort("web"));
    assertEquals(true, StatusServer.validPort("auto"));
  }
}
