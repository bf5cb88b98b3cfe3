package io.ember.cli;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.NodeType;
import io.ember.protocol.Paths;
import io.ember.protocol.Permissions;
import io.ember.protocol.StorageClass;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code ember fs}: a file system shell like {@code hdfs dfs}. Each command goes through all its
 * paths, prints one line per failure ({@code ember fs rm: /x does not exist}) and exits 1 if any
 * failed, 0 otherwise; usage errors exit 255.
 */
@Command(
    name = "fs",
    mixinStandardHelpOptions = true,
    description =
        "File system shell: ls, mkdir, put, get, cp, cat, rm, mv, stat, chmod, chown, df.",
    subcommands = {
      FsCommand.Ls.class,
      FsCommand.Mkdir.class,
      FsCommand.Put.class,
      FsCommand.Get.class,
      FsCommand.Cp.class,
      FsCommand.Cat.class,
      FsCommand.Rm.class,
      FsCommand.Mv.class,
      FsCommand.Stat.class,
      FsCommand.Chmod.class,
      FsCommand.Chown.class,
      FsCommand.Df.class,
      CommandLine.HelpCommand.class
    })
final class FsCommand implements Runnable {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm").withZone(ZoneId.systemDefault());

  @Mixin ConfigOptions options;

  @Option(
      names = "--namenode",
      paramLabel = "HOST:PORT",
      scope = CommandLine.ScopeType.INHERIT,
      converter = NameNodeAddress.class,
      description =
          "the name node, HOST[:PORT] (default 127.0.0.1:9060; the port is 9060 when left out)")
  String namenode;

