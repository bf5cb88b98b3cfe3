package io.ember.nvmf;

import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The behaviour suite against the embedded target with a file namespace (4 KiB blocks, O_DIRECT
 * where the temporary directory's file system allows it), with default target settings.
 */
class EmbeddedFileTargetTest extends NvmfHostBehaviourTest {
  static final String NQN = "nqn.2024-01.io.ember:file-test";
  private NvmfTarget target;
  private Path dir;

  @Override
  protected String targetUri() throws Exception {
    if (target == null) {
      dir = Files.createTempDirectory("nvmf-file-ns");
      Subsystem s = new Subsystem(NQN);
      s.addNamespace(new FileNamespace(dir.resolve("ns1.img"), 96L << 20, 4096, true));
      target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
    }
    return target.uri(NQN);
  }

  @Override
  protected void stopTarget() throws Exception {
    if (target != null) {
      target.close();
    }
    if (dir != null) {
      try (var files = Files.list(dir)) {
        for (Path p : (Iterable<Path>) files::iterator) {
          Files.delete(p);
        }
      }
      Files.delete(dir);
    }
  }
}
