package io.ember.namenode;

import java.util.Set;

/**
 * Who made a request, for the name node's permission checks.
 *
 * @param name the caller's identity: its certificate's common name under TLS
 * @param groups the groups the caller belongs to
 * @param superuser true for a caller every check lets through: a super-user, and every caller of a
 *     cluster without authentication, which cannot tell one caller from another
 */
record Caller(String name, Set<String> groups, boolean superuser) {
  /** A caller with no identity and no groups: only modes open to all let it through. */
  static final Caller NOBODY = new Caller("", Set.of(), false);

  Caller {
    groups = Set.copyOf(groups);
  }

  /** "alice", for error messages. */
  @Override
  public String toString() {
    return name.isEmpty() ? "an unnamed caller" : name;
  }
}
