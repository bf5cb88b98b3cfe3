package io.ember.namenode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.NameNodeLink;
import io.ember.protocol.RpcClients;
import io.ember.protocol.StorageClass;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A data node's link against a real name node over loopback, with heartbeats slower than the
 * name node's timeout: the node is marked lost between heartbeats, and each time registers again
 * as the same node rather than as a new one with none of its blocks.
 */
class NameNodeLinkTest {
  private static Messages.ClassUsage dram(RpcClients rpc, HostPort nn) throws Exception {
    return Futures.await(rpc.get(nn, "name node").thenCompose(c -> c.call(MessageType.DF,
            Message.EMPTY, Messages.DfResponse::decode)))
        .classes().stream().filter(u -> u.storageClass().equals(StorageClass.DRAM))
        .findFirst().orElseThrow();
  }

  @Test
  void lateHeartbeatsKeepTheNodeAndHealthLossMakesANewOne() throws Exception {
    EmberConfig config = EmberConfig.defaults()
        .with(NameNodeKeys.DATANODE_TIMEOUT, "200ms")
        .with(EmberKeys.HEARTBEAT_INTERVAL, "700ms");
    AtomicBoolean healthy = new AtomicBoolean(true);
    try (NameNode nn = NameNode.start(config, "127.0.0.1", 0);
         RpcClients rpc = new RpcClients(config, "test", 1)) {
      HostPort address = new HostPort("127.0.0.1", nn.address().getPort());
      EmberConfig linkConfig = config.with(EmberKeys.NAMENODE_ADDRESS, address.toString());
      try (NameNodeLink link = new NameNodeLink(linkConfig, "test node",
          new Messages.RegisterRequest(StorageClass.DRAM, "dram", "127.0.0.1:1", 8L << 20, false),
          slots -> List.of(), healthy::get, new NameNodeLink.MemoryStamp())) {
        link.start();
        int id = link.datanodeId();
        assertTrue(id >= 0);
        // Several rounds of lost (timeout 200 ms) and registering again (every 700 ms).
        Thread.sleep(2_600);
        assertEquals(id, link.datanodeId());
        Messages.ClassUsage usage = dram(rpc, address);
        assertEquals(1, usage.liveNodes() + usage.lostNodes(), "one node, not one per return");

        // A node that could not serve its blocks cannot vouch for them: it comes back as new.
        healthy.set(false);
        Thread.sleep(1_000);
        healthy.set(true);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while ((link.datanodeId() < 0 || link.datanodeId() == id)
            && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        assertTrue(link.datanodeId() > id, "registered as " + link.datanodeId());
      }
    }
  }
}
