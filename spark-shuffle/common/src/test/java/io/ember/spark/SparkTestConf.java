package io.ember.spark;

import org.apache.spark.SparkConf;

/** The Spark settings every test here starts from. */
final class SparkTestConf {
  private SparkTestConf() {}

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
