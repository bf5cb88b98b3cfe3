package io.ember.namenode;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Scram;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The users of {@link NameNodeKeys#CREDENTIALS}, a file of lines {@code USER SCRAM-SHA-256$...}
 * that {@code ember security add-user} writes: each user's salted SCRAM verifier, never a password.
 * The name node reads the file again when it changes, so adding a user or changing a password needs
 * no restart; a file that no longer reads keeps the users it had, and says why in the log.
 */
public final class Credentials {
  private static final Logger LOG = LoggerFactory.getLogger(Credentials.class);

  private final Path file;
  private volatile Loaded loaded;

  /** The file as last read. */
  private static final class Loaded {
    private final Map<String, Scram.Verifier> users;
    private final byte[] secret;
    private final BasicFileAttributes seen;

    Loaded(Map<String, Scram.Verifier> users, byte[] secret, BasicFileAttributes seen) {
      this.users = users;
      this.secret = secret;
      this.seen = seen;
    }

    /**
     * Whether the file is as it was read: the same file (add-user replaces it by another), the same
     * time and size.
     */
    boolean same(BasicFileAttributes now) {
      return java.util.Objects.equals(now.fileKey(), seen.fileKey())
          && now.lastModifiedTime().equals(seen.lastModifiedTime())
          && now.size() == seen.size();
    }

    Map<String, Scram.Verifier> users() {
      return users;
    }

    byte[] secret() {
      return secret;
    }
  }

  private Credentials(Path file, Loaded loaded) {
    this.file = file;
    this.loaded = loaded;
  }

  /**
   * The users of {@code file}.
   *
   * @throws EmberException {@link ErrorCode#INVALID_ARGUMENT} naming the file, and the line that
   *     does not read (never a verifier)
   */
  public static Credentials load(Path file) throws EmberException {
    return new Credentials(file, read(file));
  }

  /** The verifier of {@code user}, or null when there is no such user. */
  public Scram.Verifier verifier(String user) {
    refresh();
    return loaded.users().get(user);
  }

  /**
   * A secret of this file's own, for the made-up verifiers of users it does not have: derived from
   * its bytes, so an unknown user gets the same salt every time, as a known one does.
   */
  public byte[] secret() {
    return loaded.secret().clone();
  }

  /** How many users the file has. */
  public int size() {
    return loaded.users().size();
  }

  private void refresh() {
    Loaded now = loaded;
    try {
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      if (now.same(a)) {
        return;
      }
      Loaded fresh = read(file);
      loaded = fresh;
      LOG.info("{} changed: {} users", file, fresh.users().size());
    } catch (IOException e) {
      LOG.error(
          "{}: keeping the {} users read before: {}", file, now.users().size(), e.getMessage());
      // Until the file changes again, do not read it on every authentication.
      try {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        loaded = new Loaded(now.users(), now.secret(), a);
      } catch (IOException gone) {
        // Still unreadable: it is looked at again next time.
      }
    }
  }

  private static Loaded read(Path file) throws EmberException {
    byte[] bytes;
    BasicFileAttributes attributes;
    try {
      attributes = Files.readAttributes(file, BasicFileAttributes.class);
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          NameNodeKeys.CREDENTIALS.name() + ": cannot read " + file + " (" + e + ")",
          e);
    }
    Map<String, Scram.Verifier> users = new LinkedHashMap<>();
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split("\\s+", -1);
      String where = file + " line " + (i + 1);
      if (f.length != 2 || !Scram.validUser(f[0])) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            where
                + ": expected 'USER "
                + Scram.MECHANISM
                + "$...' (as ember security add-user"
                + " writes it)");
      }
      try {
        users.put(f[0], Scram.Verifier.parse(f[1]));
      } catch (IllegalArgumentException e) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT, where + " (user " + f[0] + "): " + e.getMessage());
      }
    }
    byte[] secret;
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update("ember made-up SCRAM verifiers".getBytes(StandardCharsets.US_ASCII));
      secret = sha.digest(bytes);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    return new Loaded(Map.copyOf(users), secret, attributes);
  }

  /**
   * Adds {@code user} to {@code file} with a new verifier of {@code password}, or replaces the
   * verifier it had; creates the file (owner-only) when there is none. The file is replaced whole,
   * so a name node reading it meanwhile sees the old or the new one.
   *
   * @return true when the user was new
   * @throws EmberException {@link ErrorCode#INVALID_ARGUMENT} for a bad user name or an empty
   *     password, or a file that does not read; {@link ErrorCode#INTERNAL} when it cannot be
   *     written
   */
  public static boolean addUser(Path file, String user, String password) throws EmberException {
    if (!Scram.validUser(user)) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "'"
              + user
              + "' cannot be a user name: it must be 1 to 256 bytes, without spaces, control"
              + " characters or ':'");
    }
    if (password.isEmpty()) {
      throw new EmberException(ErrorCode.INVALID_ARGUMENT, "the password is empty");
    }
    List<String> lines = new ArrayList<>();
    if (Files.exists(file)) {
      read(file); // refuse to add to a file the name node cannot read
      try {
        lines.addAll(Files.readAllLines(file, StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT, "cannot read " + file + " (" + e + ")", e);
      }
    }
    String entry = user + " " + Scram.Verifier.of(password, Scram.DEFAULT_ITERATIONS).encode();
    boolean added = true;
    for (int i = 0; i < lines.size(); i++) {
      String[] f = lines.get(i).strip().split("\\s+", -1);
      if (f[0].equals(user)) {
        lines.set(i, entry);
        added = false;
      }
    }
    if (added) {
      lines.add(entry);
    }
    Path dir = file.toAbsolutePath().getParent();
    try {
      Files.createDirectories(dir);
      Path temp = Files.createTempFile(dir, ".credentials", ".tmp");
      try {
        try {
          Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException notPosix) {
          // Owner-only is what the temp file is made with where POSIX modes are not.
        }
        Files.write(temp, (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8));
        Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(temp);
      }
    } catch (IOException e) {
      throw new EmberException(ErrorCode.INTERNAL, "cannot write " + file + " (" + e + ")", e);
    }
    return added;
  }
}
