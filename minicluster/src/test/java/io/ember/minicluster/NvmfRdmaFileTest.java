package io.ember.minicluster;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.client.CreateOptions;
import io.ember.protocol.StorageClass;
import io.ember.rdma.RdmaSupport;
import java.util.Optional;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The file behaviour on the NVMf tier over RDMA: a name node, an NVMf data node and the client, the
 * data node and the client both reaching Linux's nvmet-rdma through {@code
 * EMBER_TEST_NVMF_RDMA_TARGET}. Run inside the kernel-nvmet VM (soft-RoCE) by {@link
 * NvmfRdmaInVmTest}; skipped, saying so, elsewhere.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_RDMA_TARGET",
    matches = ".+",
    disabledReason =
        "EMBER_TEST_NVMF_RDMA_TARGET is not set (an NVMe-oF/RDMA target; NvmfRdmaInVmTest sets it"
            + " inside the kernel-nvmet VM)")
class NvmfRdmaFileTest extends FileBehaviourTest {
  @Override
  MiniCluster startCluster() throws Exception {
    Optional<String> reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
    return MiniCluster.builder()
        .dramDatanodes(0)
        .blockSize(BLOCK_SIZE)
        .nvmfDatanode(System.getenv("EMBER_TEST_NVMF_RDMA_TARGET"))
        .build();
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
  }
}
