package io.ember.nvmf.target;

import io.ember.nvmf.auth.DhGroup;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a host must prove to use a subsystem (in-band authentication, DH-HMAC-CHAP): its secret, and
 * optionally the controller secret the target proves it holds when the host asks. The hashes and
 * groups are what the target accepts, most preferred first.
 *
 * @param hostKey the host's secret ({@code DHHC-1:...})
 * @param ctrlKey the controller's secret, or null: hosts asking the controller to authenticate are
 *     refused
 * @param hashes hashes the target accepts, most preferred first
 * @param groups DH groups the target accepts, most preferred first
 */
public record HostKeys(
    DhchapSecret hostKey, DhchapSecret ctrlKey, List<DhchapHash> hashes, List<DhGroup> groups) {

  /** Every hash, strongest first. */
  public static final List<DhchapHash> ALL_HASHES =
      List.of(DhchapHash.SHA512, DhchapHash.SHA384, DhchapHash.SHA256);

  /**
   * The groups accepted unless others are named: FFDHE 2048 to 4096, smallest first, then the null
   * group. The larger groups cost a second or more of CPU per queue, which an unauthenticated host
   * could otherwise ask for on every connection: name them to accept them.
   */
  public static final List<DhGroup> DEFAULT_GROUPS =
      List.of(DhGroup.FFDHE2048, DhGroup.FFDHE3072, DhGroup.FFDHE4096, DhGroup.NULL);

  /**
   * Keys with checked lists.
   *
   * @throws IllegalArgumentException when the host key is missing or a list is empty
   */
  public HostKeys {
    Objects.requireNonNull(hostKey, "hostKey");
    hashes = List.copyOf(hashes);
    groups = List.copyOf(groups);
    if (hashes.isEmpty() || groups.isEmpty()) {
      throw new IllegalArgumentException("DH-HMAC-CHAP needs at least one hash and one DH group");
    }
  }

  /**
   * Reads per-host keys from a file of lines {@code HOSTNQN HOST-SECRET [CTRL-SECRET]
   * [hash=sha512,sha256] [group=ffdhe2048,null]}; blank lines and lines starting with {@code #} are
   * skipped. Keep the file readable by the target's user only: it holds secrets.
   *
   * @return host NQN to keys, in the file's order
   * @throws IOException when the file cannot be read
   * @throws IllegalArgumentException naming the line of a malformed entry (the message never shows
   *     a secret)
   */
  public static Map<String, HostKeys> read(Path file) throws IOException {
    Map<String, HostKeys> out = readAny(file);
    if (out.isEmpty()) {
      // An empty list would admit every host without authentication: never what was meant.
      throw new IllegalArgumentException(file + " lists no host");
    }
    return out;
  }

  /**
   * Reads a file as {@link #read} does, but an empty list is an answer: for a file read again while
   * a target runs, where no host listed means no host admitted (see {@link
   * Subsystem#replaceHostKeys}), not every host.
   *
   * @throws IOException when the file cannot be read
   * @throws IllegalArgumentException naming the line of a malformed entry
   */
  public static Map<String, HostKeys> readAny(Path file) throws IOException {
    Map<String, HostKeys> out = new LinkedHashMap<>();
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String where = file + " line " + (n + 1);
      String[] words = line.split("\\s+", -1);
      if (words.length < 2) {
        throw new IllegalArgumentException(
            where + ": expected HOSTNQN HOST-SECRET [CTRL-SECRET] [hash=...] [group=...]");
      }
      DhchapSecret ctrl = null;
      List<DhchapHash> hashes = ALL_HASHES;
      List<DhGroup> groups = DEFAULT_GROUPS;
      try {
        DhchapSecret host = DhchapSecret.parse(words[1]);
        for (int i = 2; i < words.length; i++) {
          String w = words[i];
          if (w.startsWith("hash=")) {
            hashes = new ArrayList<>();
            for (String h : w.substring(5).split(",", -1)) {
              hashes.add(DhchapHash.byName(h));
            }
          } else if (w.startsWith("group=")) {
            groups = new ArrayList<>();
            for (String g : w.substring(6).split(",", -1)) {
              groups.add(DhGroup.byName(g));
            }
          } else if (ctrl == null && i == 2) {
            ctrl = DhchapSecret.parse(w);
          } else {
            throw new IllegalArgumentException("unexpected word " + (i + 1));
          }
        }
        if (out.put(words[0], new HostKeys(host, ctrl, hashes, groups)) != null) {
          throw new IllegalArgumentException("host " + words[0] + " is listed twice");
        }
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
      }
    }
    return out;
  }

  /** A host key (and optional controller key) with every hash and the default groups. */
  public static HostKeys of(DhchapSecret hostKey, DhchapSecret ctrlKey) {
    return new HostKeys(hostKey, ctrlKey, ALL_HASHES, DEFAULT_GROUPS);
  }
}
