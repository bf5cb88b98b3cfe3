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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The users of {@link NameNodeKeys#CREDENTIALS}, a file of lines {@code USER SCRAM-SHA-256$...}
 * that {@code ember security add-user} writes: each user's salted SCRAM verifier, never a password,
 * and one line {@code :unknown-users SECRET} with the random secret that unknown users' made-up
 * salts come from. The name node reads the file again when it changes, so adding a user or changing
 * a password needs no restart; a file that no longer reads keeps the users it had, and says why in
 * the log; a file that is gone admits nobody.
 */
public final class Credentials {
  private static final Logger LOG = LoggerFactory.getLogger(Credentials.class);

  /** The first word of the line that holds the secret for unknown users' made-up verifiers. */
  static final String UNKNOWN_USERS = ":unknown-users";

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
      return seen != null
          && java.util.Objects.equals(now.fileKey(), seen.fileKey())
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
    Loaded first = read(file, null);
    warnIfOthersMayRead(file);
    return new Credentials(file, first);
  }

  /** The verifier of {@code user}, or null when there is no such user. */
  public Scram.Verifier verifier(String user) {
    refresh();
    return loaded.users().get(user);
  }

  /**
   * A secret of this file's own, for the made-up verifiers of users it does not have: the file's
   * {@value #UNKNOWN_USERS} line, which add-user keeps, so an unknown user gets the same salt every
   * time, before and after other users change, as a known one does. A file without that line
   * (written by hand) gets a random one that lasts until the name node restarts.
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
      Loaded fresh = read(file, now.secret());
      loaded = fresh;
      LOG.info("{} changed: {} users", file, fresh.users().size());
      warnIfOthersMayRead(file);
    } catch (EmberException e) {
      // Until the file changes again, do not read it on every authentication.
      try {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        LOG.error("keeping the {} users read before: {}", now.users().size(), e.getMessage());
        loaded = new Loaded(now.users(), now.secret(), a);
      } catch (java.nio.file.NoSuchFileException gone) {
        admitNobody(now);
      } catch (IOException unreadable) {
        LOG.error("keeping the {} users read before: {}", now.users().size(), e.getMessage());
      }
    } catch (java.nio.file.NoSuchFileException gone) {
      admitNobody(now);
    } catch (IOException e) {
      LOG.error("{}: keeping the {} users read before: {}", file, now.users().size(), e.toString());
    }
  }

  /** The file was removed: a way to withdraw every password, so nobody is let in by one. */
  private void admitNobody(Loaded now) {
    if (!now.users().isEmpty()) {
      LOG.error(
          "{} is gone: no password user is let in until it is back ({} users were in it)",
          file,
          now.users().size());
      loaded = new Loaded(Map.of(), now.secret(), null);
    }
  }

  /** The verifiers let whoever reads them pass for the name node, and guess passwords offline. */
  private static void warnIfOthersMayRead(Path file) {
    try {
      var modes = Files.getPosixFilePermissions(file);
      if (modes.contains(java.nio.file.attribute.PosixFilePermission.GROUP_READ)
          || modes.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_READ)) {
        LOG.warn(
            "{} can be read by others ({}): its verifiers let a reader pass for this name node and"
                + " guess passwords offline; make it owner-only (chmod 600)",
            file,
            PosixFilePermissions.toString(modes));
      }
    } catch (IOException | UnsupportedOperationException e) {
      // Not a POSIX file system, or gone: nothing to say.
    }
  }

  /**
   * Reads {@code file}; {@code secretBefore} is the unknown users' secret to keep when the file has
   * no {@value #UNKNOWN_USERS} line (null: a new random one).
   */
  private static Loaded read(Path file, byte[] secretBefore) throws EmberException {
    byte[] bytes;
    BasicFileAttributes attributes;
    try {
      attributes = Files.readAttributes(file, BasicFileAttributes.class);
      bytes = Files.readAllBytes(file);
    } catch (java.nio.file.NoSuchFileException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          NameNodeKeys.CREDENTIALS.name()
              + ": "
              + file
              + " does not exist (ember security add-user NAME --credentials "
              + file
              + " makes it)",
          e);
    } catch (IOException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          NameNodeKeys.CREDENTIALS.name() + ": cannot read " + file + " (" + e + ")",
          e);
    }
    Map<String, Scram.Verifier> users = new LinkedHashMap<>();
    Map<String, Integer> lineOf = new java.util.HashMap<>();
    byte[] secret = null;
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split("\\s+", -1);
      String where = file + " line " + (i + 1);
      if (f.length == 2 && f[0].equals(UNKNOWN_USERS)) {
        secret = unknownUsersSecret(f[1], where);
        continue;
      }
      if (f.length != 2 || !Scram.validUser(f[0])) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            where
                + ": expected 'USER "
                + Scram.MECHANISM
                + "$...' (as ember security add-user"
                + " writes it)");
      }
      Integer earlier = lineOf.putIfAbsent(f[0], i + 1);
      if (earlier != null) {
        // Which of two verifiers holds would depend on the order: let the file's owner decide.
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            where + ": user " + f[0] + " is on line " + earlier + " already");
      }
      try {
        users.put(f[0], Scram.Verifier.parse(f[1]));
      } catch (IllegalArgumentException e) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT, where + " (user " + f[0] + "): " + e.getMessage());
      }
    }
    if (secret == null) {
      if (secretBefore == null) {
        LOG.warn(
            "{} has no {} line (add-user writes one): unknown users' made-up salts change when the"
                + " name node restarts, which tells them from real ones to whoever watches",
            file,
            UNKNOWN_USERS);
      }
      secret = secretBefore != null ? secretBefore : newSecret();
    }
    return new Loaded(Map.copyOf(users), secret, attributes);
  }

  private static byte[] newSecret() {
    byte[] secret = new byte[32];
    new java.security.SecureRandom().nextBytes(secret);
    return secret;
  }

  private static byte[] unknownUsersSecret(String text, String where) throws EmberException {
    try {
      byte[] secret = java.util.Base64.getDecoder().decode(text);
      if (secret.length >= 16) {
        return secret;
      }
    } catch (IllegalArgumentException e) {
      // said below
    }
    throw new EmberException(
        ErrorCode.INVALID_ARGUMENT,
        where + ": " + UNKNOWN_USERS + " takes 16 or more random bytes in base64");
  }

  /**
   * Adds {@code user} to {@code file} with a new verifier of {@code password}, or replaces the
   * verifier it had; creates the file (owner-only) when there is none. The file is replaced whole,
   * so a name node reading it meanwhile sees the old or the new one; the new file keeps the old
   * one's owner and group, and two add-users at once take turns (a lock file beside it).
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
    Path dir = file.toAbsolutePath().getParent();
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new EmberException(ErrorCode.INTERNAL, "cannot write " + file + " (" + e + ")", e);
    }
    // Two add-users at once would each write the file they read, and one user would be lost.
    Path lockFile = dir.resolve("." + file.getFileName() + ".lock");
    try (java.nio.channels.FileChannel lock =
        java.nio.channels.FileChannel.open(
            lockFile,
            java.nio.file.StandardOpenOption.CREATE,
            java.nio.file.StandardOpenOption.WRITE)) {
      try {
        Files.setPosixFilePermissions(lockFile, PosixFilePermissions.fromString("rw-------"));
        if (Files.exists(file)) {
          // Whoever may change the file may take the lock next time, whoever ran this first.
          Files.setOwner(lockFile, Files.getOwner(file));
        }
      } catch (UnsupportedOperationException | IOException notOurs) {
        // Another's lock file, or no POSIX owners: it locks all the same.
      }
      java.nio.channels.FileLock held;
      try {
        held = lock.lock();
      } catch (java.nio.channels.OverlappingFileLockException sameProcess) {
        throw new EmberException(
            ErrorCode.INTERNAL, "another add-user in this process is changing " + file + " now");
      }
      try {
        return addUserLocked(file, dir, user, password);
      } finally {
        held.release();
      }
    } catch (EmberException e) {
      throw e;
    } catch (IOException e) {
      throw new EmberException(
          ErrorCode.INTERNAL, "cannot lock " + lockFile + " to change " + file + " (" + e + ")", e);
    }
  }

  private static boolean addUserLocked(Path file, Path dir, String user, String password)
      throws EmberException {
    List<String> lines = new ArrayList<>();
    java.nio.file.attribute.PosixFileAttributes before = null;
    if (Files.exists(file)) {
      read(file, null); // refuse to add to a file the name node cannot read
      try {
        lines.addAll(Files.readAllLines(file, StandardCharsets.UTF_8));
        before = Files.readAttributes(file, java.nio.file.attribute.PosixFileAttributes.class);
      } catch (UnsupportedOperationException notPosix) {
        // Nothing to keep of its owner.
      } catch (IOException e) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT, "cannot read " + file + " (" + e + ")", e);
      }
    }
    if (lines.stream().noneMatch(l -> l.strip().split("\\s+", -1)[0].equals(UNKNOWN_USERS))) {
      lines.add(0, UNKNOWN_USERS + " " + java.util.Base64.getEncoder().encodeToString(newSecret()));
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
    try {
      Path temp = Files.createTempFile(dir, ".credentials", ".tmp");
      try {
        try {
          Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rw-------"));
          if (before != null) {
            // Run as root for a name node that runs as its own user, the new file must stay that
            // user's, or the name node could no longer read it.
            Files.setOwner(temp, before.owner());
            try {
              Files.getFileAttributeView(temp, java.nio.file.attribute.PosixFileAttributeView.class)
                  .setGroup(before.group());
            } catch (IOException notAMember) {
              // The file is owner-only: its group grants nothing.
            }
          }
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
