package io.ember.client;

import io.ember.protocol.Permissions;
import io.ember.protocol.StorageClass;
import java.util.Objects;

/**
 * How to create an entry.
 *
 * @param storageClass the preferred storage class of the entry's blocks
 * @param createParents create missing parent directories instead of failing
 * @param overwrite for a file: replace a file already at the path, in the same request, instead of
 *     failing with ALREADY_EXISTS (a directory there is still refused)
 * @param permission the new entry's mode bits, or {@link Permissions#DEFAULT} for the name node's
 *     default (rw-r--r-- for a file, rwxr-xr-x for a directory); the caller applies any umask
 */
public record CreateOptions(
    StorageClass storageClass, boolean createParents, boolean overwrite, int permission) {
  /** DRAM, no parents, no overwrite, the default mode. */
  public static final CreateOptions DEFAULT = new CreateOptions(StorageClass.DRAM, false);

  /**
   * Checks the fields.
   *
   * @throws IllegalArgumentException when {@code permission} is neither a mode nor the default
   */
  public CreateOptions {
    Objects.requireNonNull(storageClass, "storageClass");
    if (permission != Permissions.DEFAULT && (permission < 0 || permission > Permissions.MAX)) {
      throw new IllegalArgumentException(
          "mode " + Integer.toOctalString(permission) + " is not a mode (0 to 1777 octal)");
    }
  }

  /** Options with the default mode. */
  public CreateOptions(StorageClass storageClass, boolean createParents, boolean overwrite) {
    this(storageClass, createParents, overwrite, Permissions.DEFAULT);
  }

  /** Options that do not overwrite. */
  public CreateOptions(StorageClass storageClass, boolean createParents) {
    this(storageClass, createParents, false);
  }

  /** A copy with another storage class. */
  public CreateOptions withStorageClass(StorageClass sc) {
    return new CreateOptions(sc, createParents, overwrite, permission);
  }

  /** A copy that creates parents (or not). */
  public CreateOptions withCreateParents(boolean parents) {
    return new CreateOptions(storageClass, parents, overwrite, permission);
  }

  /** A copy that overwrites an existing file (or not). */
  public CreateOptions withOverwrite(boolean replace) {
    return new CreateOptions(storageClass, createParents, replace, permission);
  }

  /** A copy with mode bits {@code mode} ({@link Permissions#DEFAULT} for the default). */
  public CreateOptions withPermission(int mode) {
    return new CreateOptions(storageClass, createParents, overwrite, mode);
  }
}
