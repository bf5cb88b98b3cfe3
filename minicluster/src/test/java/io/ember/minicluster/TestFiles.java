package io.ember.minicluster;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import java.io.IOException;
import java.util.Random;

/** File contents and reads shared by the cluster tests. */
final class TestFiles {
  private TestFiles() {}

  /** {@code n} random bytes, the same for the same {@code seed}. */
  static byte[] data(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** All of a file's bytes. */
  static byte[] readAll(EmberClient c, String path) throws IOException {
    try (EmberInputStream in = c.open(path)) {
      return in.readAllBytes();
    }
  }
}
