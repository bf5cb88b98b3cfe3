package io.ember.minicluster;

import io.ember.client.CreateOptions;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.protocol.StorageClass;

/** The file behaviour on the NVMf tier, over two embedded NVMe/TCP targets on loopback. */
class NvmfEmbeddedFileTest extends FileBehaviourTest {
  @Override
  MiniCluster startCluster() throws Exception {
    return MiniCluster.builder()
        .dramDatanodes(0)
        .blockSize(BLOCK_SIZE)
        .set(NvmfDataNodeKeys.EMBEDDED_SIZE, "16m")
        .nvmfDatanode("")
        .nvmfDatanode("")
        .build();
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
  }
}
