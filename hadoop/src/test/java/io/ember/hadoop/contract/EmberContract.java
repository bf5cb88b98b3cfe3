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
 * Hadoop's contract tests bound to Ember: one mini cluster per test JVM, and the options in {@code
 * contract/ember.xml}, which declare Ember's real behaviour.
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

  /**
   * The storage class the tests put files on: {@code -Dember.test.storage-class=dram|nvmf} (the
   * build runs the suite once for each).
   */
  public static String storageClass() {
    return System.getProperty("ember.test.storage-class", "dram");
  }

  /**
   * A mini cluster with both tiers: two data nodes of the storage class under test, of {@code
   * capacity} each, and one small node of the other class (NVMf over embedded NVMe/TCP targets).
   */
  public static MiniCluster newCluster(String blockSize, String capacity) throws EmberException {
    MiniCluster.Builder b = MiniCluster.builder().blockSize(blockSize);
    if (storageClass().equals("nvmf")) {
      b.dramDatanodes(1)
          .dramCapacity("8m")
          .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, capacity)
          .nvmfDatanode("")
          .nvmfDatanode("");
    } else {
      b.dramDatanodes(2)
          .dramCapacity(capacity)
          .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, "8m")
          .nvmfDatanode("");
    }
    return b.build();
  }

  /** A Hadoop configuration that puts new files on the storage class under test. */
  public static Configuration configure(Configuration conf) {
    conf.set(io.ember.hadoop.EmberFileSystem.STORAGE_CLASS_KEY, storageClass());
    return conf;
  }

  /** The mini cluster the contract tests run against, started on first use. */
  public static synchronized MiniCluster cluster() throws EmberException {
    if (cluster == null) {
      cluster = newCluster("256k", "256m");
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
    fs = FileSystem.get(uri(), configure(getConf()));
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
