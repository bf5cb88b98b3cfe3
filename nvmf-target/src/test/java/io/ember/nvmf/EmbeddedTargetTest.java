package io.ember.nvmf;

import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;

/**
 * The behaviour suite against the embedded target with a memory namespace. MAXH2CDATA, the C2HData
 * chunk and MDTS are set small so that splitting on both sides is exercised with modest transfer
 * sizes.
 */
class EmbeddedTargetTest extends NvmfHostBehaviourTest {
  static final String NQN = "nqn.2024-01.io.ember:embedded-test";
  private NvmfTarget target;

  @Override
  protected String targetUri() throws Exception {
    if (target == null) {
      Subsystem s = new Subsystem(NQN);
      s.addNamespace(new MemoryNamespace(128L << 20, 512));
      target =
          configure(
                  NvmfTarget.builder()
                      .listen("127.0.0.1", 0)
                      .subsystem(s)
                      .maxH2CData(24 * 1024)
                      .c2hDataChunk(40 * 1024)
                      .inCapsuleDataSize(8192)
                      .mdts(6))
              .build()
              .start();
    }
    return target.uri(NQN);
  }

  /** The target's settings beyond the small transfer sizes: none here. */
  protected NvmfTarget.Builder configure(NvmfTarget.Builder b) {
    return b;
  }

  @Override
  protected void stopTarget() {
    if (target != null) {
      target.close();
    }
  }
}
