package io.ember.protocol;

import java.util.Locale;

/**
 * A storage class: where a block's bytes live. 0 is DRAM and 1 is NVMf; further classes can be
 * named by configuration and are written as {@code class<N>}.
 *
 * @param id the number sent on the wire, 0 to 255
 */
public record StorageClass(int id) {
  /** Blocks in data-node memory. */
  public static final StorageClass DRAM = new StorageClass(0);

  /** Blocks on NVMe namespaces behind NVMf targets. */
  public static final StorageClass NVMF = new StorageClass(1);

  /** Checks the id's range. */
  public StorageClass {
    if (id < 0 || id > 255) {
      throw new IllegalArgumentException("storage class id must be 0..255, was " + id);
    }
  }

  /**
   * Parses "dram", "nvmf" or a number, case-insensitively.
   *
   * @throws IllegalArgumentException for any other text
   */
  public static StorageClass parse(String text) {
    String t = text.trim().toLowerCase(Locale.ROOT);
    switch (t) {
      case "dram":
        return DRAM;
      case "nvmf":
        return NVMF;
      default:
        String digits = t.startsWith("class") ? t.substring(5) : t;
        try {
          return new StorageClass(Integer.parseInt(digits));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "unknown storage class '" + text + "': use dram, nvmf or a number 0..255");
        }
    }
  }

  /** The class's name for people: DRAM, NVMf or class N. */
  public String displayName() {
    return switch (id) {
      case 0 -> "DRAM";
      case 1 -> "NVMf";
      default -> "class" + id;
    };
  }

  @Override
  public String toString() {
    return displayName();
  }
}
