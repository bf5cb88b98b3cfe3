package io.ember.minicluster;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.client.CreateOptions;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.protocol.StorageClass;
import io.ember.rdma.RdmaSupport;
import java.util.Optional;

/**
 * The tiers a suite is bound to: the cluster each needs and where files go. The kernel binding
 * reaches the Linux kernel's NVMe/TCP target named by {@value #KERNEL_TARGET_ENV}; its test classes
 * skip, saying why, without it.
 */
enum TestTier {
  /** DRAM data nodes. */
  DRAM {
    @Override
    MiniCluster.Builder cluster(int nodes, String capacityEach) {
      return MiniCluster.builder().dramDatanodes(nodes).dramCapacity(capacityEach);
    }
  },
  /**
   * DRAM data nodes serving one-sided RDMA, bound to the RDMA device's address named by {@value
   * #RDMA_ADDRESS_ENV} (inside the kernel-nvmet VM, where soft-RoCE runs).
   */
  DRAM_RDMA {
    @Override
    MiniCluster.Builder cluster(int nodes, String capacityEach) {
      return MiniCluster.builder()
          .dramDatanodes(nodes)
          .dramCapacity(capacityEach)
          .set(DramDataNodeKeys.TRANSPORT, "rdma")
          .set(DramDataNodeKeys.BIND_HOST, System.getenv(RDMA_ADDRESS_ENV));
    }
  },
  /** NVMf data nodes, each over an embedded NVMe/TCP target in memory. */
  NVMF_EMBEDDED {
    @Override
    MiniCluster.Builder cluster(int nodes, String capacityEach) {
      MiniCluster.Builder b =
          MiniCluster.builder().dramDatanodes(0).set(NvmfDataNodeKeys.EMBEDDED_SIZE, capacityEach);
      for (int i = 0; i < nodes; i++) {
        b.nvmfDatanode("");
      }
      return b;
    }
  },
  /** One NVMf data node over the Linux kernel's target (it has one namespace to give). */
  NVMF_KERNEL {
    @Override
    MiniCluster.Builder cluster(int nodes, String capacityEach) {
      return MiniCluster.builder().dramDatanodes(0).nvmfDatanode(System.getenv(KERNEL_TARGET_ENV));
    }
  };

  static final String KERNEL_TARGET_ENV = "EMBER_TEST_NVMF_TARGET";

  /** An address of an RDMA device to bind DRAM data nodes to; DramRdmaInVmTest sets it. */
  static final String RDMA_ADDRESS_ENV = "EMBER_TEST_RDMA_ADDRESS";

  static final String NO_KERNEL_TARGET =
      KERNEL_TARGET_ENV
          + " is not set: no Linux kernel"
          + " NVMe/TCP target to test against (.ci/run starts one with ../shared/tools/kernel-nvmet)";

  /**
   * A cluster of {@code nodes} data nodes of this tier, each of {@code capacityEach} (the kernel
   * binding has one, of the target's size).
   */
  abstract MiniCluster.Builder cluster(int nodes, String capacityEach);

  /** Skips the calling test, saying why, where RDMA cannot run. */
  static void assumeRdmaRuns() {
    Optional<String> reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
  }

  /** Create options that put files on this tier. */
  CreateOptions options() {
    return this == DRAM || this == DRAM_RDMA
        ? CreateOptions.DEFAULT
        : CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF);
  }
}
