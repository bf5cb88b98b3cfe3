package io.ember.namenode;

import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Permissions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Turns an authenticated identity into a {@link Caller}: its groups from the groups file (every
 * identity is also in a group of its own name, as a Unix user's private group), and whether it is a
 * super-user (named in {@code ember.security.superusers}, or in the super-user group).
 */
final class Identities {
  private final Set<String> superusers;
  private final String superGroup;
  private final Map<String, Set<String>> groupsByUser;
  private final Caller internal;

  private Identities(
      Set<String> superusers, String superGroup, Map<String, Set<String>> groupsByUser) {
    this.superusers = Set.copyOf(superusers);
    this.superGroup = superGroup;
    this.groupsByUser = Map.copyOf(groupsByUser);
    String first = superusers.iterator().next();
    this.internal = new Caller(first, Set.of(first, superGroup), true);
  }

  /**
   * Identities from the super-users, the super-user group and the groups file ({@code ""} for
   * none), whose lines read {@code group: user, user}; {@code #} starts a comment.
   *
   * @throws EmberException INVALID_ARGUMENT when no super-user is named, or the file cannot be read
   *     or has a line that is not a group, naming the file and the line
   */
  static Identities of(List<String> superusers, String superGroup, String groupsFile)
      throws EmberException {
    if (superusers.isEmpty()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT, "ember.security.superusers names no super-user");
    }
    Map<String, Set<String>> groups = new HashMap<>();
    if (!groupsFile.isEmpty()) {
      List<String> lines;
      try {
        lines = Files.readAllLines(Path.of(groupsFile), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new EmberException(
            ErrorCode.INVALID_ARGUMENT,
            "cannot read the groups file " + groupsFile + " (ember.security.groups): " + e,
            e);
      }
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i);
        int hash = line.indexOf('#');
        line = (hash >= 0 ? line.substring(0, hash) : line).strip();
        if (line.isEmpty()) {
          continue;
        }
        int colon = line.indexOf(':');
        String group = colon < 0 ? "" : line.substring(0, colon).strip();
        if (group.isEmpty()
            || group.contains(",")
            || group.getBytes(StandardCharsets.UTF_8).length > Permissions.MAX_NAME_BYTES) {
          throw new EmberException(
              ErrorCode.INVALID_ARGUMENT,
              groupsFile
                  + " line "
                  + (i + 1)
                  + ": expected 'group: user, user', found '"
                  + lines.get(i).strip()
                  + "'");
        }
        for (String user : line.substring(colon + 1).split(",", -1)) {
          if (!user.isBlank()) {
            groups.computeIfAbsent(user.strip(), u -> new HashSet<>()).add(group);
          }
        }
      }
    }
    return new Identities(new java.util.LinkedHashSet<>(superusers), superGroup, groups);
  }

  /** The caller of a cluster without authentication, and the owner of what the name node makes. */
  Caller internal() {
    return internal;
  }

  /** The super-user group, the root directory's group. */
  String superGroup() {
    return superGroup;
  }

  /** The caller an authenticated {@code identity} is. */
  Caller caller(String identity) {
    Set<String> listed = groupsByUser.getOrDefault(identity, Set.of());
    // Membership of the super-user group comes from the groups file alone: an identity named as
    // the group is not in it by its name.
    boolean superuser = superusers.contains(identity) || listed.contains(superGroup);
    Set<String> groups = new HashSet<>(listed);
    groups.add(identity);
    return new Caller(identity, groups, superuser);
  }
}
