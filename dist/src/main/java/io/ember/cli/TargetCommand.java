package io.ember.cli;

import io.ember.benchmarks.OptionValues;
import io.ember.nvmf.NvmfUri;
import io.ember.nvmf.target.FileNamespace;
import io.ember.nvmf.target.HostKeys;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.Namespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import io.ember.protocol.Addresses;
import io.ember.protocol.ConfigKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code ember target}: the embedded NVMe/TCP target as a server of its own, for a storage host
 * with neither the kernel's target nor SPDK. NVMf data nodes and clients on other hosts connect to
 * the URIs it prints.
 */
@Command(
    name = "target",
    mixinStandardHelpOptions = true,
    description = {
      "Run an NVMe/TCP target serving file or memory namespaces until Ctrl-C (or SIGTERM, which"
          + " closes every connection and flushes the files first).",
      "Example: ember target --nqn nqn.2026-11.io.ember:disk1 --namespace"
          + " file:/data/ns1.img:8g --namespace memory:1g"
    })
final class TargetCommand implements Callable<Integer> {
  /** The NQN served when none is given. */
  static final String DEFAULT_NQN = "nqn.2026-11.io.ember:target";

  @Spec CommandSpec spec;

  @Option(
      names = "--bind",
      paramLabel = "HOST",
      description = "address to listen on (default 0.0.0.0: every interface)")
  String bind = "0.0.0.0";

  @Option(
      names = "--port",
      paramLabel = "PORT",
      description = "port to listen on (default 4420, NVMe/TCP's; 0: any free port)")
  int port = 4420;

  @Option(
      names = "--advertise",
      paramLabel = "HOST",
      description =
          "host named in the printed URIs, the one data nodes and clients connect to (default:"
              + " the bind address, or this machine's host name when binding every interface)")
  String advertise;

  @Option(
      names = "--nqn",
      paramLabel = "NQN",
      description = "the subsystem's NQN (default " + DEFAULT_NQN + ")")
  String nqn = DEFAULT_NQN;

  @Option(
      names = "--namespace",
      paramLabel = "file:PATH:SIZE|memory:SIZE",
      required = true,
      description =
          "a namespace, numbered from 1 in the order given (repeatable): a file, created when"
              + " missing and grown to SIZE (never shrunk), or memory, lost at stop; SIZE like 8g"
              + " or 512m")
  List<String> namespaces = new ArrayList<>();

  @Option(
      names = "--allow-host",
      paramLabel = "HOSTNQN",
      description = "a host NQN allowed to connect (repeatable; default: any host)")
  List<String> allowedHosts = new ArrayList<>();

  private static final long HOSTS_FILE_POLL_MILLIS = 1000;

  @Option(
      names = "--hosts-file",
      paramLabel = "FILE",
      description =
          "hosts that must authenticate in-band (DH-HMAC-CHAP), one per line: HOSTNQN HOST-SECRET"
              + " [CTRL-SECRET] [hash=sha512,...] [group=ffdhe2048,...]; only they (and any"
              + " --allow-host) may connect. Secrets come from ember security dhchap-key or nvme"
              + " gen-dhchap-key. The file is read again when it changes: queues that connect"
              + " from then on prove the new keys")
  Path hostsFile;

  @Option(
      names = "--block-size",
      paramLabel = "BYTES",
      description = "logical block size of every namespace in bytes (default 4096)")
  int blockSize = 4096;

  @Option(
      names = "--busy-poll",
      paramLabel = "DURATION",
      description =
          "how long a network thread keeps polling its connections after its last event before it"
              + " sleeps, e.g. 10ms: fewer thread wake-ups for small I/O, for up to this much of a"
              + " core's time per thread after each burst (default 0: sleep at once)")
  String busyPoll = "0";

