package io.ember.benchmarks.spark;

import io.ember.spark.EmberShuffleDataIO;
import io.ember.spark.EmberShuffleManager;
import org.apache.spark.SparkConf;

/** The shuffles the suite compares: Spark's own on local disk, and Ember's on each tier. */
public enum Shuffle {
  SPARK("spark", null),
  EMBER_DRAM("ember-dram", "dram"),
  EMBER_NVMF("ember-nvmf", "nvmf");

  private final String label;
  private final String storageClass;

  Shuffle(String label, String storageClass) {
    this.label = label;
    this.storageClass = storageClass;
  }

  /** The name used on the command line and in tables. */
  public String label() {
    return label;
  }

  /** Whether this is one of Ember's. */
  public boolean ember() {
    return storageClass != null;
  }

  /** Sets conf up for this shuffle, against the Ember name node at host:port. */
  public SparkConf apply(SparkConf conf, String namenode) {
    if (ember()) {
      conf.set("spark.shuffle.manager", EmberShuffleManager.class.getName())
          .set(EmberShuffleManager.PLUGIN_KEY, EmberShuffleDataIO.class.getName())
          .set("spark.ember.namenode", namenode)
          .set("spark.ember.shuffle.storageClass", storageClass);
    }
    return conf;
  }

  /**
   * The shuffle with this label.
   *
   * @throws IllegalArgumentException for an unknown label
   */
  public static Shuffle parse(String label) {
    for (Shuffle s : values()) {
      if (s.label.equals(label)) {
        return s;
      }
    }
    throw new IllegalArgumentException(
        "unknown shuffle '" + label + "': use spark, ember-dram or ember-nvmf");
  }
}
