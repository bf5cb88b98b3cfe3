package io.ember.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.zip.ZipFile;

/** Checks of a shaded jar that goes onto an application's class path (Hadoop's, Spark's). */
public final class ShadedJars {
  /** Packages of servers, and Netty unrelocated: an application's class path needs none. */
  public static final List<String> FORBIDDEN =
      List.of(
          "io/ember/namenode/",
          "io/ember/datanode/",
          "io/ember/nvmf/target/",
          "io/ember/minicluster/",
          "io/ember/cli/",
          "io/ember/benchmarks/",
          "io/netty/");

  private ShadedJars() {}

  /** The jar's packages that hold classes, as folder names ("io/ember/client/"). */
  public static Set<String> packages(Path jar) throws IOException {
    try (ZipFile z = new ZipFile(jar.toFile())) {
      return z.stream()
          .filter(e -> e.getName().endsWith(".class"))
          .map(e -> e.getName().substring(0, e.getName().lastIndexOf('/') + 1))
          .collect(Collectors.toCollection(TreeSet::new));
    }
  }

  /**
   * Asserts that {@code jar} holds each of the {@code expected} packages and nothing under {@link
   * #FORBIDDEN}.
   */
  public static void assertClientsOnly(Path jar, List<String> expected) throws IOException {
    assertTrue(Files.isRegularFile(jar), "no shaded jar at " + jar);
    Set<String> packages = packages(jar);
    for (String e : expected) {
      assertTrue(packages.contains(e), e + " missing from " + packages);
    }
    for (String server : FORBIDDEN) {
      assertTrue(
          packages.stream().noneMatch(p -> p.startsWith(server)),
          server + " in the shaded jar: " + packages);
    }
  }
}
