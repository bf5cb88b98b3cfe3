package io.ember.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NvmfUriTest {
  @Test
  void parsesAllParts() {
    NvmfUri u = NvmfUri.parse("nvmf+tcp://10.0.0.1:4421/nqn.2014-08.org.nvmexpress:test-target/3");
    assertEquals(
        new NvmfUri("tcp", "10.0.0.1", 4421, "nqn.2014-08.org.nvmexpress:test-target", 3), u);
    assertEquals("nvmf+tcp://10.0.0.1:4421/nqn.2014-08.org.nvmexpress:test-target/3", u.toString());
  }

  @Test
  void defaultsPortAndNamespace() {
    NvmfUri u = NvmfUri.parse("nvmf+rdma://[::1]/nqn.2024-01.io.ember:x");
    assertEquals("rdma", u.transport());
    assertEquals(4420, u.port());
    assertEquals(0, u.nsid());
    assertEquals("nvmf+rdma://[::1]:4420/nqn.2024-01.io.ember:x", u.toString());
  }

  @Test
  void rejectsWhatIsNotAnNvmfUri() {
    for (String bad :
        new String[] {
          "http://h/nqn.x",
          "nvmf+tcp://h:1/",
          "nvmf+tcp://h:1/nqn.x/abc",
          "nvmf+tcp:///nqn.x",
          "not a uri at all"
        }) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> NvmfUri.parse(bad));
      assertTrue(e.getMessage().length() < 200 && !e.getMessage().contains("\n"), e.getMessage());
    }
  }

  @Test
  void statusWordsCoverConnectCodes() {
    NvmeStatusException e =
        new NvmeStatusException("Fabrics Connect qid 0", (1 << 8) | 0x84 | (1 << 14), true);
    assertEquals(
        "Fabrics Connect qid 0 failed: Connect Invalid Host (SCT 0x1 Command Specific Status, "
            + "SC 0x84, do not retry)",
        e.getMessage());
    NvmeStatusException w = new NvmeStatusException("Write", 0x80, false);
    assertTrue(w.getMessage().contains("LBA Out of Range"), w.getMessage());
  }
}