  @Override
  public Integer call() throws Exception {
    if (port < 0 || port > 65535) {
      throw new ParameterException(spec.commandLine(), "--port: " + port + " is not a port");
    }
    Duration pollWindow =
        OptionValues.duration(spec, "--busy-poll", busyPoll, Duration.ZERO, Duration.ofSeconds(1));
    Subsystem subsystem;
    try {
      subsystem = new Subsystem(nqn);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "--nqn: " + e.getMessage());
    }
    allowedHosts.forEach(subsystem::allowHost);
    Map<String, HostKeys> keys = Map.of();
    // The bytes the watcher compares against are taken before they are parsed: a change made in
    // between is then seen as a change, and read again.
    byte[] hostsFileRead = hostsFile == null ? null : contents(hostsFile);
    if (hostsFile != null) {
      try {
        keys = HostKeys.read(hostsFile);
      } catch (IllegalArgumentException | java.io.IOException e) {
        throw new ParameterException(spec.commandLine(), "--hosts-file: " + e.getMessage());
      }
      keys.forEach(subsystem::allowHost);
    }
    List<Namespace> opened = new ArrayList<>();
    try {
      for (String text : namespaces) {
        Namespace ns = open(text);
        opened.add(ns);
        subsystem.addNamespace(ns);
      }
    } catch (IOException | RuntimeException e) {
      for (Namespace ns : opened) {
        try {
          ns.close();
        } catch (IOException closing) {
          e.addSuppressed(closing);
        }
      }
      throw e;
    }
    // From here the target owns the namespaces: a start that fails closes them.
    NvmfTarget target =
        NvmfTarget.builder()
            .listen(bind, port)
            .subsystem(subsystem)
            .busyPoll(pollWindow)
            .build()
            .start();
    String host = Addresses.advertised(advertise == null ? "" : advertise, bind);
    StringBuilder banner = new StringBuilder("NVMe/TCP target listening on ");
    banner.append(bind).append(':').append(target.port());
    List<String> admitted = new ArrayList<>(allowedHosts);
    keys.keySet().forEach(h -> admitted.add(h + " (DH-HMAC-CHAP)"));
    banner.append(
        admitted.isEmpty() ? " for any host" : " for hosts " + String.join(", ", admitted));
    if (!pollWindow.isZero()) {
      banner.append(", polling ").append(busyPoll).append(" after each event");
    }
    banner.append("; Ctrl-C stops");
    for (var e : subsystem.namespaces().entrySet()) {
      banner
          .append(System.lineSeparator())
          .append("namespace ")
          .append(e.getKey())
          .append(' ')
          .append(new NvmfUri("tcp", host, target.port(), nqn, e.getKey()))
          .append(" (")
          .append(e.getValue().blockCount() * e.getValue().blockSize())
          .append(" bytes)");
    }
    Thread watcher = hostsFile == null ? null : watchHostsFile(subsystem, keys, hostsFileRead);
    try {
      UntilStopped.run(target, spec.commandLine().getOut(), banner.toString());
    } finally {
      if (watcher != null) {
        watcher.interrupt();
      }
    }
    return 0;
  }

  /**
   * Reads the hosts file again whenever its contents change, so keys are added, changed and
   * withdrawn without a restart that would drop every host's queues. A file that no longer parses
   * changes nothing: the target says why, on one line, and keeps the hosts it had. An empty one
   * admits no host by key.
   */
  private Thread watchHostsFile(
      Subsystem subsystem, Map<String, HostKeys> loaded, byte[] loadedFrom) {
    Thread watcher =
        new Thread(
            () -> {
              byte[] seen = loadedFrom;
              Map<String, HostKeys> current = loaded;
              while (!Thread.currentThread().isInterrupted()) {
                try {
                  Thread.sleep(HOSTS_FILE_POLL_MILLIS);
                } catch (InterruptedException e) {
                  return;
                }
                byte[] now = contents(hostsFile);
                if (java.util.Arrays.equals(now, seen)) {
                  continue;
                }
                seen = now;
                try {
                  Map<String, HostKeys> read = HostKeys.readAny(hostsFile);
                  subsystem.replaceHostKeys(read);
                  spec.commandLine().getOut().println(reloaded(current, read));
                  spec.commandLine().getOut().flush();
                  current = read;
                } catch (IllegalArgumentException | IOException e) {
                  spec.commandLine()
                      .getErr()
                      .println(
                          "ember target: --hosts-file: "
                              + e.getMessage()
                              + "; the hosts it listed before still hold");
                  spec.commandLine().getErr().flush();
                }
              }
            },
            "hosts-file-watcher");
    watcher.setDaemon(true);
    watcher.start();
    return watcher;
  }

  /** What a reload changed, in one line. */
  private String reloaded(Map<String, HostKeys> before, Map<String, HostKeys> after) {
    List<String> gone = new ArrayList<>();
    List<String> keyless = new ArrayList<>();
    for (String host : before.keySet()) {
      if (!after.containsKey(host)) {
        (allowedHosts.contains(host) ? keyless : gone).add(host);
      }
    }
    StringBuilder line =
        new StringBuilder("hosts file ")
            .append(hostsFile)
            .append(" read again: ")
            .append(after.size())
            .append(after.size() == 1 ? " host authenticates" : " hosts authenticate");
    if (!gone.isEmpty()) {
      line.append("; no longer admitted: ").append(gone);
    }
    if (!keyless.isEmpty()) {
      line.append("; admitted by --allow-host without a key from now on: ").append(keyless);
    }
    return line.toString();
  }

  /** The file's bytes, or null when it cannot be read (a rewrite may be under way). */
  private static byte[] contents(Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      return null;
    }
  }

  /** Opens one {@code --namespace} value, with an error naming it when it is malformed. */
  private Namespace open(String text) throws IOException {
    String what = "--namespace " + text + ": ";
    if (text.startsWith("memory:")) {
      long size = size(what, text.substring("memory:".length()));
      try {
        return new MemoryNamespace(size, blockSize);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), what + e.getMessage());
      }
    }
    if (text.startsWith("file:")) {
      String rest = text.substring("file:".length());
      // The size follows the last colon, so a path may hold colons of its own.
      int colon = rest.lastIndexOf(':');
      if (colon <= 0) {
        throw new ParameterException(spec.commandLine(), what + "write it file:PATH:SIZE");
      }
      long size = size(what, rest.substring(colon + 1));
      Path file = Path.of(rest.substring(0, colon));
      long held = Files.isRegularFile(file) ? Files.size(file) : 0;
      if (held > size) {
        // Sizing it down would cut off the blocks past SIZE: a mistyped size must not lose data.
        throw new ParameterException(
            spec.commandLine(),
            what
                + file
                + " holds "
                + held
                + " bytes, more than "
                + size
                + ": give its size, or another file (a namespace file is never shrunk)");
      }
      try {
        return new FileNamespace(file, size, blockSize, true);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), what + e.getMessage());
      } catch (IOException e) {
        throw new IOException(
            "cannot open or create the namespace file " + file + ": " + why(e), e);
      }
    }
    throw new ParameterException(
        spec.commandLine(), what + "write it file:PATH:SIZE or memory:SIZE");
  }

  /** Why a file could not be opened, in words: the JDK's message of a missing file is its path. */
  private static String why(IOException e) {
    if (e instanceof java.nio.file.NoSuchFileException) {
      return "its directory does not exist";
    }
    if (e instanceof java.nio.file.AccessDeniedException) {
      return "permission denied";
    }
    if (e instanceof java.nio.file.FileSystemException f && f.getReason() != null) {
      return f.getReason();
    }
    return EmberCli.oneLine(e);
  }

  private long size(String what, String text) {
    try {
      long size = ConfigKey.parseSize(text);
      if (size > 0) {
        return size;
      }
    } catch (RuntimeException e) {
      // Said below, in the same words as a size of zero.
    }
    throw new ParameterException(
        spec.commandLine(), what + "'" + text + "' is not a size such as 8g or 512m");
  }
}
