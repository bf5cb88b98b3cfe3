package io.ember.nvmf.rdma;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** Runs a test only where {@link RdmaVm} has a VM to run in, and says why it skipped elsewhere. */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@EnabledIfEnvironmentVariable(
    named = "EMBER_TEST_RDMA_VM",
    matches = "[0-9]+",
    disabledReason =
        "EMBER_TEST_RDMA_VM is not set (the port of a kernel-nvmet VM started with --rdma;"
            + " .ci/run starts one)")
public @interface RequiresRdmaVm {}
