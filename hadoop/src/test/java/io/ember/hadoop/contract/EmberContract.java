package io.ember.hadoop.contract;

import io.ember.minicluster.DevCertificates;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
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
    if (tls()) {
      b.config(EmberConfig.of(tlsSettings("node")));
    }
    if (scram()) {
      b.config(
          EmberConfig.of(scramSettings("node"))
              .with(io.ember.namenode.NameNodeKeys.CREDENTIALS, credentials().toString()));
    }
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

  /**
   * A Hadoop configuration that puts new files on the storage class under test, and under TLS
   * presents a user's certificate.
   */
  public static Configuration configure(Configuration conf) {
    conf.set(io.ember.hadoop.EmberFileSystem.STORAGE_CLASS_KEY, storageClass());
    if (tls()) {
      tlsSettings("tester").forEach(conf::set);
    }
    if (scram()) {
      scramSettings("tester").forEach(conf::set);
    }
    return conf;
  }

  /**
   * Whether the cluster and its clients run mutual TLS: {@code -Dember.test.tls=true} (the build
   * runs the contract tests once so).
   */
  public static boolean tls() {
    return Boolean.getBoolean("ember.test.tls");
  }

  /**
   * Whether the cluster and its clients authenticate with passwords (SCRAM) instead: {@code
   * -Dember.test.scram=true} (the build runs the contract tests once so).
   */
  public static boolean scram() {
    return Boolean.getBoolean("ember.test.scram");
  }

  private static java.nio.file.Path credentialsFile;

  /** A credentials file made for this JVM, with the users {@code node} and {@code tester}. */
  private static synchronized java.nio.file.Path credentials() {
    try {
      if (credentialsFile == null) {
        credentialsFile = Files.createTempDirectory("ember-contract-scram").resolve("credentials");
        for (String user : List.of("node", "tester")) {
          io.ember.namenode.Credentials.addUser(credentialsFile, user, user + "-password");
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return credentialsFile;
  }

  /** Settings that authenticate as {@code user} with the password {@link #credentials} holds. */
  private static Map<String, String> scramSettings(String user) {
    return Map.of(
        EmberKeys.SCRAM.name(),
        "true",
        EmberKeys.USER.name(),
        user,
        EmberKeys.PASSWORD.name(),
        user + "-password");
  }

  private static java.nio.file.Path certificates;

  /** TLS settings presenting {@code name}'s certificate from a CA made for this JVM. */
  private static synchronized Map<String, String> tlsSettings(String name) {
    try {
      if (certificates == null) {
        certificates = Files.createTempDirectory("ember-contract-tls");
        DevCertificates ca = DevCertificates.openOrCreate(certificates);
        ca.issue("node", List.of("localhost", "127.0.0.1"));
        ca.issue("tester", List.of());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Map.of(
        EmberKeys.TLS.name(), "true",
        EmberKeys.TLS_CERTIFICATE.name(), certificates.resolve(name + ".pem").toString(),
        EmberKeys.TLS_KEY.name(), certificates.resolve(name + ".key").toString(),
        EmberKeys.TLS_CA.name(), certificates.resolve("ca.pem").toString());
  }

  /** The mini cluster the contract tests run against, started on first use. */
  public static synchronized MiniCluster cluster() throws EmberException {
    if (cluster == null) {
      cluster = newCluster("256k", "256m");
      Runtime.getRuntime().addShutdownHook(new Thread(cluster::close));
      if (tls() || scram()) {
        requireSecured(cluster);
      }
    }
    return cluster;
  }

  /**
   * Fails unless the cluster refuses a plain client: a secured run must not pass without its
   * security.
   */
  private static void requireSecured(MiniCluster cluster) {
    try (io.ember.client.EmberClient plain =
        io.ember.client.EmberClient.connect(
            EmberConfig.defaults()
                .with(EmberKeys.NAMENODE_ADDRESS, cluster.namenodeAddress().toString()))) {
      plain.lookup("/");
    } catch (EmberException e) {
      if (e.code() == io.ember.protocol.ErrorCode.UNAUTHENTICATED) {
        return;
      }
      throw new IllegalStateException("a plain client failed otherwise than refused: " + e, e);
    }
    throw new IllegalStateException("the cluster answered a plain client: it is not secured");
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
