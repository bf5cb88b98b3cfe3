package io.ember.rdma;

import java.io.File;
import java.util.Optional;

/**
 * Whether the RDMA transport can run here. Touches no DiSNI class, so it is safe to call where
 * neither libdisni nor an RDMA device exists.
 */
public final class RdmaSupport {
  private RdmaSupport() {}

  /** Empty when RDMA looks usable, else why not, in one line. */
  public static Optional<String> unavailableReason() {
    File ib = new File("/sys/class/infiniband");
    String[] devices = ib.list();
    if (devices == null || devices.length == 0) {
      return Optional.of("no RDMA device (/sys/class/infiniband is empty or missing)");
    }
    if (!Object.class.getModule().isExported("sun.nio.ch", RdmaSupport.class.getModule())) {
      return Optional.of(
          "DiSNI needs the JVM flag --add-exports java.base/sun.nio.ch=ALL-UNNAMED"
              + " (bin/ember sets it; add it to your java command line)");
    }
    try {
      System.loadLibrary("disni");
    } catch (UnsatisfiedLinkError e) {
      return Optional.of(
          "libdisni is not on java.library.path ("
              + System.getProperty("java.library.path")
              + "; build it from DiSNI's source, see README's RDMA section): "
              + e.getMessage());
    } catch (SecurityException e) {
      return Optional.of("loading libdisni is not permitted: " + e.getMessage());
    }
    return Optional.empty();
  }
}