  /** Refuses an address that is not HOST[:PORT] as a usage error, before anything connects. */
  static final class NameNodeAddress implements CommandLine.ITypeConverter<String> {
    @Override
    public String convert(String value) {
      if (io.ember.protocol.HostPort.tryParse(value, EmberKeys.DEFAULT_NAMENODE_PORT) == null) {
        throw new CommandLine.TypeConversionException(
            "'" + value + "' is not HOST[:PORT] (e.g. 127.0.0.1:9060)");
      }
      return value;
    }
  }

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "missing fs command");
  }

  EmberClient connect() throws IOException {
    return connect(options, namenode);
  }

  /** A client of the name node at {@code namenode}, or the configured one when that is null. */
  static EmberClient connect(ConfigOptions options, String namenode) throws IOException {
    EmberConfig config = options.load();
    if (namenode != null) {
      config = config.with(EmberKeys.NAMENODE_ADDRESS, namenode);
    }
    return EmberClient.connect(config);
  }

  /** What every copy into Ember takes: {@code -p}, {@code -f} and the progress bar's switch. */
  static final class CopyOptions {
    @Option(names = "-p", description = "create missing parent directories")
    boolean parents;

    @Option(
        names = {"-f", "--force"},
        description = "overwrite an existing file, once the copy is whole")
    boolean force;

    @Mixin Progress.Switch progress;
  }

  /** The sources of SRC... DST arguments and where each goes. */
  record Destination(List<String> sources, String path, boolean directory) {
    /** Where a source called {@code name} goes. */
    String targetFor(String name) {
      return directory ? Paths.child(path, name) : path;
    }
  }

  /** Base of the sub-commands: runs {@link #apply} and turns errors into lines and codes. */
  abstract static class Sub implements Callable<Integer> {
    @ParentCommand FsCommand fs;
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    private boolean failed;

    @Override
    public Integer call() throws Exception {
      try (EmberClient client = fs.connect()) {
        apply(client);
      } catch (EmberException | IllegalArgumentException e) {
        error(EmberCli.oneLine(e));
      }
      return failed ? 1 : 0;
    }

    abstract void apply(EmberClient client) throws IOException;

    void error(String message) {
      failed = true;
      err().println("ember fs " + spec.name() + ": " + message);
      err().flush();
    }

    /**
     * Where SRC... DST arguments go: into DST when it is a directory, else DST itself; null, after
     * an error line, when several sources name something that is not a directory. {@code doing}
     * says what for, with {@code %d} for the number of sources ("copying %d files").
     */
    Destination destination(EmberClient client, List<String> args, String doing)
        throws EmberException {
      List<String> sources = args.subList(0, args.size() - 1);
      String dst = Paths.normalize(args.get(args.size() - 1));
      boolean directory = isContainer(client, dst);
      if (sources.size() > 1 && !directory) {
        error(
            dst
                + " is not a directory ("
                + String.format(Locale.ROOT, doing, sources.size())
                + ")");
        return null;
      }
      return new Destination(sources, dst, directory);
    }

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    PrintWriter err() {
      return spec.commandLine().getErr();
    }
  }

  @Command(
      name = "ls",
      mixinStandardHelpOptions = true,
      description = "List directories, or show files.")
  static final class Ls extends Sub {
    @Option(
        names = {"-R", "--recursive"},
        description = "list subdirectories too")
    boolean recursive;

    @Parameters(paramLabel = "PATH", defaultValue = "/", description = "paths (default /)")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      for (String p : paths) {
        try {
          String path = Paths.normalize(p);
          NodeStatus st = client.lookup(path);
          if (st.isContainer()) {
            listDir(client, path);
          } else {
            out().println(line(path, st));
          }
        } catch (EmberException e) {
          error(e.getMessage());
        }
      }
    }

    private void listDir(EmberClient client, String path) throws EmberException {
      List<DirEntry> entries = client.list(path);
      out().println("Found " + entries.size() + " items");
      for (DirEntry e : entries) {
        String child = Paths.child(path, e.name());
        out().println(line(child, e.status()));
      }
      if (recursive) {
        for (DirEntry e : entries) {
          if (e.status().isContainer()) {
            listDir(client, Paths.child(path, e.name()));
          }
        }
      }
    }

    static String line(String path, NodeStatus st) {
      char kind =
          switch (st.type()) {
            case DIRECTORY -> 'd';
            case MULTIFILE -> 'm';
            case FILE -> st.open() ? 'w' : '-';
          };
      return String.format(
          Locale.ROOT,
          "%c%s %-8s %-10s %-5s %12d %s %s",
          kind,
          Permissions.symbolic(st.permission()),
          st.owner(),
          st.group(),
          st.isFile() ? st.storageClass().displayName() : "-",
          st.length(),
          TIME.format(Instant.ofEpochMilli(st.modificationTime())),
          Paths.escape(path));
    }
  }

  @Command(name = "mkdir", mixinStandardHelpOptions = true, description = "Create directories.")
  static final class Mkdir extends Sub {
    @Option(names = "-p", description = "create parents; no error if the directory exists")
    boolean parents;

    @Parameters(paramLabel = "PATH", arity = "1..*")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      for (String p : paths) {
        try {
          client.createDirectory(p, parents);
        } catch (EmberException e) {
          if (parents && e.code() == ErrorCode.ALREADY_EXISTS && isDir(client, p)) {
            continue;
          }
          error(e.getMessage());
        }
      }
    }

    private static boolean isDir(EmberClient client, String p) {
      try {
        return client.lookup(p).isContainer();
      } catch (EmberException e) {
        return false;
      }
    }
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description = "Copy local files (or - for standard input) into Ember.")
  static final class Put extends Sub {
    @Option(
        names = "--storage-class",
        paramLabel = "CLASS",
        defaultValue = "dram",
        description = "preferred storage class: dram or nvmf (default ${DEFAULT-VALUE})")
    String storageClass;

    @Mixin CopyOptions copy;

    @Parameters(
        paramLabel = "SRC... DST",
        arity = "2..*",
        description = "local files (- for stdin), then an Ember file or directory")
    List<String> args;

    @Override
    void apply(EmberClient client) throws IOException {
      StorageClass sc = StorageClass.parse(storageClass);
      Destination dst = destination(client, args, "copying %d files");
      if (dst == null) {
        return;
      }
      for (String src : dst.sources()) {
        if (!src.equals("-") && Files.isDirectory(Path.of(src))) {
          error(src + ": is a local directory (put copies files)");
          continue;
        }
        String target =
            dst.targetFor(src.equals("-") ? "stdin" : Path.of(src).getFileName().toString());
        try {
          long length = src.equals("-") ? -1 : Files.size(Path.of(src));
          try (InputStream in =
              Progress.track(
                  src.equals("-") ? System.in : Files.newInputStream(Path.of(src)),
                  "put " + Path.of(src).getFileName(),
                  length,
                  copy.progress.show())) {
            copyIn(client, in, src, target, new CreateOptions(sc, copy.parents), copy.force);
          }
        } catch (java.nio.file.NoSuchFileException e) {
          error(src + ": no such local file");
        } catch (java.nio.file.AccessDeniedException e) {
          error(src + ": permission denied");
        } catch (EmberException e) {
          error(e.getMessage());
        } catch (IOException e) {
          error(src + ": " + EmberCli.oneLine(e));
        }
      }
    }

    /**
     * Writes {@code in} to a new file at {@code target}; if reading or writing fails, the file is
     * given up, so a failed put leaves nothing behind. With {@code replace}, a file already at
     * {@code target} is replaced, and only once the new one is whole; should the rename that puts
     * the new one in place fail after the old one is deleted, the error names where the new copy
     * was left.
     */
    static void copyIn(
        EmberClient client,
        InputStream in,
        String src,
        String target,
        CreateOptions options,
        boolean replace)
        throws IOException {
      if (replace && isFile(client, target)) {
        // The old file goes only once the new one is whole: a failed copy loses nothing.
        String partial =
            Paths.child(
                Paths.parent(target),
                "." + Paths.name(target) + ".ember-copy-" + System.nanoTime());
        copyIn(client, in, src, partial, options, false);
        try {
          client.delete(target, false);
        } catch (EmberException e) {
          // The old file is still there: the copy is the one to give up.
          try {
            client.delete(partial, false);
          } catch (EmberException cleanup) {
            e.addSuppressed(cleanup);
          }
          throw e;
        }
        try {
          client.rename(partial, target);
        } catch (EmberException e) {
          // The old file is gone: the whole copy is all that is left of either, so it stays.
          throw new EmberException(
              e.code(),
              target
                  + " was replaced, but its new copy is left at "
                  + partial
                  + ": "
                  + e.getMessage(),
              e);
        }
        return;
      }
      EmberOutputStream out = client.createBuffered(target, options);
      try {
        in.transferTo(out);
      } catch (IOException e) {
        out.abort();
        if (e instanceof EmberException) {
          throw e;
        }
        throw new IOException("reading " + src + " failed: " + EmberCli.oneLine(e), e);
      }
      out.close();
    }

    private static boolean isFile(EmberClient client, String path) throws EmberException {
      try {
        return client.lookup(path).isFile();
      } catch (EmberException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        return false;
      }
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = {
        "Copy an Ember file to a local file (- for stdout), or into a local directory.",
        "Never overwrites: an existing local file is an error."
      })
  static final class Get extends Sub {
    @Mixin Progress.Switch progress;

    @Parameters(index = "0", paramLabel = "SRC")
    String src;

    @Parameters(index = "1", paramLabel = "DST")
    String dst;

    @Override
    void apply(EmberClient client) throws IOException {
      if (dst.equals("-")) {
        copyOut(client, src, System.out, false);
        System.out.flush();
        return;
      }
      Path target = Path.of(dst);
      if (Files.isDirectory(target)) {
        target = target.resolve(Paths.name(Paths.normalize(src)));
      }
      if (Files.exists(target)) {
        error(target + ": local file exists");
        return;
      }
      Path parent = target.toAbsolutePath().getParent();
      if (!Files.isDirectory(parent)) {
        error(parent + ": no such local directory");
        return;
      }
      Path tmp = Files.createTempFile(parent, ".ember-get", ".tmp");
      try {
        try (OutputStream out = Files.newOutputStream(tmp)) {
          copyOut(client, src, out, progress.show());
        }
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
  }

  @Command(
      name = "cp",
      mixinStandardHelpOptions = true,
      description = {
        "Copy Ember files within Ember; a directory target receives the sources.",
        "Never overwrites an existing file unless -f; a failed copy leaves nothing behind."
      })
  static final class Cp extends Sub {
    @Option(
        names = "--storage-class",
        paramLabel = "CLASS",
        description = "storage class of the copies: dram or nvmf (default: each source's)")
    String storageClass;

    @Mixin CopyOptions copy;

    @Parameters(paramLabel = "SRC... DST", arity = "2..*")
    List<String> args;

    @Override
    void apply(EmberClient client) throws IOException {
      StorageClass chosen = storageClass == null ? null : StorageClass.parse(storageClass);
      Destination dst = destination(client, args, "copying %d files");
      if (dst == null) {
        return;
      }
      for (String src : dst.sources()) {
        try {
          String from = Paths.normalize(src);
          String target = dst.targetFor(Paths.name(from));
          if (target.equals(from)) {
            error(from + " and " + target + " are the same file");
            continue;
          }
          StorageClass sc = chosen != null ? chosen : client.lookup(from).storageClass();
          try (InputStream in = openForCopy(client, from, copy.progress.show())) {
            Put.copyIn(client, in, from, target, new CreateOptions(sc, copy.parents), copy.force);
          }
        } catch (EmberException e) {
          error(e.getMessage());
        } catch (IOException e) {
          error(src + ": " + EmberCli.oneLine(e));
        }
      }
    }
  }

  @Command(
      name = "cat",
      mixinStandardHelpOptions = true,
      description = "Print files (or multifiles) to standard output.")
  static final class Cat extends Sub {
    @Parameters(paramLabel = "PATH", arity = "1..*")
    List<String> paths;

    @Override
    void apply(EmberClient client) throws IOException {
      for (String p : paths) {
        try {
          copyOut(client, p, System.out, false);
        } catch (EmberException e) {
          error(e.getMessage());
        } finally {
          System.out.flush();
        }
      }
    }
  }

  @Command(
      name = "rm",
      mixinStandardHelpOptions = true,
      description = "Delete files and directories.")
  static final class Rm extends Sub {
    @Option(
        names = {"-r", "-R"},
        description = "delete directories and their contents")
    boolean recursive;

    @Option(names = "-f", description = "no error when a path does not exist")
    boolean force;

    @Parameters(paramLabel = "PATH", arity = "1..*")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      for (String p : paths) {
        try {
          if (!recursive && client.lookup(p).isContainer()) {
            error(Paths.normalize(p) + " is a directory (use rm -r)");
            continue;
          }
          client.delete(p, recursive);
        } catch (EmberException e) {
          if (!(force && e.code() == ErrorCode.NOT_FOUND)) {
            error(e.getMessage());
          }
        }
      }
    }
  }

  @Command(
      name = "mv",
      mixinStandardHelpOptions = true,
      description = "Rename; a directory target receives the sources.")
  static final class Mv extends Sub {
    @Parameters(paramLabel = "SRC... DST", arity = "2..*")
    List<String> args;

    @Override
    void apply(EmberClient client) throws IOException {
      Destination dst = destination(client, args, "moving %d paths");
      if (dst == null) {
        return;
      }
      for (String src : dst.sources()) {
        try {
          String s = Paths.normalize(src);
          client.rename(s, dst.targetFor(Paths.name(s)));
        } catch (EmberException e) {
          error(e.getMessage());
        }
      }
    }
  }

  @Command(
      name = "stat",
      mixinStandardHelpOptions = true,
      description = "Show an entry's status and its blocks.")
  static final class Stat extends Sub {
    @Parameters(paramLabel = "PATH", arity = "1..*")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      for (String p : paths) {
        try {
          String path = Paths.normalize(p);
          NodeStatus st = client.lookup(path);
          out().println("path:          " + path);
          out()
              .println(
                  "type:          "
                      + st.type().name().toLowerCase(Locale.ROOT)
                      + (st.open() ? " (being written; length not yet published)" : ""));
          out().println("length:        " + st.length());
          if (st.open() && !st.leaseHolder().isEmpty()) {
            out().println("lease holder:  " + st.leaseHolder());
            out().println("acknowledged:  " + st.acknowledgedLength() + " bytes");
          }
          out().println("storage class: " + st.storageClass().displayName());
          out()
              .println(
                  "owner:         "
                      + st.owner()
                      + ":"
                      + st.group()
                      + " "
                      + Permissions.symbolic(st.permission())
                      + " ("
                      + Integer.toOctalString(st.permission())
                      + ")");
          out().println("modified:      " + Instant.ofEpochMilli(st.modificationTime()));
          if (st.isFile()) {
            out().println("blocks:        " + st.blockCount() + " of " + st.blockSize() + " bytes");
            for (BlockLocation b : client.blockLocations(path)) {
              out()
                  .println(
                      String.format(
                          Locale.ROOT,
                          "  block %d: id %d, %s on data node %d (%s) at %d%s",
                          b.index(),
                          b.blockId(),
                          b.storageClass().displayName(),
                          b.datanodeId(),
                          b.endpoint(),
                          b.address(),
                          b.lost() ? " LOST" : ""));
            }
          }
        } catch (EmberException e) {
          error(e.getMessage());
        }
      }
    }
  }

  @Command(
      name = "chmod",
      mixinStandardHelpOptions = true,
      description = {
        "Set the mode bits of paths: an octal mode such as 755, 640 or 1777 (1000 is the sticky"
            + " bit: only an entry's owner removes it from the directory).",
        "Only a path's owner or the super-user may. Without TLS every caller is the super-user."
      })
  static final class Chmod extends Sub {
    @Parameters(index = "0", paramLabel = "MODE", description = "octal mode")
    String mode;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "PATH")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      int bits = Permissions.parseOctal(mode);
      for (String p : paths) {
        try {
          client.setAttributes(p, "", "", bits);
        } catch (EmberException e) {
          error(e.getMessage());
        }
      }
    }
  }

  @Command(
      name = "chown",
      mixinStandardHelpOptions = true,
      description = {
        "Set the owner and group of paths: OWNER, OWNER:GROUP or :GROUP.",
        "Only the super-user changes an owner; an owner changes the group to one it is in."
      })
  static final class Chown extends Sub {
    @Parameters(index = "0", paramLabel = "[OWNER][:GROUP]")
    String owner;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "PATH")
    List<String> paths;

    @Override
    void apply(EmberClient client) {
      int colon = owner.indexOf(':');
      String user = colon < 0 ? owner : owner.substring(0, colon);
      String group = colon < 0 ? "" : owner.substring(colon + 1);
      if (user.isEmpty() && group.isEmpty()) {
        throw new IllegalArgumentException(
            "'" + owner + "' names neither an owner nor a group (OWNER, OWNER:GROUP or :GROUP)");
      }
      for (String p : paths) {
        try {
          client.setAttributes(p, user, group, Permissions.DEFAULT);
        } catch (EmberException e) {
          error(e.getMessage());
        }
      }
    }
  }

  @Command(name = "df", description = "Show capacity and use per storage class.")
  static final class Df extends Sub {
    // -h is human-readable sizes here, as in hdfs dfs -df -h: help is --help only.
    @Option(names = "-h", description = "sizes in KiB, MiB, GiB")
    boolean human;

    @Option(names = "--help", usageHelp = true, description = "Show this help message and exit.")
    boolean help;

    @Override
    void apply(EmberClient client) throws IOException {
      List<ClassUsage> usage = client.df();
      out()
          .println(
              String.format(
                  Locale.ROOT,
                  "%-8s %14s %14s %14s %5s %6s %5s",
                  "class",
                  "capacity",
                  "used",
                  "free",
                  "use%",
                  "nodes",
                  "lost"));
      for (ClassUsage u : usage) {
        long pct = u.capacityBytes() == 0 ? 0 : 100 * u.usedBytes() / u.capacityBytes();
        out()
            .println(
                String.format(
                    Locale.ROOT,
                    "%-8s %14s %14s %14s %4d%% %6d %5d",
                    u.storageClass().displayName(),
                    size(u.capacityBytes()),
                    size(u.usedBytes()),
                    size(u.freeBytes()),
                    pct,
                    u.liveNodes(),
                    u.lostNodes()));
      }
      if (usage.isEmpty()) {
        out().println("(no data nodes registered)");
      }
    }

    private String size(long bytes) {
      return human ? ConfigKey.formatSize(bytes) : Long.toString(bytes);
    }
  }

  static boolean isContainer(EmberClient client, String path) throws EmberException {
    try {
      return client.lookup(path).isContainer();
    } catch (EmberException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  static void copyOut(EmberClient client, String path, OutputStream out, boolean progress)
      throws IOException {
    try (InputStream in = openForCopy(client, path, progress)) {
      in.transferTo(out);
    }
  }

  /** A file or multifile's bytes, with a progress bar when {@code progress}. */
  static InputStream openForCopy(EmberClient client, String path, boolean progress)
      throws IOException {
    NodeStatus st = client.lookup(path);
    if (st.type() == NodeType.DIRECTORY) {
      throw new EmberException(ErrorCode.NOT_A_FILE, Paths.normalize(path) + " is a directory");
    }
    InputStream in =
        st.type() == NodeType.MULTIFILE ? client.openMultiFile(path) : client.open(path);
    return Progress.track(
        in,
        Paths.name(Paths.normalize(path)),
        st.type() == NodeType.MULTIFILE ? -1 : st.length(),
        progress);
  }
}
