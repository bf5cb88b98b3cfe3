package io.ember.client;

import io.ember.protocol.StorageClass;
import java.util.Objects;

/**
 * How to create an entry.
 *
 * @param storageClass the preferred storage class of the entry's blocks
 * @param createParents create missing parent directories instead of failing
 */
public record CreateOptions(StorageClass storageClass, boolean createParents) {
  /** DRAM, no parents. */
  public static final CreateOptions DEFAULT = new CreateOptions(StorageClass.DRAM, false);

  /** Checks the fields. */
  public CreateOptions {
    Objects.requireNonNull(storageClass, "storageClass");
  }

  /** A copy with another storage class. */
  public CreateOptions withStorageClass(StorageClass sc) {
    return new CreateOptions(sc, createParents);
  }

  /** A copy that creates parents (or not). */
  public CreateOptions withCreateParents(boolean parents) {
    return new CreateOptions(storageClass, parents);
  }
}
