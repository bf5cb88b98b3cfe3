package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PathsTest {
  @Test
  void foldsRepeatedAndTrailingSlashes() throws Exception {
    assertEquals("/", Paths.normalize("/"));
    assertEquals("/", Paths.normalize("///"));
    assertEquals("/a/b", Paths.normalize("//a///b/"));
    assertEquals(List.of("a", "b c", "d"), Paths.components("/a/b c/d"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "a/b",
        "relative",
        "/a/./b",
        "/a/../b",
        "/..",
        "/.",
        "/a\0b",
        "/a\nb",
        "/tab\there",
        "/bell\u0007",
        "/del\u007f"
      })
  void refusesBadPaths(String path) {
    EmberException e = assertThrows(EmberException.class, () -> Paths.normalize(path));
    assertEquals(ErrorCode.INVALID_PATH, e.code());
    // The message names the path on one line, control characters escaped.
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
  }

  @Test
  void aControlCharacterIsNamedInTheMessage() {
    EmberException e = assertThrows(EmberException.class, () -> Paths.normalize("/a\nb"));
    assertEquals("invalid path '/a\\nb': control character U+000A in a name", e.getMessage());
  }

  @Test
  void refusesUnpairedSurrogatesBecauseTheyWouldCollapseInUtf8() {
    // Both would encode to the same replacement bytes; accepting them would merge two names.
    assertThrows(EmberException.class, () -> Paths.normalize("/a\uD800"));
    assertThrows(EmberException.class, () -> Paths.normalize("/a\uDC00b"));
  }

  @Test
  void refusesNamesAndPathsThatAreTooLong() throws Exception {
    Paths.normalize("/" + "x".repeat(255));
    assertThrows(EmberException.class, () -> Paths.normalize("/" + "x".repeat(256)));
    // Multi-byte characters count in bytes, not chars: 128 * 2 bytes = 256.
    assertThrows(EmberException.class, () -> Paths.normalize("/" + "é".repeat(128)));
    assertThrows(EmberException.class, () -> Paths.normalize("/a".repeat(2049)));
  }

  @Test
  void keepsDistinctNamesDistinct() throws Exception {
    // Equal String.hashCode(), different case, composed vs decomposed Unicode, trailing space.
    String[][] pairs = {{"Aa", "BB"}, {"a", "A"}, {"\u00e9", "e\u0301"}, {"x", "x "}};
    for (String[] p : pairs) {
      assertNotEquals(Paths.normalize("/" + p[0]), Paths.normalize("/" + p[1]));
    }
  }

  @Test
  void parentNameAndChild() {
    assertNull(Paths.parent("/"));
    assertEquals("/", Paths.parent("/a"));
    assertEquals("/a", Paths.parent("/a/b"));
    assertEquals("b", Paths.name("/a/b"));
    assertEquals("/x", Paths.child("/", "x"));
    assertEquals("/a/x", Paths.child("/a", "x"));
  }
}
