package io.streamstate.spark;

import io.streamstate.core.engine.RocksDbMemoryBudget;
import io.streamstate.core.engine.StoreOptions;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Every configuration key of the Spark adapter, with its default: the one place they are
 * documented.
 *
 * <p>Keys live under {@value #PREFIX}. Spark hands a provider only the SQL confs starting with
 * {@code spark.sql.streaming.stateStore.} ({@link StateStoreConf#sqlConfs()}), which is why ours
 * sit there; set them on the session ({@code spark.conf.set}) or with {@code --conf}.
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@value #SNAPSHOT_INTERVAL}</td><td>Spark's {@code
 *       spark.sql.streaming.stateStore.minDeltasForSnapshot} (10)</td><td>maintenance snapshots a
 *       store once it is this many versions past its last snapshot</td></tr>
 *   <tr><td>{@value #MEMORY_CAP_BYTES}</td><td>268435456 (256 MiB)</td><td>one RocksDB memory
 *       budget (block cache plus memtables) shared by every store of the executor JVM; the first
 *       store opened in a JVM fixes it</td></tr>
 *   <tr><td>{@value #TORN_FILE_GRACE_MS}</td><td>120000</td><td>a durable file that does not
 *       verify and is older than this is the leftover of a crashed writer and may be removed;
 *       also the minimum age of an unreferenced SST before retention deletes it</td></tr>
 *   <tr><td>{@value #LOCAL_DIR}</td><td>the executor's first local directory ({@code
 *       spark.local.dir}, YARN/K8s local dirs), else {@code java.io.tmpdir}</td><td>root of the
 *       local RocksDB working directories; each provider instance gets a fresh subdirectory,
 *       deleted when it closes</td></tr>
 *   <tr><td>{@value #LOCK_TIMEOUT_MS}</td><td>120000</td><td>how long a task waits for another
 *       task's store of the same partition to be committed, aborted or released before
 *       failing</td></tr>
 * </table>
 *
 * <p>Retention comes from Spark's {@code spark.sql.streaming.minBatchesToRetain} (default 100):
 * loading any of the newest that many versions stays possible.
 */
public final class StreamStateConf {
  /** Prefix of every key. */
  public static final String PREFIX = "spark.sql.streaming.stateStore.streamstate.";

  public static final String SNAPSHOT_INTERVAL = PREFIX + "snapshotInterval";
  public static final String MEMORY_CAP_BYTES = PREFIX + "memoryCapBytes";
  public static final String TORN_FILE_GRACE_MS = PREFIX + "tornFileGraceMs";
  public static final String LOCAL_DIR = PREFIX + "localDir";
  public static final String LOCK_TIMEOUT_MS = PREFIX + "lockTimeoutMs";

  public static final long DEFAULT_MEMORY_CAP_BYTES = RocksDbMemoryBudget.DEFAULT_CAP_BYTES;
  public static final long DEFAULT_TORN_FILE_GRACE_MS =
      StoreOptions.defaults().tornFileGraceMillis();
  public static final long DEFAULT_LOCK_TIMEOUT_MS = 120_000;

  /** Spark's key that selects checkpoint format v2 (checkpoint ids), which we do not support. */
  public static final String SPARK_CHECKPOINT_FORMAT_VERSION =
      "spark.sql.streaming.stateStore.checkpointFormatVersion";

  private final StoreOptions storeOptions;
  private final long memoryCapBytes;
  private final Optional<String> localDir;
  private final long lockTimeoutMs;

  private StreamStateConf(
      StoreOptions storeOptions,
      long memoryCapBytes,
      Optional<String> localDir,
      long lockTimeoutMs) {
    this.storeOptions = storeOptions;
    this.memoryCapBytes = memoryCapBytes;
    this.localDir = localDir;
    this.lockTimeoutMs = lockTimeoutMs;
  }

  /** Reads our keys from the confs Spark passes to a provider. */
  public static StreamStateConf from(StateStoreConf storeConf) {
    Map<String, String> confs = CollectionConverters.asJava(storeConf.sqlConfs());
    int retain = storeConf.minVersionsToRetain();
    int interval = (int) readLong(confs, SNAPSHOT_INTERVAL, storeConf.minDeltasForSnapshot());
    long grace = readLong(confs, TORN_FILE_GRACE_MS, DEFAULT_TORN_FILE_GRACE_MS);
    StoreOptions options;
    try {
      options = new StoreOptions(retain, interval, grace);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Invalid streamstate configuration (spark.sql.streaming.minBatchesToRetain="
              + retain
              + ", "
              + SNAPSHOT_INTERVAL
              + "="
              + interval
              + ", "
              + TORN_FILE_GRACE_MS
              + "="
              + grace
              + "): "
              + e.getMessage(),
          e);
    }
    long cap = readLong(confs, MEMORY_CAP_BYTES, DEFAULT_MEMORY_CAP_BYTES);
    long lockTimeout = readLong(confs, LOCK_TIMEOUT_MS, DEFAULT_LOCK_TIMEOUT_MS);
    String dir = confs.get(LOCAL_DIR);
    return new StreamStateConf(
        options, cap, Optional.ofNullable(dir).filter(s -> !s.isBlank()), lockTimeout);
  }

  public StoreOptions storeOptions() {
    return storeOptions;
  }

  public long memoryCapBytes() {
    return memoryCapBytes;
  }

  public Optional<String> localDir() {
    return localDir;
  }

  public long lockTimeoutMs() {
    return lockTimeoutMs;
  }

  private static long readLong(Map<String, String> confs, String key, long defaultValue) {
    String value = confs.get(key);
    if (value == null || value.isBlank()) {
      return defaultValue;
    }
    try {
      return Long.parseLong(value.trim().toLowerCase(Locale.ROOT).replace("_", ""));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "Invalid value for " + key + ": '" + value + "' (expected a whole number)", e);
    }
  }
}
