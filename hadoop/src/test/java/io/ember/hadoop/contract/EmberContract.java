package io.ember.hadoop.contract;

import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberException;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * Hadoop's contract tests bound to Ember: one mini cluster per test JVM, and the options in
 * {@code contract/ember.xml}, which declare Ember's real behaviour.
 */
public class EmberContract extends AbstractFSContract {
  /** The contract options resource. */
  public static final String CONTRACT_XML = "contract/ember.xml";

  private static MiniCluster cluster;
  private FileSystem fs;

  /** A contract over the shared cluster. */
  public EmberContract(Configuration conf) {
    super(conf);
    addConfResource(CONTRACT_XML);
  }

  /** The mini cluster the contract tests run against, started on first use. */
  public static synchronized MiniCluster cluster() throws EmberException {
    if (cluster == null) {
      cluster = MiniCluster.builder().dramDatanodes(2).blockSize("256k").dramCapacity("256m")
          .build();
      Runtime.getRuntime().addShutdownHook(new Thread(cluster::close));
    }
    return cluster;
  }

  /** The file system URI of the shared cluster. */
  public static URI uri() throws EmberException {
    return URI.create("ember://" + cluster().namenodeAddress() + "/");
  }

  @Override
  public void init() throws IOException {
    super.init();
    fs = FileSystem.get(uri(), getConf());
  }

  @Override
  public FileSystem getTestFileSystem() {
    return fs;
  }

  @Override
  public String getScheme() {
    return "ember";
  }

  @Override
  public Path getTestPath() {
    return new Path("/test");
  }
}
