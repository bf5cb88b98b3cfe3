package io.ember.hadoop;

import io.ember.protocol.EmberKeys;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;

/**
 * Ember as a Hadoop {@code AbstractFileSystem}, for {@code FileContext}. Hadoop finds it only
 * through configuration: set {@code fs.AbstractFileSystem.ember.impl} to this class.
 */
public class EmberFs extends DelegateToFileSystem {
  /**
   * Called by Hadoop's {@code AbstractFileSystem.createFileSystem}.
   *
   * @throws IOException when the name node cannot be reached
   * @throws URISyntaxException when the URI is not an ember URI
   */
  public EmberFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(uri, new EmberFileSystem(), conf, EmberFileSystem.SCHEME, true);
  }

  @Override
  public int getUriDefaultPort() {
    return EmberKeys.DEFAULT_NAMENODE_PORT;
  }
}
