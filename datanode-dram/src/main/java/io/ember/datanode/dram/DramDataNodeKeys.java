package io.ember.datanode.dram;

import io.ember.http.StatusServer;
import io.ember.protocol.ConfigKey;
import java.util.List;

/** Configuration keys of the DRAM data node. */
public final class DramDataNodeKeys {
  private DramDataNodeKeys() {}

  /** Bytes of memory the data node offers. */
  public static final ConfigKey<Long> CAPACITY =
      ConfigKey.ofSize(
          "ember.datanode.dram.capacity",
          "1g",
          4096,
          1L << 40,
          "bytes of memory the DRAM data node offers");

  /** The address the data node binds. */
  public static final ConfigKey<String> BIND_HOST =
      ConfigKey.ofString(
          "ember.datanode.bind-host",
          "0.0.0.0",
          s -> !s.isBlank(),
          "a host",
          "address the data node listens on");

  /** The port the data node binds; 0 lets the OS pick. */
  public static final ConfigKey<Integer> PORT =
      ConfigKey.ofInt(
          "ember.datanode.port", 0, 0, 65535, "port the data node listens on (0: any free port)");

  /**
   * The host clients and the name node are told to connect to; empty means the bind host, or this
   * machine's host name when binding every interface (which must then resolve on other hosts).
   */
  public static final ConfigKey<String> ADVERTISE_HOST =
      ConfigKey.ofString(
          "ember.datanode.advertise-host",
          "",
          s -> true,
          "a host",
          "host clients connect to (default: the bind host, or this machine's host name)");

  public static final ConfigKey<String> HTTP_PORT =
      ConfigKey.ofString(
          "ember.datanode.http-port",
          StatusServer.PORT_AUTO,
          StatusServer::validPort,
          "auto, off or a port",
          "port of the data node's status page and /metrics (auto: the RPC port + 1, or any free"
              + " port when that is 0; 0: any free port; off: none)");

  /**
   * Whether a large write's bytes go from the socket straight into the block ({@code true}), or
   * through a receive buffer first, as every other request's do ({@code false}). {@code auto}, the
   * default, lands them straight where the node can also set the socket's receive low-water mark
   * (the epoll transport on Linux 5.10 or later, on x86-64, ARM64 and other CPUs whose socket
   * options are numbered as asm-generic's): without the mark, the writers spent more CPU on waking
   * the node than the node saved. Off, and ignored, with TLS or SCRAM, where a write's bytes are
   * ciphertext or must wait for its block token's check.
   */
  public static final ConfigKey<String> DIRECT_WRITES =
      ConfigKey.ofString(
          "ember.datanode.dram.direct-writes",
          "auto",
          s ->
              s.equalsIgnoreCase("auto")
                  || s.equalsIgnoreCase("true")
                  || s.equalsIgnoreCase("false"),
          "auto, true or false",
          "writes over 64 KiB land in the block straight from the socket, without a copy (auto:"
              + " where the socket's receive low-water mark can be set)");

  /**
   * How clients reach the blocks: {@code tcp} (BLOCK_READ and BLOCK_WRITE frames), or {@code rdma}
   * (one-sided RDMA READ and WRITE to the registered region, which needs an RDMA device and
   * libdisni; TCP is still served, for clients without RDMA).
   */
  public static final ConfigKey<String> TRANSPORT =
      ConfigKey.ofString(
          "ember.datanode.dram.transport",
          "tcp",
          s -> s.equals("tcp") || s.equals("rdma"),
          "tcp or rdma",
          "how clients reach the blocks: tcp, or rdma (one-sided RDMA to the region)");

  /** The RDMA connection manager's port with the rdma transport; 0: the RPC port's number. */
  public static final ConfigKey<Integer> RDMA_PORT =
      ConfigKey.ofInt(
          "ember.datanode.dram.rdma-port",
          0,
          0,
          65535,
          "RDMA port clients connect to with the rdma transport (0: the same number as the RPC"
              + " port)");

  /** Every key of this class. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          CAPACITY,
          BIND_HOST,
          PORT,
          ADVERTISE_HOST,
          HTTP_PORT,
          DIRECT_WRITES,
          TRANSPORT,
          RDMA_PORT);
}
