package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.protocol.EmberConfig;
import org.junit.jupiter.api.Test;

class NameNodeKeysTest {
  @Test
  void theHttpPortIsNextToTheRpcPortUnlessSetOrOff() {
    assertEquals(9061, NameNodeKeys.httpPort("auto", 9060));
    assertEquals(0, NameNodeKeys.httpPort("auto", 0), "any free port beside any free port");
    assertEquals(0, NameNodeKeys.httpPort("auto", 65535), "no port after the last");
    assertEquals(8080, NameNodeKeys.httpPort(" 8080 ", 9060));
    assertEquals(0, NameNodeKeys.httpPort("0", 9060));
    assertEquals(-1, NameNodeKeys.httpPort("off", 9060));
    assertThrows(IllegalArgumentException.class, () -> NameNodeKeys.httpPort("65536", 9060));
    assertThrows(IllegalArgumentException.class, () -> NameNodeKeys.httpPort("-1", 9060));
    assertThrows(IllegalArgumentException.class, () -> NameNodeKeys.httpPort("on", 9060));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> EmberConfig.defaults().with(NameNodeKeys.HTTP_PORT, "web"));
    assertEquals("ember.namenode.http-port: 'web' is not auto, off or a port", e.getMessage());
  }
}
