package io.ember.cli;

import io.ember.minicluster.DevCertificates;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code ember security}: what a secured cluster needs. */
@Command(
    name = "security",
    mixinStandardHelpOptions = true,
    description = "Set up what a secured cluster needs.",
    subcommands = {
      SecurityCommand.DevCa.class,
      SecurityCommand.AddUser.class,
      SecurityCommand.DhchapKey.class,
      SecurityCommand.DelegationTokenCommand.class,
      CommandLine.HelpCommand.class
    })
final class SecurityCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(
        spec.commandLine(), "missing command: dev-ca, add-user, dhchap-key or token");
  }

  /** {@code ember security token}: delegation tokens for processes without a certificate. */
  @Command(
      name = "token",
      mixinStandardHelpOptions = true,
      description = {
        "Print a new delegation token for this client's identity (its certificate's), for a"
            + " process without a certificate to use as ember.security.delegation-token; or renew"
            + " or cancel one.",
        "Example: ember security token --renewer yarn > job.token"
      })
  static final class DelegationTokenCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @picocli.CommandLine.Mixin ConfigOptions options;

    @Option(
        names = "--namenode",
        paramLabel = "HOST:PORT",
        converter = FsCommand.NameNodeAddress.class,
        description = "the name node, HOST[:PORT] (default: the configured one)")
    String namenode;

    @Option(
        names = "--renewer",
        paramLabel = "NAME",
        description = "who may renew the new token (default: this client's identity)")
    String renewer = "";

    @Option(
        names = "--renew",
        paramLabel = "FILE",
        description =
            "renew the token in FILE (- for standard input) instead, and print when it now"
                + " expires; a file, so that the token shows in no process list")
    Path renew;

    @Option(
        names = "--cancel",
        paramLabel = "FILE",
        description = "cancel the token in FILE (- for standard input) instead")
    Path cancel;

    private io.ember.protocol.DelegationToken read(Path file) throws java.io.IOException {
      String text =
          file.toString().equals("-")
              ? new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII)
              : java.nio.file.Files.readString(file, java.nio.charset.StandardCharsets.US_ASCII);
      return io.ember.protocol.DelegationToken.decodeString(text);
    }

    @Override
    public Integer call() throws Exception {
      if (renew != null && cancel != null) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "--renew and --cancel: one at a time");
      }
      PrintWriter out = spec.commandLine().getOut();
      try (io.ember.client.EmberClient client = FsCommand.connect(options, namenode)) {
        if (renew != null) {
          io.ember.protocol.DelegationToken token = read(renew);
          long until = client.renewDelegationToken(token);
          out.println("renewed " + token + " until " + java.time.Instant.ofEpochMilli(until));
        } else if (cancel != null) {
          io.ember.protocol.DelegationToken token = read(cancel);
          client.cancelDelegationToken(token);
          out.println("cancelled " + token);
        } else {
          out.println(client.getDelegationToken(renewer).encodeToString());
        }
      }
      out.flush();
      return 0;
    }
  }

  /** {@code ember security add-user}: a password user in a name node's credentials file. */
  @Command(
      name = "add-user",
      mixinStandardHelpOptions = true,
      description = {
        "Add a user who authenticates with a password (ember.security.scram=true) to a name"
            + " node's credentials file (ember.security.credentials), or change the password of"
            + " one it has. The file keeps a salted SCRAM-SHA-256 verifier, never the password,"
            + " and is written owner-only; a running name node reads it again when it changes.",
        "The password is the first line of --password-file, or of standard input (asked for"
            + " twice on a terminal).",
        "Example: ember security add-user alice --credentials /etc/ember/credentials"
      })
  static final class AddUser implements Callable<Integer> {
    @Spec CommandSpec spec;

    @picocli.CommandLine.Parameters(index = "0", paramLabel = "NAME", description = "the user")
    String name;

    @Option(
        names = "--credentials",
        required = true,
        paramLabel = "FILE",
        description = "the credentials file (created if missing)")
    Path credentials;

    @Option(
        names = "--password-file",
        paramLabel = "FILE",
        description = "read the password from FILE's first line")
    Path passwordFile;

    // On Java 17, which Ember targets, a null console means standard input is not a terminal.
    @SuppressWarnings("SystemConsoleNull")
    private String password() throws java.io.IOException {
      if (passwordFile != null) {
        List<String> lines = java.nio.file.Files.readAllLines(passwordFile);
        return lines.isEmpty() ? "" : lines.get(0);
      }
      java.io.Console console = System.console();
      if (console != null) {
        char[] first = console.readPassword("password for %s: ", name);
        char[] again = console.readPassword("again: ");
        if (first == null || again == null || !java.util.Arrays.equals(first, again)) {
          throw new CommandLine.ParameterException(
              spec.commandLine(), "the two passwords differ; nothing was written");
        }
        return new String(first);
      }
      String line =
          new java.io.BufferedReader(
                  new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8))
              .readLine();
      return line == null ? "" : line;
    }

    @Override
    public Integer call() throws Exception {
      String password = password();
      if (password.isEmpty()) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "no password given (an empty first line); nothing was written");
      }
      boolean added = io.ember.namenode.Credentials.addUser(credentials, name, password);
      spec.commandLine()
          .getOut()
          .println(
              (added ? "added " : "changed the password of ")
                  + name
                  + " in "
                  + credentials
                  + " ("
                  + io.ember.protocol.Scram.MECHANISM
                  + ")");
      return 0;
    }
  }

  /** {@code ember security dhchap-key}: a new NVMe in-band authentication secret. */
  @Command(
      name = "dhchap-key",
      mixinStandardHelpOptions = true,
      description = {
        "Print a new random DH-HMAC-CHAP secret (DHHC-1:XX:<base64>:), as nvme gen-dhchap-key"
            + " does: for ember.nvmf.dhchap-secret, a target's hosts file, Linux's configfs"
            + " (dhchap_key) or nvme connect --dhchap-secret.",
        "Example: ember security dhchap-key --hmac sha384"
      })
  static final class DhchapKey implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--hmac",
        paramLabel = "none|sha256|sha384|sha512",
        description =
            "the hash that binds the secret to the NQN it is used for, and the key's length"
                + " (32, 48 or 64 bytes; none: 32 bytes used as they are); default sha256")
    String hmac = "sha256";

    @Override
    public Integer call() {
      io.ember.nvmf.auth.DhchapHash hash;
      try {
        hash = hmac.equals("none") ? null : io.ember.nvmf.auth.DhchapHash.byName(hmac);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--hmac: " + e.getMessage());
      }
      spec.commandLine()
          .getOut()
          .println(
              io.ember.nvmf.auth.DhchapSecret.generate(
                      hash, hash == null ? 32 : hash.length(), new java.security.SecureRandom())
                  .encoded());
      return 0;
    }
  }

  /** {@code ember security dev-ca}: a CA and certificates for tests and local clusters. */
  @Command(
      name = "dev-ca",
      mixinStandardHelpOptions = true,
      description = {
        "Write a certificate authority and certificates for mutual TLS"
            + " (ember.security.tls=true) into DIR: ca.pem (what ember.security.tls.ca names),"
            + " and NAME.pem and NAME.key for each --server and --user. The CA in DIR is reused"
            + " when there is one. For tests and local clusters: the CA's key sits beside what it"
            + " signs.",
        "Example: ember security dev-ca --dir conf/tls --server nn1=nn1.example.net,10.0.0.1"
            + " --server dn1=dn1.example.net --user alice"
      })
  static final class DevCa implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--dir",
        required = true,
        paramLabel = "DIR",
        description = "where the files go (created if missing)")
    Path dir;

    @Option(
        names = "--server",
        paramLabel = "NAME=HOST[,HOST...]",
        description =
            "a certificate for a server (name node, data node) reached at these host names and"
                + " addresses, which it also presents as a client (repeatable); 'local' stands for"
                + " localhost,127.0.0.1")
    List<String> servers = new ArrayList<>();

    @Option(
        names = "--user",
        paramLabel = "NAME",
        description = "a client certificate whose common name is the user NAME (repeatable)")
    List<String> users = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
      if (servers.isEmpty() && users.isEmpty()) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "name at least one --server or --user to certify");
      }
      PrintWriter out = spec.commandLine().getOut();
      // Every name and host is checked before the CA or any certificate is written.
      List<String> names = new ArrayList<>();
      List<List<String>> hostLists = new ArrayList<>();
      for (String s : servers) {
        int eq = s.indexOf('=');
        if (eq <= 0 || eq == s.length() - 1) {
          throw new CommandLine.ParameterException(
              spec.commandLine(), "--server takes NAME=HOST[,HOST...], not '" + s + "'");
        }
        List<String> hosts = new ArrayList<>();
        for (String h : s.substring(eq + 1).split(",", -1)) {
          if (h.isBlank()) {
            throw new CommandLine.ParameterException(
                spec.commandLine(), "--server " + s + " names an empty host");
          }
          if (h.strip().equals("local")) {
            hosts.addAll(List.of("localhost", "127.0.0.1"));
          } else {
            hosts.add(h.strip());
          }
        }
        names.add(s.substring(0, eq).strip());
        hostLists.add(hosts);
      }
      for (String u : users) {
        names.add(u.strip());
        hostLists.add(List.of());
      }
      try {
        for (List<String> hosts : hostLists) {
          hosts.forEach(DevCertificates::checkHost);
        }
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      }
      DevCertificates ca = DevCertificates.openOrCreate(dir);
      for (int i = 0; i < names.size(); i++) {
        issue(ca, names.get(i), hostLists.get(i), out);
      }
      out.println("ca " + ca.caFile());
      return 0;
    }

    private void issue(DevCertificates ca, String name, List<String> hosts, PrintWriter out)
        throws java.io.IOException {
      try {
        ca.issue(name, hosts);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      }
      out.println(
          name
              + " "
              + ca.certificateFile(name)
              + " "
              + ca.keyFile(name)
              + (hosts.isEmpty() ? "" : " for " + String.join(",", hosts)));
    }
  }
}
