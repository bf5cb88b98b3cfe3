package io.ember.spark;

import io.ember.client.EmberClient;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Paths;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.api.ShuffleDataIO;
import org.apache.spark.shuffle.api.ShuffleDriverComponents;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.shuffle.api.ShuffleMapOutputWriter;

/**
 * Spark's shuffle storage plugin ({@code spark.shuffle.sort.io.plugin.class}) for Ember: every map
 * task's output goes to one Ember file that ends in its index, under a directory per application
 * and shuffle. Spark is told the storage is reliable, so losing an executor does not lose its map
 * output, and dynamic allocation works without the external shuffle service.
 */
public final class EmberShuffleDataIO implements ShuffleDataIO {
  static final String ROOT_KEY = "ember.root";

  private final SparkConf conf;

  /** Called by Spark with the application's configuration. */
  public EmberShuffleDataIO(SparkConf conf) {
    this.conf = conf;
  }

  @Override
  public ShuffleExecutorComponents executor() {
    return new Executor(conf);
  }

  @Override
  public ShuffleDriverComponents driver() {
    return new Driver(conf);
  }

  /** The directory of one shuffle. */
  static String shuffleDir(String appRoot, int shuffleId) {
    return Paths.child(appRoot, Integer.toString(shuffleId));
  }

  private static final class Driver implements ShuffleDriverComponents {
    private final SparkConf conf;
    private String appRoot;

    Driver(SparkConf conf) {
      this.conf = conf;
    }

    @Override
    public Map<String, String> initializeApplication() {
      String app = conf.get("spark.app.id", "app") + "-" + UUID.randomUUID();
      appRoot = Paths.child(EmberShuffleConf.root(conf), app.replaceAll("[^A-Za-z0-9._-]", "_"));
      try {
        EmberShuffleConf.client(conf).createDirectory(appRoot, true);
      } catch (EmberException e) {
        throw new UncheckedIOException(
            "Ember shuffle: cannot create " + appRoot + ": " + e.getMessage(), e);
      }
      return Map.of(ROOT_KEY, appRoot);
    }

    @Override
    public void registerShuffle(int shuffleId) {
      try {
        EmberShuffleConf.client(conf).createDirectory(shuffleDir(appRoot, shuffleId), true);
      } catch (EmberException e) {
        if (e.code() != ErrorCode.ALREADY_EXISTS) {
          throw new UncheckedIOException(
              "Ember shuffle: cannot register shuffle " + shuffleId + ": " + e.getMessage(), e);
        }
      }
    }

    @Override
    public void removeShuffle(int shuffleId, boolean blocking) {
      deleteQuietly(shuffleDir(appRoot, shuffleId));
    }

    @Override
    public void cleanupApplication() {
      deleteQuietly(appRoot);
      EmberShuffleConf.closeClient();
    }

    @Override
    public boolean supportsReliableStorage() {
      return true;
    }

    private void deleteQuietly(String path) {
      if (path == null) {
        return;
      }
      try {
        EmberShuffleConf.client(conf).delete(path, true);
      } catch (EmberException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          org.slf4j.LoggerFactory.getLogger(EmberShuffleDataIO.class)
              .warn("Ember shuffle: cannot delete {}: {}", path, e.getMessage());
        }
      }
    }
  }

  private static final class Executor implements ShuffleExecutorComponents {
    private final SparkConf conf;
    private String appRoot;

    Executor(SparkConf conf) {
      this.conf = conf;
    }

    @Override
    public void initializeExecutor(String appId, String execId, Map<String, String> extraConfigs) {
      appRoot = extraConfigs.get(ROOT_KEY);
      if (appRoot == null) {
        throw new IllegalStateException(
            "Ember shuffle: the driver did not pass its shuffle "
                + "directory (is spark.shuffle.sort.io.plugin.class set on the driver too?)");
      }
    }

    @Override
    public ShuffleMapOutputWriter createMapOutputWriter(
        int shuffleId, long mapTaskId, int numPartitions) throws IOException {
      EmberClient client = EmberShuffleConf.client(conf);
      return new EmberMapOutputWriter(
          client,
          Paths.child(shuffleDir(appRoot, shuffleId), Long.toString(mapTaskId)),
          numPartitions,
          EmberShuffleConf.storageClass(conf));
    }
  }
}
