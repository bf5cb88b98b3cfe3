package io.ember.minicluster;

import io.ember.client.CreateOptions;
import io.ember.protocol.EmberKeys;

/**
 * The file behaviour on the DRAM tier, two data nodes, over Netty's native epoll transport (what
 * servers and the unshaded client use on Linux).
 */
class DramFileTest extends FileBehaviourTest {
  @Override
  MiniCluster startCluster() throws Exception {
    return MiniCluster.builder()
        .dramDatanodes(2)
        .blockSize(BLOCK_SIZE)
        .dramCapacity("16m")
        .set(EmberKeys.RPC_TRANSPORT, transport())
        .build();
  }

  /** The Netty transport of every server and client of the cluster. */
  String transport() {
    return "epoll";
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT;
  }
}
