package io.ember.benchmarks.spark;

import io.ember.datanode.nvmf.NvmfDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * Where the benchmarks run: an Ember cluster (one given by its name node, or one started in this
 * process with a DRAM and an NVMf data node over an embedded target) and Spark sessions against it,
 * in local-cluster mode by default.
 */
final class BenchCluster implements AutoCloseable {
  private final MiniCluster own;
  private final String namenode;
  private final Path workDir;
  private final String master;
  private final int executorMemoryMb;

  /**
   * @param namenode an Ember name node's host:port, or null to start a cluster here
   * @param dram the started cluster's DRAM capacity
   * @param nvmfSize the started cluster's NVMf target size (a file under workDir)
   * @param executors executor JVMs of the local cluster
   * @param executorMemoryMb heap of each executor
   * @param master a Spark master to use instead of local-cluster, or null
   */
  BenchCluster(
      String namenode,
      String dram,
      String nvmfSize,
      Path workDir,
      int executors,
      int executorMemoryMb,
      String master)
      throws Exception {
    this.workDir = Files.createDirectories(workDir.toAbsolutePath());
    this.executorMemoryMb = executorMemoryMb;
    if (namenode == null) {
      own =
          MiniCluster.builder()
              .realTimeouts()
              .dramDatanodes(1)
              .dramCapacity(dram)
              .set(
                  NvmfDataNodeKeys.EMBEDDED_FILE,
                  this.workDir.resolve("nvmf-target.img").toString())
              .set(NvmfDataNodeKeys.EMBEDDED_SIZE, nvmfSize)
              .nvmfDatanode("")
              .build();
      this.namenode = own.namenodeAddress().toString();
    } else {
      own = null;
      this.namenode = namenode;
    }
    if (master == null) {
      // local-cluster starts executors through Spark's launcher, which wants a Spark home: it
      // reads the Scala version from launcher/target/scala-2.13 and adds jars/ (empty here).
      // Executors get this JVM's class path instead. Spark's workers find their home through
      // these JVM properties, as in Spark's own tests.
      Path sparkHome = this.workDir.resolve("spark-home");
      Files.createDirectories(sparkHome.resolve("launcher/target/scala-2.13"));
      Files.createDirectories(sparkHome.resolve("jars"));
      System.setProperty("spark.testing", "true");
      System.setProperty("spark.test.home", sparkHome.toString());
      this.master = "local-cluster[" + executors + ",1," + executorMemoryMb + "]";
    } else {
      this.master = master;
    }
  }

  /** Whether Spark runs on this host only (local or local-cluster mode). */
  private boolean local() {
    return master.startsWith("local");
  }

  /**
   * The host executors reach the driver at: loopback in local modes; with a master on other hosts,
   * this host's address (a name may not resolve elsewhere: a container started by {@code compose
   * run} has no name on its network).
   */
  private String driverHost() throws IOException {
    return local() ? "127.0.0.1" : java.net.InetAddress.getLocalHost().getHostAddress();
  }

  String namenode() {
    return namenode;
  }

  /** The ember:// URI of a path in the cluster. */
  String uri(String path) {
    return "ember://" + namenode + path;
  }

  Path workDir() {
    return workDir;
  }

  /**
   * A new Spark session with the given shuffle; broadcast joins off when asked.
   *
   * @param dataClass the Ember storage class of files the jobs write
   */
  SparkSession session(String app, Shuffle shuffle, boolean broadcastJoins, String dataClass)
      throws IOException {
    String cp = System.getProperty("java.class.path");
    SparkConf conf =
        new SparkConf()
            .setMaster(master)
            .setAppName(app)
            .set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.driver.host", driverHost())
            .set("spark.driver.bindAddress", local() ? "127.0.0.1" : "0.0.0.0")
            .set(
                "spark.local.dir",
                Files.createDirectories(workDir.resolve("spark-local")).toString())
            .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
            .set("spark.kryo.classesToRegister", TeraKey.class.getName() + ",[B")
            .set("spark.hadoop.ember.hadoop.storage-class", dataClass);
    if (!local()) {
      conf.set("spark.executor.memory", executorMemoryMb + "m");
    }
    if (master.startsWith("local-cluster")) {
      // local-cluster's memory figure is each worker's; executors take spark.executor.memory.
      conf.set("spark.executor.memory", executorMemoryMb + "m")
          .set("spark.home", System.getProperty("spark.test.home"))
          .set("spark.test.home", System.getProperty("spark.test.home"))
          .set("spark.executor.extraClassPath", cp)
          .set("spark.driver.extraClassPath", cp);
    }
    if (!broadcastJoins) {
      conf.set("spark.sql.autoBroadcastJoinThreshold", "-1");
    }
    shuffle.apply(conf, namenode);
    return SparkSession.builder().config(conf).getOrCreate();
  }

  @Override
  public void close() {
    if (own != null) {
      own.close();
    }
  }
}
