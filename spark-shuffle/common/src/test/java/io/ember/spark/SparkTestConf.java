package io.ember.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkConf;

/** The Spark settings every test here starts from. */
final class SparkTestConf {
  private SparkTestConf() {}

  /**
   * Makes a Spark home that local-cluster mode accepts and points Spark's workers at it. Spark's
   * launcher learns the Scala version from launcher/target/scala-X.Y and adds jars/ (empty here);
   * executors get this JVM's class path through {@link #localCluster}. Undo with {@link
   * #forgetLocalClusters}.
   */
  static Path prepareLocalClusters() throws IOException {
    Path sparkHome = Files.createTempDirectory("spark-home");
    Files.createDirectories(sparkHome.resolve("launcher/target/scala-" + scalaBinaryVersion()));
    Files.createDirectories(sparkHome.resolve("jars"));
    // Spark's workers read their home from these JVM properties, as in Spark's own tests.
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", sparkHome.toString());
    return sparkHome;
  }

  static void forgetLocalClusters() {
    System.clearProperty("spark.testing");
    System.clearProperty("spark.test.home");
  }

  /** The Scala version Spark was built with, as its launcher names it: 2.12 or 2.13. */
  private static String scalaBinaryVersion() {
    String full = scala.util.Properties.versionNumberString();
    return full.substring(0, full.lastIndexOf('.'));
  }

  /**
   * Spark in local-cluster mode: {@code executors} executor JVMs of one core each, started from
   * {@code sparkHome} (made by {@link #prepareLocalClusters}) with this JVM's class path.
   */
  static SparkConf localCluster(String appName, Path sparkHome, int executors) {
    String cp = System.getProperty("java.class.path");
    return local(appName)
        .setMaster("local-cluster[" + executors + ",1,1024]")
        .set("spark.home", sparkHome.toString())
        .set("spark.test.home", sparkHome.toString())
        .set("spark.executor.extraClassPath", cp)
        .set("spark.driver.extraClassPath", cp)
        .set(
            "spark.executor.extraJavaOptions",
            System.getProperty("ember.test.sparkModuleOptions", ""));
  }

  /** Spark on two local threads, bound to loopback, without its web UI. */
  static SparkConf local(String appName) {
    return new SparkConf()
        .setMaster("local[2]")
        .setAppName(appName)
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1");
  }

  /** {@code conf} with Ember's shuffle, against the name node at {@code namenode}. */
  static SparkConf withEmberShuffle(SparkConf conf, String namenode) {
    return conf.set("spark.shuffle.manager", EmberShuffleManager.class.getName())
        .set(EmberShuffleManager.PLUGIN_KEY, EmberShuffleDataIO.class.getName())
        .set(EmberShuffleConf.NAMENODE, namenode);
  }
}
