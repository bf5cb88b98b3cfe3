package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.NvmfHostBehaviourTest;
import io.ember.rdma.RdmaSupport;
import java.util.Optional;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The host's behaviour suite over RDMA, against a real NVMe-oF/RDMA target named by {@code
 * EMBER_TEST_NVMF_RDMA_TARGET} (Linux's nvmet-rdma over soft-RoCE in the kernel-nvmet VM: {@code
 * nvmf+rdma://10.0.2.15:4420/nqn.2014-08.org.nvmexpress:test-target}, run inside the VM by {@link
 * RdmaInVmTest}). Skipped, with the reason, without the variable, an RDMA device or libdisni.
 */
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_RDMA_TARGET",
    matches = ".+",
    disabledReason =
        "EMBER_TEST_NVMF_RDMA_TARGET is not set (nvmf+rdma://host:port/subnqn of an RDMA target;"
            + " RdmaInVmTest sets it inside the kernel-nvmet VM)")
class RdmaKernelTargetTest extends NvmfHostBehaviourTest {
  @Override
  protected String targetUri() {
    Optional<String> reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
    return System.getenv("EMBER_TEST_NVMF_RDMA_TARGET");
  }

  @Override
  protected boolean strictLbaRangeCheck() {
    // nvmet's bdev back end leaves the range check to the block layer and answers Internal Error.
    return false;
  }
}
