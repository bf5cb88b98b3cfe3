package io.ember.datanode.nvmf;

import io.ember.protocol.ConfigKey;
import java.util.List;

/** Configuration keys of the NVMf data node (the client's are in NvmfTierKeys). */
public final class NvmfDataNodeKeys {
  private NvmfDataNodeKeys() {}

  /** The target namespace the data node exports: nvmf+tcp://host:port/subsystem-nqn[/nsid]. */
  public static final ConfigKey<String> TARGET =
      ConfigKey.ofString(
          "ember.datanode.nvmf.target",
          "",
          s -> true,
          "an NVMf URI (nvmf+tcp://host:port/nqn[/nsid])",
          "target namespace the NVMf data node exports (empty: start an embedded target)");

  /** File backing the embedded target; empty means memory. */
  public static final ConfigKey<String> EMBEDDED_FILE =
      ConfigKey.ofString(
          "ember.datanode.nvmf.embedded-file",
          "",
          s -> true,
          "a file path",
          "file backing the embedded target's namespace (empty: memory)");

  /** Size of the embedded target's namespace. */
  public static final ConfigKey<Long> EMBEDDED_SIZE =
      ConfigKey.ofSize(
          "ember.datanode.nvmf.embedded-size",
          "1g",
          1L << 20,
          1L << 44,
          "size of the embedded target's namespace");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL = List.of(TARGET, EMBEDDED_FILE, EMBEDDED_SIZE);
}
