package io.ember.minicluster;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Runs a test only where an RDMA device's address is named for data nodes to bind ({@link
 * TestTier#RDMA_ADDRESS_ENV}, which {@link DramRdmaInVmTest} sets inside the kernel-nvmet VM), and
 * says why it skipped elsewhere.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@EnabledIfEnvironmentVariable(
    named = TestTier.RDMA_ADDRESS_ENV,
    matches = ".+",
    disabledReason =
        TestTier.RDMA_ADDRESS_ENV
            + " is not set (an RDMA device's address; DramRdmaInVmTest sets it inside the"
            + " kernel-nvmet VM)")
@interface RequiresRdmaAddress {}
