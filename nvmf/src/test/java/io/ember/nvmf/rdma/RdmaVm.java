package io.ember.nvmf.rdma;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs JUnit test classes inside the kernel-nvmet VM started with {@code --rdma}, where soft-RoCE
 * and Linux's nvmet-rdma run: through {@code kernel-nvmet exec -- chroot /host}, with the calling
 * build's test class path (the VM sees the host's files under {@code /host}). Reads {@code
 * EMBER_TEST_RDMA_VM} (the VM's port), {@code EMBER_TEST_KNVMET} (the tool) and {@code
 * EMBER_TEST_LIBDISNI} (the folder holding libdisni.so); {@code .ci/run} sets all three.
 */
public final class RdmaVm {
  /** The RDMA port Linux's nvmet-rdma listens on inside the VM (see kernel-nvmet's README). */
  public static final String VM_TARGET =
      "nvmf+rdma://10.0.2.15:4420/nqn.2014-08.org.nvmexpress:test-target";

  /** The VM's address on its soft-RoCE device, for servers that listen for RDMA there. */
  public static final String VM_ADDRESS = "10.0.2.15";

  private RdmaVm() {}

  /** Runs the given test classes in the VM and returns the console launcher's output. */
  public static String runInVm(List<String> classes) throws IOException, InterruptedException {
    String port = System.getenv("EMBER_TEST_RDMA_VM");
    String tool = System.getenv("EMBER_TEST_KNVMET");
    String lib = System.getenv("EMBER_TEST_LIBDISNI");
    assumeTrue(tool != null && new File(tool).canExecute(), "EMBER_TEST_KNVMET names no tool");
    assumeTrue(lib != null, "EMBER_TEST_LIBDISNI is not set (the folder holding libdisni.so)");
    lib = libraryFolder(Path.of(lib));
    String cp =
        freshCopies(
            System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    StringBuilder select = new StringBuilder();
    for (String c : classes) {
      select.append(" --select-class ").append(c);
    }
    String inner =
        "cd "
            + new File(".").getAbsolutePath()
            + " && EMBER_TEST_NVMF_RDMA_TARGET="
            + VM_TARGET
            + " EMBER_TEST_NVMET_RDMA_PORT=/sys/kernel/config/nvmet/ports/2"
            + " EMBER_TEST_RDMA_ADDRESS="
            + VM_ADDRESS
            + " java -Xmx384m --add-exports java.base/sun.nio.ch=ALL-UNNAMED"
            + " -Djava.library.path="
            + lib
            + " -cp "
            + cp
            + " org.junit.platform.console.ConsoleLauncher --disable-banner --disable-ansi-colors"
            + " --details=tree --fail-if-no-tests --config=junit.jupiter.execution.timeout.default=3m"
            + select;
    Path log = Files.createTempFile("rdma-in-vm", ".log");
    List<String> paths = new ArrayList<>(List.of(cp.split(File.pathSeparator, -1)));
    paths.add(new File(".").getAbsolutePath());
    paths.add(lib);
    Process p =
        new ProcessBuilder(
                tool,
                "exec",
                "--port",
                port,
                "--",
                hostMounts(paths) + "chroot /host /bin/sh -c '" + inner + "'")
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    if (!p.waitFor(25, TimeUnit.MINUTES)) {
      p.destroyForcibly();
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    Files.deleteIfExists(log);
    System.out.println(out);
    return out;
  }

  /**
   * Commands that make the host's folders under /tmp and /run visible in the VM's chroot, where
   * both are fresh, empty file systems (see kernel-nvmet's README): a checkout or build under /tmp
   * would otherwise not be found there. Each top folder used is bound, read-only, from the host.
   */
  public static String hostMounts(List<String> paths) {
    Set<String> tops = new TreeSet<>();
    for (String path : paths) {
      for (String root : List.of("/tmp/", "/run/")) {
        if (path.startsWith(root) && path.length() > root.length()) {
          String rest = path.substring(root.length());
          int slash = rest.indexOf('/');
          tops.add(root + (slash < 0 ? rest : rest.substring(0, slash)));
        }
      }
    }
    StringBuilder cmd = new StringBuilder();
    for (String top : tops) {
      cmd.append("mkdir -p /host")
          .append(top)
          .append(" && mount --bind /mnt/lower")
          .append(top)
          .append(" /host")
          .append(top)
          .append(" && ");
    }
    return cmd.toString();
  }

  /**
   * The class path with this build's own entries (class folders, snapshot jars) copied to new
   * paths: the VM sees the host's files through 9p with loose caching, so a file rebuilt in place
   * may still read as its old self there.
   */
  public static String freshCopies(String classPath) throws IOException {
    Path root = Files.createDirectories(Path.of("target", "vm-classpath-" + System.nanoTime()));
    StringBuilder out = new StringBuilder();
    int i = 0;
    for (String entry : List.of(classPath.split(File.pathSeparator, -1))) {
      if (entry.isEmpty()) {
        continue;
      }
      Path src = Path.of(entry);
      String use = entry;
      if (Files.isDirectory(src)) {
        Path dst = root.resolve(Integer.toString(i++));
        try (var walk = Files.walk(src)) {
          for (Path f : (Iterable<Path>) walk::iterator) {
            Path t = dst.resolve(src.relativize(f).toString());
            if (Files.isDirectory(f)) {
              Files.createDirectories(t);
            } else {
              Files.copy(f, t);
            }
          }
        }
        use = dst.toAbsolutePath().toString();
      } else if (entry.contains("SNAPSHOT") && Files.isRegularFile(src)) {
        Path dst = root.resolve(i++ + "-" + src.getFileName());
        Files.copy(src, dst);
        use = dst.toAbsolutePath().toString();
      }
      out.append(out.length() == 0 ? "" : File.pathSeparator).append(use);
    }
    return out.toString();
  }

  /**
   * A folder whose libdisni.so is the library itself: a copy of the folder's one ELF file, because
   * a checkout may hold the versioned names' symbolic links as plain text files.
   */
  static String libraryFolder(Path dir) throws IOException {
    for (String name : List.of("libdisni.so", "libdisni.so.0", "libdisni.so.0.0.0")) {
      Path f = dir.resolve(name);
      if (Files.isRegularFile(f) && Files.size(f) > 4) {
        byte[] head = new byte[4];
        try (var in = Files.newInputStream(f)) {
          if (in.read(head) == 4 && head[0] == 0x7F && head[1] == 'E' && head[2] == 'L') {
            Path copy = Files.createDirectories(Path.of("target", "libdisni-" + System.nanoTime()));
            Files.copy(f, copy.resolve("libdisni.so"));
            return copy.toAbsolutePath().toString();
          }
        }
      }
    }
    throw new IOException("no libdisni library (an ELF file) in " + dir);
  }

  /**
   * Starts {@code main} with {@code args} in a new JVM on this one's class path, with what DiSNI
   * needs (the JVM flag and this JVM's library path), its output and errors merged: a second
   * process for tests that kill a client.
   */
  public static Process startJvm(Class<?> main, String... args) throws IOException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--add-exports",
                "java.base/sun.nio.ch=ALL-UNNAMED",
                "-Djava.library.path=" + System.getProperty("java.library.path"),
                "-cp",
                System.getProperty("java.class.path"),
                main.getName()));
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  /**
   * Reads {@code child}'s output until a line equal to {@code line}; returns whether it came, and
   * what came before it through {@code seen}.
   */
  public static boolean awaitLine(Process child, String line, StringBuilder seen)
      throws IOException {
    BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    String got;
    while ((got = out.readLine()) != null) {
      if (got.equals(line)) {
        return true;
      }
      seen.append(got).append('\n');
    }
    return false;
  }

  /** The number in the launcher's summary line "[ N name ]", or -1 without it. */
  public static long count(String out, String name) {
    Matcher m = Pattern.compile("\\[\\s*(\\d+) " + Pattern.quote(name) + "\\s*\\]").matcher(out);
    return m.find() ? Long.parseLong(m.group(1)) : -1;
  }
}
