package io.ember.minicluster;

import io.ember.client.CreateOptions;
import io.ember.protocol.StorageClass;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The file behaviour on the NVMf tier over the Linux kernel's NVMe/TCP target, found through {@code
 * EMBER_TEST_NVMF_TARGET} (nvmf+tcp://127.0.0.1:4420/nqn...; {@code .ci/run} starts one with
 * kernel-nvmet). Skipped, saying so, without it.
 */
@EnabledIfEnvironmentVariable(
    named = NvmfKernelFileTest.TARGET_ENV,
    matches = ".+",
    disabledReason =
        NvmfKernelFileTest.TARGET_ENV
            + " is not set: no Linux kernel NVMe/TCP target"
            + " to test against (.ci/run starts one with ../shared/tools/kernel-nvmet)")
class NvmfKernelFileTest extends FileBehaviourTest {
  static final String TARGET_ENV = "EMBER_TEST_NVMF_TARGET";

  @Override
  MiniCluster startCluster() throws Exception {
    return MiniCluster.builder()
        .dramDatanodes(0)
        .blockSize(BLOCK_SIZE)
        .nvmfDatanode(System.getenv(TARGET_ENV))
        .build();
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
  }
}
