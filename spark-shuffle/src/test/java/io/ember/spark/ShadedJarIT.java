package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/** The shaded jar that goes onto Spark's class path carries clients only. */
class ShadedJarIT {
  @Test
  void carriesTheClientAndBothTiersButNoServer() throws Exception {
    Path jar = Path.of(System.getProperty("ember.shaded.jar"));
    assertTrue(Files.isRegularFile(jar), "no shaded jar at " + jar);
    Set<String> packages;
    try (ZipFile z = new ZipFile(jar.toFile())) {
      packages =
          z.stream()
              .filter(e -> e.getName().endsWith(".class"))
              .map(e -> e.getName().substring(0, e.getName().lastIndexOf('/') + 1))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    for (String expected :
        List.of(
            "io/ember/client/",
            "io/ember/spark/",
            "io/ember/tier/dram/",
            "io/ember/tier/nvmf/",
            "io/ember/shaded/io/netty/")) {
      assertTrue(
          packages.stream().anyMatch(p -> p.startsWith(expected)),
          expected + " missing from " + packages);
    }
    for (String server :
        List.of(
            "io/ember/namenode/",
            "io/ember/datanode/",
            "io/ember/nvmf/target/",
            "io/ember/minicluster/",
            "io/netty/")) {
      assertTrue(
          packages.stream().noneMatch(p -> p.startsWith(server)),
          server + " in the shaded jar: " + packages);
    }
  }
}
