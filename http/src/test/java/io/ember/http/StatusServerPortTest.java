package io.ember.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Map;
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

  @Test
  void autoMovesToAFreePortWhenTheOneBesideRpcIsTakenAnExplicitPortFails() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      int rpcPort = taken.getLocalPort() - 1;
      StatusServer moved =
          StatusServer.startAsConfigured("t", Map.of(), "auto", "127.0.0.1", rpcPort);
      try {
        assertNotEquals(taken.getLocalPort(), moved.address().getPort());
      } finally {
        moved.close();
      }
      EmberException refused =
          assertThrows(
              EmberException.class,
              () ->
                  StatusServer.startAsConfigured(
                      "t", Map.of(), Integer.toString(taken.getLocalPort()), "127.0.0.1", 9060));
      assertEquals(ErrorCode.UNREACHABLE, refused.code());
      assertNull(StatusServer.startAsConfigured("t", Map.of(), "off", "127.0.0.1", 9060));
    }
  }
}
