package io.ember.client;

import io.ember.protocol.StorageClass;
import java.util.Objects;

/**
 * How to create an entry.
 *
 * @param storageClass the preferred storage class of the entry's blocks
 * @param createParents create missing parent directories instead of failing
 * @param overwrite for a file: replace a file already at the path, in the same request, instead of
 *     failing with ALREADY_EXISTS (a directory there is still refused)
 */
public record CreateOptions(StorageClass storageClass, boolean createParents, boolean overwrite) {
  /** DRAM, no parents, no overwrite. */
  public static final CreateOptions DEFAULT = new CreateOptions(StorageClass.DRAM, false);

  /** Checks the fields. */
  public CreateOptions {
    Objects.requireNonNull(storageClass, "storageClass");
  }

  /** Options that do not overwrite. */
  public CreateOptions(StorageClass storageClass, boolean createParents) {
    this(storageClass, createParents, false);
  }

  /** A copy with another storage class. */
  public CreateOptions withStorageClass(StorageClass sc) {
    return new CreateOptions(sc, createParents, overwrite);
  }

  /** A copy that creates parents (or not). */
  public CreateOptions withCreateParents(boolean parents) {
    return new CreateOptions(storageClass, parents, overwrite);
  }

  /** A copy that overwrites an existing file (or not). */
  public CreateOptions withOverwrite(boolean replace) {
    return new CreateOptions(storageClass, createParents, replace);
  }
}
