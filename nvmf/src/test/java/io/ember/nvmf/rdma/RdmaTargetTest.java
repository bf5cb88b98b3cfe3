package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmeStatusException;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The RDMA host against a real NVMe-oF/RDMA target named by {@code EMBER_TEST_NVMF_RDMA_TARGET}
 * (e.g. {@code nvmf+rdma://192.168.0.2:4420/nqn...}). Skipped, with the reason, without the
 * variable, an RDMA device or libdisni.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_NVMF_RDMA_TARGET",
    matches = ".+",
    disabledReason =
        "EMBER_TEST_NVMF_RDMA_TARGET is not set (nvmf+rdma://host:port/subnqn of an RDMA target)")
class RdmaTargetTest {
  NvmfController c;
  IdentifyNamespace ns;

  @BeforeAll
  void connect() throws Exception {
    Optional<String> reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isEmpty(), () -> "RDMA unavailable: " + reason.orElse(""));
    c =
        NvmfHost.connect(
            System.getenv("EMBER_TEST_NVMF_RDMA_TARGET"),
            NvmfHostOptions.builder().ioQueues(2).ioQueueSize(64).build());
    ns = c.namespaces().get(0);
  }

  @AfterAll
  void close() {
    if (c != null) {
      c.close();
    }
  }

  @Test
  void writeReadPatternsAtDepth() throws Exception {
    Random r = new Random(1);
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    List<ByteBuffer> data = new ArrayList<>();
    int len = 4096;
    for (int i = 0; i < 64; i++) {
      ByteBuffer b = ByteBuffer.allocateDirect(len);
      byte[] p = new byte[len];
      r.nextBytes(p);
      b.put(p).flip();
      data.add(b);
      fs.add(c.ioQueue(i % 2).write(ns.nsid(), (long) i * len / ns.blockSize(), b));
    }
    for (CompletableFuture<Void> f : fs) {
      f.get(30, TimeUnit.SECONDS);
    }
    for (int i = 0; i < 64; i++) {
      ByteBuffer back = ByteBuffer.allocateDirect(len);
      c.ioQueue((i + 1) % 2)
          .read(ns.nsid(), (long) i * len / ns.blockSize(), back)
          .get(30, TimeUnit.SECONDS);
      byte[] want = new byte[len];
      data.get(i).duplicate().get(want);
      byte[] got = new byte[len];
      back.get(got);
      assertArrayEquals(want, got, "block group " + i);
    }
  }

  @Test
  void lbaOutOfRangeIsAStatus() {
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () ->
                c.ioQueue(0)
                    .read(ns.nsid(), ns.size(), ByteBuffer.allocateDirect(ns.blockSize()))
                    .get(30, TimeUnit.SECONDS));
    assertEquals(NvmeStatusException.class, e.getCause().getClass(), String.valueOf(e.getCause()));
  }
}
