package io.ember.minicluster;

import io.ember.client.CreateOptions;

/** The file behaviour on the DRAM tier, two data nodes. */
class DramFileTest extends FileBehaviourTest {
  @Override
  MiniCluster startCluster() throws Exception {
    return MiniCluster.builder().dramDatanodes(2).blockSize(BLOCK_SIZE).dramCapacity("16m")
        .build();
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT;
  }
}
