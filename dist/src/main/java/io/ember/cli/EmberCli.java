package io.ember.cli;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.ember.benchmarks.BenchCommand;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ember} command: servers, a local cluster, the file system shell and the bench. */
@Command(
    name = "ember",
    mixinStandardHelpOptions = true,
    version = "Ember 0.1.0-SNAPSHOT",
    description = "Ember: a distributed store for ephemeral data (DRAM and NVMf tiers).",
    subcommands = {
      LocalCommand.class,
      NameNodeCommand.class,
      DataNodeCommand.class,
      TargetCommand.class,
      SecurityCommand.class,
      FsCommand.class,
      AdminCommand.class,
      BenchCommand.class,
      CommandLine.HelpCommand.class
    })
public final class EmberCli implements Runnable {
  /** Exit code for usage errors, as {@code hdfs dfs} returns (-1). */
  public static final int USAGE_ERROR = 255;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "missing command");
  }

  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    configureLogging(args);
    System.exit(
        run(
            args,
            new PrintWriter(new OutputStreamWriter(System.out, UTF_8), true),
            new PrintWriter(new OutputStreamWriter(System.err, UTF_8), true)));
  }

  /** Runs the command line with the given output streams and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cli = new CommandLine(new EmberCli());
    cli.setOut(out);
    cli.setErr(err);
    cli.setParameterExceptionHandler(
        (ex, a) -> {
          CommandLine c = ex.getCommandLine();
          c.getErr().println("ember: " + ex.getMessage());
          c.getErr().println("Try '" + c.getCommandSpec().qualifiedName() + " --help'.");
          return USAGE_ERROR;
        });
    cli.setExecutionExceptionHandler(
        (ex, c, parsed) -> {
          // The whole command's name, "ember fs get", as every command's own messages have it.
          String line = c.getCommandSpec().qualifiedName() + ": " + oneLine(ex);
          if (!expected(ex)) {
            // A bug or an environment problem: one line here, the stack trace in the log.
            java.nio.file.Path log = writeLog(line, ex);
            line += log == null ? "" : " (details in " + log + ")";
          }
          c.getErr().println(line);
          return 1;
        });
    return cli.execute(args);
  }

  /** Errors whose message says everything: no stack trace is needed to act on them. */
  static boolean expected(Throwable t) {
    Throwable cur = io.ember.protocol.EmberException.unwrap(t);
    return cur instanceof io.ember.protocol.EmberException
        || cur instanceof IllegalArgumentException
        || cur instanceof java.io.IOException;
  }

  /** Appends the error to logs/ember-cli.log under EMBER_HOME (or the temp directory). */
  static java.nio.file.Path writeLog(String line, Throwable t) {
    String home = System.getenv("EMBER_HOME");
    java.nio.file.Path dir =
        home != null
            ? java.nio.file.Path.of(home, "logs")
            : java.nio.file.Path.of(System.getProperty("java.io.tmpdir"));
    java.nio.file.Path log = dir.resolve("ember-cli.log");
    try {
      java.nio.file.Files.createDirectories(dir);
      java.io.StringWriter trace = new java.io.StringWriter();
      t.printStackTrace(new PrintWriter(trace));
      java.nio.file.Files.writeString(
          log,
          java.time.Instant.now() + " " + line + "\n" + trace,
          java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.APPEND);
      return log;
    } catch (java.io.IOException e) {
      return null;
    }
  }

  static String oneLine(Throwable error) {
    Throwable t = io.ember.protocol.EmberException.unwrap(error);
    String m = t.getMessage();
    if (m == null || m.isBlank()) {
      m = t.getClass().getSimpleName();
    }
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }

  private static void configureLogging(String[] args) {
    boolean server =
        args.length > 0
            && (args[0].equals("namenode")
                || args[0].equals("datanode")
                || args[0].equals("local"));
    System.setProperty(
        "org.slf4j.simpleLogger.defaultLogLevel",
        System.getProperty("ember.log.level", server ? "info" : "warn"));
    System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
    System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd HH:mm:ss.SSS");
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
  }
}
