package io.streamstate.spark;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.segment.GroupCommitter;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore$;

/** The SparkSession of an integration test class: local[2], few partitions, quiet, no UI. */
final class TestSessions {
  static final String OURS = StreamStateProvider.class.getName();
  static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";
  static final int SHUFFLE_PARTITIONS = 3;

  /**
   * Session confs of a stream-stream join with state format {@code format}; skips the test on a
   * line without it.
   */
  static Map<String, String> joinStateFormat(int format) {
    // Format 3 (column families) exists from Spark 4.1 on, format 4 from 4.2 on: skip elsewhere.
    assumeTrue(format < 3 || sparkAtLeast(4, 1), "join state format 3 exists from Spark 4.1 on");
    assumeTrue(format < 4 || sparkAtLeast(4, 2), "join state format 4 exists from Spark 4.2 on");
    String key = "spark.sql.streaming.join.stateFormatVersion";
    return format == 4
        ? Map.of(key, "4", "spark.sql.streaming.join.stateFormatV4.enabled", "true")
        : Map.of(key, String.valueOf(format));
  }

  private TestSessions() {}

  /**
   * Stops {@code spark}, then {@link #stopStateStores() its state stores}: Spark's maintenance task
   * outlives the session, keeps calling the providers still loaded, and keeps this session's
   * interval for the sessions of later classes in the JVM.
   */
  static void stopWithStores(SparkSession spark) {
    spark.stop();
    stopStateStores();
  }

  /**
   * Unloads every state store provider this JVM holds and ends Spark's maintenance, the pool first
   * and outside the providers' lock where the line can (4.1 on): {@code StateStore.stop()} alone
   * holds that lock while it waits for the pool, and a pool thread unloading a provider waits for
   * the lock, so the stop sat out Spark's shutdown timeout (300 s, then 60 s more) in a CI run.
   */
  static void stopStateStores() {
    try {
      // Public in the bytecode (private[streaming] in Scala); Spark's own tests call it so.
      StateStore$.class.getMethod("stopMaintenanceTaskWithoutLock").invoke(StateStore$.MODULE$);
    } catch (NoSuchMethodException e) {
      // Spark 3.5 and 4.0: no such method; their stop() is all there is.
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("stopping Spark's state store maintenance", e);
    }
    StateStore$.MODULE$.stop();
  }

  /**
   * Whether the running Spark is at least {@code major.minor}: these test sources run on every line
   * (join state format 4, for one, exists from 4.2 on).
   */
  static boolean sparkAtLeast(int major, int minor) {
    String[] parts = org.apache.spark.package$.MODULE$.SPARK_VERSION().split("[.-]");
    int runningMajor = Integer.parseInt(parts[0]);
    int runningMinor = Integer.parseInt(parts[1]);
    return runningMajor > major || (runningMajor == major && runningMinor >= minor);
  }

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
    forcedConf().forEach(builder::config);
    SparkSession spark = builder.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    return spark;
  }

  /**
   * Extra session confs from the system property {@value #FORCED_CONF} ({@code key=value;...}): how
   * the build runs the parity ITs a second time with every changelog write hedged and async
   * durability (spark/pom.xml, execution {@code parity-hedged-async}).
   */
  static Map<String, String> forcedConf() {
    return confsOf(System.getProperty(FORCED_CONF, ""));
  }

  /**
   * Session confs from the system property {@value #FORCED_OURS_CONF}, set for the runs with our
   * provider only ({@link ClockedRun}): how the build runs the parity ITs under checkpoint format
   * v2, which Spark's HDFS-backed provider of the reference runs refuses.
   */
  static Map<String, String> forcedOursConf() {
    return confsOf(System.getProperty(FORCED_OURS_CONF, ""));
  }

  static final String FORCED_OURS_CONF = "streamstate.it.forcedOursConf";

  private static Map<String, String> confsOf(String property) {
    String spec = property.trim();
    Map<String, String> confs = new java.util.TreeMap<>();
    for (String pair : spec.split(";")) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      confs.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
    }
    return confs;
  }

  static final String FORCED_CONF = "streamstate.it.forcedConf";

  /**
   * When the forced confs hedge every write, checks that this JVM's stores did hedge, when they
   * force group commit, that segments did hold several commits, and when they force checkpoint
   * format v2, that stores were loaded by checkpoint id: else the extra parity runs would prove
   * nothing about them.
   */
  static void assertHedgedIfForced() {
    if ("2".equals(forcedOursConf().get(StreamStateConf.SPARK_CHECKPOINT_FORMAT_VERSION))) {
      org.assertj.core.api.Assertions.assertThat(CheckpointIds.parsedForTests())
          .as("stores loaded by checkpoint id in this JVM under checkpoint format v2")
          .isPositive();
    }
    if (forcedConf().containsKey(StreamStateConf.HEDGE_FLOOR_MS)) {
      org.assertj.core.api.Assertions.assertThat(
              StreamStateProvider.hedgeMetricsForTests().hedgesFired())
          .as("hedges fired in this JVM with every write hedged")
          .isPositive();
    }
    if (forcedConf().containsKey(StreamStateConf.GROUP_COMMIT_MAX_WAIT_MS)) {
      long[] totals = GroupCommitter.sharedTotals(ProcessResources.shared());
      org.assertj.core.api.Assertions.assertThat(totals[1])
          .as("commits in segments (%d segments) in this JVM with group commit forced", totals[0])
          .isGreaterThan(totals[0]);
    }
  }
}
