package io.ember.spark;

import io.ember.testing.ShadedJars;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The shaded jar that goes onto Spark's class path carries clients only. */
class ShadedJarIT {
  @Test
  void carriesTheClientAndBothTiersButNoServer() throws Exception {
    ShadedJars.assertClientsOnly(
        Path.of(System.getProperty("ember.shaded.jar")),
        List.of(
            "io/ember/client/",
            "io/ember/spark/",
            "io/ember/tier/dram/",
            "io/ember/tier/nvmf/",
            "io/ember/shaded/io/netty/buffer/"));
  }
}
