package io.streamstate.spark;

import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/** The SparkSession of an integration test class: local[2], few partitions, quiet, no UI. */
final class TestSessions {
  static final String OURS = StreamStateProvider.class.getName();
  static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";
  static final int SHUFFLE_PARTITIONS = 3;

  private TestSessions() {}

  /**
   * A fresh work directory for one test class, under {@code target/}. Not a JUnit {@code @TempDir}:
   * Spark's maintenance thread may still write snapshot files after {@code spark.stop()}, which
   * makes JUnit's cleanup fail the class; {@code mvn clean} removes these.
   */
  static Path newWorkDir(Class<?> testClass) {
    try {
      Path base = Path.of("target", "it-work");
      java.nio.file.Files.createDirectories(base);
      return java.nio.file.Files.createTempDirectory(base, testClass.getSimpleName() + "-")
          .toAbsolutePath();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  static SparkSession start(String app, Path workDir, Map<String, String> extra) {
    SparkSession.Builder builder =
        SparkSession.builder()
            .master("local[2]")
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.local.dir", workDir.resolve("spark-local").toString())
            .config("spark.sql.shuffle.partitions", String.valueOf(SHUFFLE_PARTITIONS))
            .config("spark.sql.warehouse.dir", workDir.resolve("warehouse").toString())
            // Hadoop's local file system forks a process per file without native libraries.
            .config(
                "spark.sql.streaming.checkpointFileManagerClass",
                "org.apache.spark.sql.execution.streaming.checkpointing."
                    + "FileSystemBasedCheckpointFileManager")
            // Frequent maintenance and snapshots, so that tests restore from snapshots too.
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "200ms")
            .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
            .config(StreamStateConf.LOCAL_DIR, workDir.resolve("streamstate-local").toString())
            .config(StreamStateConf.MEMORY_CAP_BYTES, String.valueOf(64L << 20));
    extra.forEach(builder::config);
    SparkSession spark = builder.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    return spark;
  }
}
