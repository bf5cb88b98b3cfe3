package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.rdma.RdmaSupport;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The RDMA transport at its seam: what works without an RDMA device or libdisni. */
class RdmaSeamTest {
  @Test
  void withoutRdmaConnectFailsWithAReasonNotALinkageError() {
    Optional<String> reason = RdmaSupport.unavailableReason();
    assumeTrue(reason.isPresent(), "this machine has RDMA; the failure path is not reachable");
    NvmfException e =
        assertThrows(
            NvmfException.class,
            () ->
                NvmfHost.connect(
                    "nvmf+rdma://127.0.0.1:4420/nqn.2014-08.org.nvmexpress:test-target",
                    NvmfHostOptions.defaults()));
    assertTrue(e.getMessage().contains(reason.get()), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
  }

  @Test
  void tcpHostWorksWithoutLoadingDisni() throws Exception {
    // NvmfHost and the TCP classes must not link against DiSNI: load them in a class loader that
    // hides
    // com.ibm.* and make sure they initialise.
    ClassLoader parent = getClass().getClassLoader();
    ClassLoader hiding =
        new ClassLoader(parent) {
          @Override
          protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.startsWith("com.ibm.")) {
              throw new ClassNotFoundException(name + " hidden by the test");
            }
            if (name.startsWith("io.ember.nvmf.")) {
              synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                  String res = name.replace('.', '/') + ".class";
                  try (var in = parent.getResourceAsStream(res)) {
                    byte[] b = in.readAllBytes();
                    c = defineClass(name, b, 0, b.length);
                  } catch (java.io.IOException e) {
                    throw new ClassNotFoundException(name, e);
                  }
                }
                return c;
              }
            }
            return super.loadClass(name, resolve);
          }
        };
    for (String n :
        new String[] {
          "io.ember.nvmf.NvmfHost",
          "io.ember.nvmf.tcp.TcpController",
          "io.ember.nvmf.tcp.TcpQueue",
          "io.ember.nvmf.target.NvmfTarget",
          "io.ember.nvmf.target.TargetConnection"
        }) {
      Class<?> c = Class.forName(n, true, hiding);
      for (var m : c.getDeclaredMethods()) {
        m.getParameterTypes(); // forces resolution of signatures
      }
    }
    Class<?> host = Class.forName("io.ember.nvmf.NvmfHost", true, hiding);
    var connect =
        host.getMethod(
            "connect", String.class, Class.forName("io.ember.nvmf.NvmfHostOptions", true, hiding));
    Object opts =
        Class.forName("io.ember.nvmf.NvmfHostOptions", true, hiding)
            .getMethod("defaults")
            .invoke(null);
    var ex =
        assertThrows(
            java.lang.reflect.InvocationTargetException.class,
            () ->
                connect.invoke(
                    null, "nvmf+rdma://127.0.0.1:4420/nqn.2014-08.org.nvmexpress:x", opts));
    assertEquals(
        "io.ember.nvmf.NvmfException",
        ex.getCause().getClass().getName(),
        "a missing DiSNI surfaces as an NvmfException: " + ex.getCause());
  }
}
