package io.ember.protocol;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Ember path rules, shared by client and name node so both refuse the same paths.
 *
 * <p>A path is absolute and {@code /}-separated. Repeated and trailing slashes are folded away
 * ({@code //a//b/} is {@code /a/b}). A component may not be empty, {@code .} or {@code ..}, may not
 * hold NUL, another control character (U+0001 to U+001F, U+007F) or an unpaired UTF-16 surrogate,
 * and may be at most {@value #MAX_NAME_BYTES} UTF-8 bytes; the whole path at most {@value
 * #MAX_PATH_BYTES}. Names are compared as exact code point sequences: no case folding and no
 * Unicode normalisation, so any two distinct names are distinct entries.
 */
public final class Paths {
  /** Longest component, in UTF-8 bytes. */
  public static final int MAX_NAME_BYTES = 255;

  /** Longest path, in UTF-8 bytes. */
  public static final int MAX_PATH_BYTES = 4096;

  private Paths() {}

  /**
   * Returns the path's components, after checking it.
   *
   * @throws EmberException {@link ErrorCode#INVALID_PATH} naming the rule broken
   */
  public static List<String> components(String path) throws EmberException {
    if (path == null || path.isEmpty()) {
      throw invalid(path, "empty path");
    }
    if (path.charAt(0) != '/') {
      throw invalid(path, "not absolute (must start with /)");
    }
    if (utf8Length(path) > MAX_PATH_BYTES) {
      throw invalid(path, "longer than " + MAX_PATH_BYTES + " bytes");
    }
    List<String> parts = new ArrayList<>();
    int start = 1;
    int n = path.length();
    while (start <= n) {
      int slash = path.indexOf('/', start);
      int end = slash < 0 ? n : slash;
      if (end > start) {
        String name = path.substring(start, end);
        checkName(path, name);
        parts.add(name);
      }
      start = end + 1;
    }
    return parts;
  }

  /**
   * Returns the canonical form of a path (folded slashes).
   *
   * @throws EmberException {@link ErrorCode#INVALID_PATH}
   */
  public static String normalize(String path) throws EmberException {
    return join(components(path));
  }

  /** Joins components into an absolute path; no components gives {@code /}. */
  public static String join(List<String> components) {
    if (components.isEmpty()) {
      return "/";
    }
    StringBuilder sb = new StringBuilder();
    for (String c : components) {
      sb.append('/').append(c);
    }
    return sb.toString();
  }

  /** The parent of a canonical path; the root's parent is {@code null}. */
  public static String parent(String canonical) {
    if (canonical.equals("/")) {
      return null;
    }
    int i = canonical.lastIndexOf('/');
    return i == 0 ? "/" : canonical.substring(0, i);
  }

  /** The last component of a canonical path; the root's is the empty string. */
  public static String name(String canonical) {
    return canonical.substring(canonical.lastIndexOf('/') + 1);
  }

  /** A child path of a canonical directory path. */
  public static String child(String canonicalDir, String name) {
    return canonicalDir.equals("/") ? "/" + name : canonicalDir + "/" + name;
  }

  private static void checkName(String path, String name) throws EmberException {
    if (name.equals(".") || name.equals("..")) {
      throw invalid(path, "'" + name + "' components are not allowed");
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == 0) {
        throw invalid(path, "NUL character in a name");
      }
      if (c < 0x20 || c == 0x7f) {
        // A newline or tab in a name breaks every line-oriented listing (ls, scripts).
        throw invalid(
            path,
            String.format(java.util.Locale.ROOT, "control character U+%04X in a name", (int) c));
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= name.length() || !Character.isLowSurrogate(name.charAt(i + 1))) {
          throw invalid(path, "unpaired UTF-16 surrogate in a name");
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        throw invalid(path, "unpaired UTF-16 surrogate in a name");
      }
    }
    if (utf8Length(name) > MAX_NAME_BYTES) {
      throw invalid(path, "a name is longer than " + MAX_NAME_BYTES + " bytes");
    }
  }

  /**
   * {@code text} with control characters written as {@code \n}, {@code \t} or {@code \xNN}, so that
   * a name printed on a terminal or in a listing stays on its line.
   */
  public static String escape(String text) {
    StringBuilder out = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c >= 0x20 && c != 0x7f) {
        if (out != null) {
          out.append(c);
        }
        continue;
      }
      if (out == null) {
        out = new StringBuilder(text.length() + 8).append(text, 0, i);
      }
      switch (c) {
        case '\n' -> out.append("\\n");
        case '\t' -> out.append("\\t");
        case '\r' -> out.append("\\r");
        default -> out.append(String.format(java.util.Locale.ROOT, "\\x%02x", (int) c));
      }
    }
    return out == null ? text : out.toString();
  }

  private static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  private static EmberException invalid(String path, String why) {
    String shown =
        path == null ? "null" : escape(path.length() > 200 ? path.substring(0, 200) + "..." : path);
    return new EmberException(ErrorCode.INVALID_PATH, "invalid path '" + shown + "': " + why);
  }
}
