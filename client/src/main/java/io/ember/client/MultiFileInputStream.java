package io.ember.client;

import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.Paths;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;

/** A multifile's closed children read one after another, in name order. */
final class MultiFileInputStream extends InputStream {
  private final EmberClient client;
  private final String path;
  private final List<DirEntry> children;
  private int next;
  private EmberInputStream current;
  private boolean closed;

  MultiFileInputStream(EmberClient client, String path, List<DirEntry> children) {
    this.client = client;
    this.path = path;
    this.children = children;
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    int n = read(one, 0, 1);
    return n < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (closed) {
      throw new IOException(path + ": stream is closed");
    }
    if (len == 0) {
      return 0;
    }
    while (true) {
      if (current == null) {
        if (next >= children.size()) {
          return -1;
        }
        DirEntry child = children.get(next++);
        current =
            new EmberInputStream(
                client,
                Paths.child(path, child.name()),
                child.status(),
                (int) (long) client.config().get(ClientKeys.TRANSFER_SIZE),
                client.config().get(ClientKeys.READ_AHEAD));
      }
      int n = current.read(b, off, len);
      if (n >= 0) {
        return n;
      }
      current.close();
      current = null;
    }
  }

  @Override
  public void close() {
    closed = true;
    if (current != null) {
      current.close();
      current = null;
    }
  }
}
