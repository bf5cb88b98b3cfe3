package io.ember.nvmf;

import io.ember.nvmf.tcp.TcpController;
import java.lang.reflect.InvocationTargetException;
import java.util.List;

/**
 * Entry point of the host: connects to NVMe-oF controllers by URI.
 *
 * <pre>{@code
 * try (NvmfController c = NvmfHost.connect("nvmf+tcp://127.0.0.1:4420/nqn.2014-08.org.nvmexpress:test-target",
 *         NvmfHostOptions.builder().ioQueues(4).build())) {
 *     ByteBuffer buf = ByteBuffer.allocateDirect(4096);
 *     c.ioQueue(0).read(1, 0, buf).join();
 * }
 * }</pre>
 */
public final class NvmfHost {
  /** Class of the RDMA host, loaded by name so that a missing libdisni never breaks TCP users. */
  private static final String RDMA_HOST = "io.ember.nvmf.rdma.RdmaController";

  private NvmfHost() {}

  /**
   * Connects to the subsystem named by {@code uri} ({@code nvmf+tcp://host:port/subnqn[/nsid]} or
   * {@code nvmf+rdma://...}) and returns the enabled, identified controller with its I/O queues.
   *
   * @throws IllegalArgumentException when the URI is malformed
   * @throws NvmfException when the connection, the enable sequence or identify fails
   */
  public static NvmfController connect(String uri, NvmfHostOptions options) throws NvmfException {
    return connect(NvmfUri.parse(uri), options);
  }

  /** As {@link #connect(String, NvmfHostOptions)}. */
  public static NvmfController connect(NvmfUri uri, NvmfHostOptions options) throws NvmfException {
    switch (uri.transport()) {
      case "tcp":
        return TcpController.connect(uri, options);
      case "rdma":
        return connectRdma(uri, options);
      default:
        throw new IllegalArgumentException("unknown transport '" + uri.transport() + "' in " + uri);
    }
  }

  /**
   * Reads the discovery log page of the discovery controller at {@code host:port} over TCP.
   *
   * @throws NvmfException when the discovery controller cannot be reached or refuses
   */
  public static List<DiscoveryLogEntry> discover(String host, int port, NvmfHostOptions options)
      throws NvmfException {
    return TcpController.discover(host, port, options);
  }

  private static NvmfController connectRdma(NvmfUri uri, NvmfHostOptions options)
      throws NvmfException {
    try {
      Class<?> c = Class.forName(RDMA_HOST);
      return (NvmfController)
          c.getMethod("connect", NvmfUri.class, NvmfHostOptions.class).invoke(null, uri, options);
    } catch (ClassNotFoundException | NoSuchMethodException | IllegalAccessException e) {
      throw new NvmfException("the RDMA transport is not available in this build: " + e, e);
    } catch (InvocationTargetException e) {
      Throwable t = e.getCause();
      if (t instanceof NvmfException n) {
        throw n;
      }
      throw new NvmfException("RDMA connect to " + uri + " failed: " + t, t);
    } catch (LinkageError e) {
      throw new NvmfException(
          "the RDMA transport cannot load (jNVMf/DiSNI or libdisni missing): " + e, e);
    }
  }
}
