package io.ember.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.minicluster.MiniCluster;
import io.ember.testing.ShadedJars;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar as a user drops it onto a Hadoop class path: Hadoop's own {@code hadoop fs}
 * (FsShell) in a separate JVM, with no other Ember jar and no Ember Netty beside it.
 */
class ShadedJarIT {
  @Test
  void carriesTheClientAndBothTiersButNoServer() throws Exception {
    ShadedJars.assertClientsOnly(
        Path.of(System.getProperty("ember.shaded.jar")),
        List.of(
            "io/ember/client/",
            "io/ember/hadoop/",
            "io/ember/tier/dram/",
            "io/ember/tier/nvmf/",
            "io/ember/nvmf/tcp/"));
  }

  @Test
  void hadoopFsWorksWithOnlyTheShadedJar(@TempDir Path tmp) throws Exception {
    Path jar = Path.of(System.getProperty("ember.shaded.jar"));
    assertTrue(Files.isRegularFile(jar), "no shaded jar at " + jar);
    try (ZipFile z = new ZipFile(jar.toFile())) {
      assertTrue(
          z.stream().noneMatch(e -> e.getName().startsWith("io/netty/")),
          "Netty is not relocated in " + jar);
      assertTrue(z.stream().anyMatch(e -> e.getName().startsWith("io/ember/shaded/io/netty/")));
      assertTrue(
          z.stream()
              .anyMatch(
                  e -> e.getName().equals("META-INF/services/org.apache.hadoop.fs.FileSystem")));
    }
    // Hadoop's jars from this JVM's class path, without any Ember module or test class.
    List<String> hadoopPath =
        Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(
                p ->
                    !p.contains("ember-")
                        && !p.endsWith("classes")
                        && !p.contains(
                            File.separator + "io" + File.separator + "ember" + File.separator))
            .collect(Collectors.toList());
    Path conf = Files.createDirectories(tmp.resolve("conf"));
    Files.writeString(conf.resolve("core-site.xml"), "<configuration/>");
    Path local = tmp.resolve("hello.txt");
    Files.writeString(local, "hello from the shaded jar\n");
    String cp =
        jar
            + File.pathSeparator
            + conf
            + File.pathSeparator
            + String.join(File.pathSeparator, hadoopPath);
    try (MiniCluster cluster = MiniCluster.builder().build()) {
      String fsUri = "ember://" + cluster.namenodeAddress() + "/";
      assertEquals(0, fsShell(cp, fsUri, tmp, "-put", local.toString(), "/hello.txt").exit);
      Result cat = fsShell(cp, fsUri, tmp, "-cat", "/hello.txt");
      assertEquals(0, cat.exit, cat.output);
      assertTrue(cat.output.contains("hello from the shaded jar"), cat.output);
      Result missing = fsShell(cp, fsUri, tmp, "-cat", "/missing");
      assertEquals(1, missing.exit, missing.output);
    }
  }

  private record Result(int exit, String output) {}

  private static Result fsShell(String cp, String fsUri, Path dir, String... args)
      throws Exception {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                cp,
                "org.apache.hadoop.fs.FsShell",
                "-fs",
                fsUri));
    cmd.addAll(List.of(args));
    Path out = dir.resolve("out-" + System.nanoTime());
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
    if (!p.waitFor(2, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("FsShell " + List.of(args) + " did not finish");
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
  }
}
