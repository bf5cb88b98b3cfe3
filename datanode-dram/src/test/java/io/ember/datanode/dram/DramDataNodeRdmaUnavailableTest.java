package io.ember.datanode.dram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.rdma.RdmaSupport;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * A DRAM data node asked for the rdma transport where RDMA cannot run refuses to start, in one line
 * that says why, and leaves its port free. (Where RDMA runs, DramRdmaInVmTest in minicluster covers
 * the transport.)
 */
class DramDataNodeRdmaUnavailableTest {
  @Test
  void theRdmaTransportWithoutRdmaIsRefusedSayingWhy() throws Exception {
    var reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isPresent(), "RDMA can run here: nothing to refuse");
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    EmberConfig config =
        EmberConfig.defaults()
            .with(DramDataNodeKeys.CAPACITY, "1m")
            .with(DramDataNodeKeys.BIND_HOST, "127.0.0.1")
            .with(DramDataNodeKeys.PORT, Integer.toString(port))
            .with(DramDataNodeKeys.HTTP_PORT, "off")
            .with(DramDataNodeKeys.TRANSPORT, "rdma");
    EmberException e = assertThrows(EmberException.class, () -> DramDataNode.start(config));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("rdma transport cannot run here"), e.getMessage());
    assertTrue(e.getMessage().contains(reason.get()), e.getMessage());
    assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
    // The RPC port it had bound is free again: a TCP node takes it.
    try (DramDataNode tcp = DramDataNode.start(config.with(DramDataNodeKeys.TRANSPORT, "tcp"))) {
      assertEquals(DramDataNode.TIER, tcp.tier());
    }
  }
}
