package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.hedge.HedgePolicy;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;

/**
 * The configuration of the Spark adapters, read: an adapter reads Spark's {@code StateStoreConf}
 * into a plain map and two ints and calls {@link #parse(Map, int, int)} (its {@code
 * io.streamstate.spark.StreamStateConf} extends this class, so the adapter's code names the keys
 * and accessors through it). Spark-free, the same in every Spark line.
 *
 * <p>The key names are the constants below; each key's type, default, scope and meaning are
 * described once, in {@link StreamStateKeys}, from which docs/configuration.md (the reference users
 * read) is generated. Values are read as Spark reads its own ({@link
 * io.streamstate.core.config.ConfigValues}): sizes and durations with Spark's suffixes, strict
 * booleans. Keys live under {@value #PREFIX}: Spark hands a provider only the SQL confs starting
 * with {@code spark.sql.streaming.stateStore.} ({@code StateStoreConf.sqlConfs()}), which is why
 * ours sit there; set them on the session ({@code spark.conf.set}) or with {@code --conf}.
 */
public class StreamStateSettings {
  /** Prefix of every key. */
  public static final String PREFIX = "spark.sql.streaming.stateStore.streamstate.";

  public static final String SNAPSHOT_INTERVAL = PREFIX + "snapshotInterval";
  public static final String SNAPSHOT_INLINE_SST_MAX_BYTES = PREFIX + "snapshot.inlineSstMaxBytes";
  public static final String CHANGELOG_CODEC = PREFIX + "changelog.codec";
  public static final String SNAPSHOT_REPLAY_DEBT_PERCENT = PREFIX + "snapshot.replayDebtPercent";
  public static final String SNAPSHOT_REPLAY_DEBT_MIN_CHANGES =
      PREFIX + "snapshot.replayDebtMinChanges";
  public static final String SNAPSHOT_CLOSE_WAIT_MS = PREFIX + "snapshot.closeWaitMs";
  public static final String MEMORY_CAP_BYTES = PREFIX + "memoryCapBytes";
  public static final String HEAP_MIRROR_BYTES = PREFIX + "heapMirrorBytes";
  public static final String NATIVE_HEAP_TRIM_INTERVAL_MS = PREFIX + "nativeHeapTrimIntervalMs";
  public static final String TORN_FILE_GRACE_MS = PREFIX + "tornFileGraceMs";
  public static final String LOCAL_DIR = PREFIX + "localDir";
  public static final String LOCK_TIMEOUT_MS = PREFIX + "lockTimeoutMs";
  public static final String DURABILITY = PREFIX + "durability";
  public static final String ASYNC_MAX_LAG_VERSIONS = PREFIX + "durability.asyncMaxLagVersions";
  public static final String GROUP_COMMIT_ENABLED = PREFIX + "groupCommit.enabled";
  public static final String GROUP_COMMIT_MAX_WAIT_MS = PREFIX + "groupCommit.maxWaitMs";
  public static final String GROUP_COMMIT_WAVE_MS = PREFIX + "groupCommit.waveMs";
  public static final String GROUP_COMMIT_JOURNAL = PREFIX + "groupCommit.journal";
  public static final String GROUP_COMMIT_JOURNAL_ROLL_BYTES =
      PREFIX + "groupCommit.journal.rollBytes";
  public static final String GROUP_COMMIT_JOURNAL_ROLL_MS = PREFIX + "groupCommit.journal.rollMs";
  public static final String HEDGE_ENABLED = PREFIX + "hedge.enabled";

  /** Read by {@code RenameFreeCheckpointFileManager} ({@link #logJournalEnabled}). */
  public static final String LOG_JOURNAL = PREFIX + "logJournal.enabled";

  /** Read by {@code RenameFreeCheckpointFileManager} ({@link #logJournalRollRecords}). */
  public static final String LOG_JOURNAL_ROLL_RECORDS = PREFIX + "logJournal.rollRecords";

  public static final int DEFAULT_LOG_JOURNAL_ROLL_RECORDS = 2048;

  public static final String HEDGE_FLOOR_MS = PREFIX + "hedge.floorMs";
  public static final String HEDGE_INITIAL_DEADLINE_MS = PREFIX + "hedge.initialDeadlineMs";
  public static final String HEDGE_MULTIPLIER = PREFIX + "hedge.multiplier";
  public static final String HEDGE_PERCENTILE = PREFIX + "hedge.percentile";
  public static final String HEDGE_BUDGET_FRACTION = PREFIX + "hedge.budgetFraction";
  public static final String HEDGE_STALLED_AFTER_MS = PREFIX + "hedge.stalledAfterMs";

  public static final long DEFAULT_MEMORY_CAP_BYTES = RocksDbMemoryBudget.DEFAULT_CAP_BYTES;
  public static final long DEFAULT_TORN_FILE_GRACE_MS =
      StoreOptions.defaults().tornFileGraceMillis();
  public static final long DEFAULT_LOCK_TIMEOUT_MS = 120_000;
  public static final long DEFAULT_SNAPSHOT_CLOSE_WAIT_MS = 30_000;

  /** Spark's key that selects checkpoint format v2 (checkpoint ids in the commit log). */
  public static final String SPARK_CHECKPOINT_FORMAT_VERSION =
      "spark.sql.streaming.stateStore.checkpointFormatVersion";

  private final StoreOptions storeOptions;
  private final long memoryCapBytes;
  private final boolean memoryCapSet;
  private final long heapMirrorBytes;
  private final long nativeHeapTrimIntervalMs;
  private final Optional<String> localDir;
  private final long lockTimeoutMs;
  private final long snapshotCloseWaitMs;
  private final HedgePolicy hedgePolicy;
  private final long groupCommitMaxWaitMs;
  private final long groupCommitWaveMs;
  private final SegmentJournalSettings journal;

  /** A copy of {@code settings}: for an adapter's subclass, which adds how it reads Spark. */
  protected StreamStateSettings(StreamStateSettings settings) {
    this(
        settings.storeOptions,
        settings.memoryCapBytes,
        settings.memoryCapSet,
        settings.heapMirrorBytes,
        settings.nativeHeapTrimIntervalMs,
        settings.localDir,
        settings.lockTimeoutMs,
        settings.snapshotCloseWaitMs,
        settings.hedgePolicy,
        settings.groupCommitMaxWaitMs,
        settings.groupCommitWaveMs,
        settings.journal);
  }

  private StreamStateSettings(
      StoreOptions storeOptions,
      long memoryCapBytes,
      boolean memoryCapSet,
      long heapMirrorBytes,
      long nativeHeapTrimIntervalMs,
      Optional<String> localDir,
      long lockTimeoutMs,
      long snapshotCloseWaitMs,
      HedgePolicy hedgePolicy,
      long groupCommitMaxWaitMs,
      long groupCommitWaveMs,
      SegmentJournalSettings journal) {
    this.journal = journal;
    this.groupCommitMaxWaitMs = groupCommitMaxWaitMs;
    this.groupCommitWaveMs = groupCommitWaveMs;
    this.storeOptions = storeOptions;
    this.memoryCapBytes = memoryCapBytes;
    this.memoryCapSet = memoryCapSet;
    this.heapMirrorBytes = heapMirrorBytes;
    this.nativeHeapTrimIntervalMs = nativeHeapTrimIntervalMs;
    this.localDir = localDir;
    this.lockTimeoutMs = lockTimeoutMs;
    this.snapshotCloseWaitMs = snapshotCloseWaitMs;
    this.hedgePolicy = hedgePolicy;
  }

  /**
   * Reads our keys from the SQL confs Spark passes to a provider; warns (once per JVM) about
   * unknown keys under our prefix and about Spark's codec ({@link ConfigWarnings}).
   *
   * @param confs Spark's {@code StateStoreConf.sqlConfs()}
   * @param minVersionsToRetain Spark's {@code StateStoreConf.minVersionsToRetain()} ({@code
   *     spark.sql.streaming.minBatchesToRetain})
   * @param minDeltasForSnapshot Spark's {@code StateStoreConf.minDeltasForSnapshot()}, the default
   *     of {@link #SNAPSHOT_INTERVAL}
   * @throws IllegalArgumentException naming the key whose value is invalid
   */
  public static StreamStateSettings parse(
      Map<String, String> confs, int minVersionsToRetain, int minDeltasForSnapshot) {
    return parse(
        confs,
        minVersionsToRetain,
        minDeltasForSnapshot,
        ConfigWarnings.of(ProcessResources.shared()));
  }

  /** As {@link #parse(Map, int, int)}, saying what it notices to {@code warnings}. */
  public static StreamStateSettings parse(
      Map<String, String> confs,
      int minVersionsToRetain,
      int minDeltasForSnapshot,
      ConfigWarnings warnings) {
    warnings.checkKeys(confs.keySet());
    warnings.checkSparkCodec(confs);
    int retain = minVersionsToRetain;
    int interval =
        (int) StreamStateKeys.SNAPSHOT_INTERVAL_KEY.readLong(confs, minDeltasForSnapshot);
    long grace = StreamStateKeys.TORN_FILE_GRACE_MS_KEY.readLong(confs);
    long inlineSst = StreamStateKeys.SNAPSHOT_INLINE_SST_MAX_BYTES_KEY.readLong(confs);
    int asyncLag;
    if (StreamStateKeys.DURABILITY_KEY.readChoice(confs).equals("sync")) {
      asyncLag = 0;
    } else {
      asyncLag = (int) StreamStateKeys.ASYNC_MAX_LAG_VERSIONS_KEY.readLong(confs);
      if (asyncLag < 1) {
        throw new IllegalArgumentException(
            "Invalid value for " + ASYNC_MAX_LAG_VERSIONS + ": " + asyncLag + " (expected >= 1)");
      }
    }
    Changelog.Codec codec =
        Changelog.Codec.fromName(StreamStateKeys.CHANGELOG_CODEC_KEY.readChoice(confs));
    long replayDebtPercent = StreamStateKeys.SNAPSHOT_REPLAY_DEBT_PERCENT_KEY.readLong(confs);
    // Bounded so that the int option and the engine's percent * keys stay far from overflow; 1,000
    // times the state in changes is already "never" in practice.
    if (replayDebtPercent > 100_000) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + SNAPSHOT_REPLAY_DEBT_PERCENT
              + ": "
              + replayDebtPercent
              + " (expected 0 to 100000)");
    }
    long replayDebtMinChanges =
        nonNegative(
            StreamStateKeys.SNAPSHOT_REPLAY_DEBT_MIN_CHANGES_KEY.readLong(confs),
            SNAPSHOT_REPLAY_DEBT_MIN_CHANGES);
    StoreOptions options;
    try {
      options =
          new StoreOptions(
              retain,
              interval,
              grace,
              asyncLag,
              inlineSst,
              codec,
              (int) replayDebtPercent,
              replayDebtMinChanges);
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
              + ", "
              + SNAPSHOT_INLINE_SST_MAX_BYTES
              + "="
              + inlineSst
              + "): "
              + e.getMessage(),
          e);
    }
    long cap = StreamStateKeys.MEMORY_CAP_BYTES_KEY.readLong(confs, DEFAULT_MEMORY_CAP_BYTES);
    long lockTimeout = StreamStateKeys.LOCK_TIMEOUT_MS_KEY.readLong(confs);
    return new StreamStateSettings(
        options,
        cap,
        StreamStateKeys.MEMORY_CAP_BYTES_KEY.find(confs).isPresent(),
        StreamStateKeys.HEAP_MIRROR_BYTES_KEY.find(confs).isPresent()
            ? nonNegative(
                StreamStateKeys.HEAP_MIRROR_BYTES_KEY.readLong(confs, 0), HEAP_MIRROR_BYTES)
            : -1,
        nonNegative(
            StreamStateKeys.NATIVE_HEAP_TRIM_INTERVAL_MS_KEY.readLong(confs),
            NATIVE_HEAP_TRIM_INTERVAL_MS),
        StreamStateKeys.LOCAL_DIR_KEY.find(confs),
        lockTimeout,
        nonNegative(
            StreamStateKeys.SNAPSHOT_CLOSE_WAIT_MS_KEY.readLong(confs), SNAPSHOT_CLOSE_WAIT_MS),
        hedgePolicy(confs),
        groupCommitMaxWaitMs(confs),
        StreamStateKeys.GROUP_COMMIT_WAVE_MS_KEY.find(confs).isPresent()
            ? nonNegative(
                StreamStateKeys.GROUP_COMMIT_WAVE_MS_KEY.readLong(confs, 0), GROUP_COMMIT_WAVE_MS)
            : GroupCommitter.DEFAULT_WAVE,
        journal(confs, grace));
  }

  /** The segment journal settings, or null when {@link #GROUP_COMMIT_JOURNAL} is false. */
  private static SegmentJournalSettings journal(Map<String, String> confs, long graceMillis) {
    if (!StreamStateKeys.GROUP_COMMIT_JOURNAL_KEY.readBoolean(confs)) {
      return null;
    }
    long rollBytes = StreamStateKeys.GROUP_COMMIT_JOURNAL_ROLL_BYTES_KEY.readLong(confs);
    long rollMs = StreamStateKeys.GROUP_COMMIT_JOURNAL_ROLL_MS_KEY.readLong(confs);
    try {
      return new SegmentJournalSettings(rollBytes, rollMs, graceMillis);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + GROUP_COMMIT_JOURNAL_ROLL_BYTES
              + " ("
              + rollBytes
              + ") or "
              + GROUP_COMMIT_JOURNAL_ROLL_MS
              + " ("
              + rollMs
              + "): "
              + e.getMessage(),
          e);
    }
  }

  /**
   * How group commits append to a segment journal where the storage can append (HDFS, local disk);
   * null when {@link #GROUP_COMMIT_JOURNAL} is false (a segment file per group commit).
   */
  public SegmentJournalSettings journal() {
    return journal;
  }

  /** The group commit's maximum wait, or -1 when group commit is off. */
  private static long groupCommitMaxWaitMs(Map<String, String> confs) {
    boolean enabled = StreamStateKeys.GROUP_COMMIT_ENABLED_KEY.readBoolean(confs);
    long wait =
        nonNegative(
            StreamStateKeys.GROUP_COMMIT_MAX_WAIT_MS_KEY.readLong(confs), GROUP_COMMIT_MAX_WAIT_MS);
    return enabled ? wait : -1;
  }

  private static long nonNegative(long value, String key) {
    if (value < 0) {
      throw new IllegalArgumentException(
          "Invalid value for " + key + ": " + value + " (expected >= 0)");
    }
    return value;
  }

  /**
   * Which tasks a group commit waits for: those that began within this long of each other; {@link
   * GroupCommitter#DEFAULT_WAVE} unless set (0 with a journal, 250 ms without).
   */
  public long groupCommitWaveMs() {
    return groupCommitWaveMs;
  }

  /** Whether sync commits are grouped into segments (async commits never are). */
  public boolean groupCommitEnabled() {
    return groupCommitMaxWaitMs >= 0 && !storeOptions.isAsync();
  }

  /** How long a group commit waits for its other members at most. */
  public long groupCommitMaxWaitMs() {
    return Math.max(0, groupCommitMaxWaitMs);
  }

  /**
   * The policy of our {@code hedge.*} keys in a Hadoop configuration (Spark copies every SQL conf
   * into the one it gives checkpoint file managers and file-sink tasks); absent keys: defaults.
   */
  public static HedgePolicy hedgePolicy(Configuration hadoopConf) {
    return hedgePolicy(ourKeys(hadoopConf));
  }

  /** {@link #LOG_JOURNAL_ROLL_RECORDS} in a Hadoop configuration (at least 1). */
  public static int logJournalRollRecords(Configuration hadoopConf) {
    long value = StreamStateKeys.LOG_JOURNAL_ROLL_RECORDS_KEY.readLong(ourKeys(hadoopConf));
    if (value < 1 || value > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + LOG_JOURNAL_ROLL_RECORDS
              + ": "
              + value
              + " (expected 1 to "
              + Integer.MAX_VALUE
              + ")");
    }
    return (int) value;
  }

  /**
   * {@link #LOG_JOURNAL} in a Hadoop configuration: {@code true} or {@code false}, else refused.
   */
  public static boolean logJournalEnabled(Configuration hadoopConf) {
    return StreamStateKeys.LOG_JOURNAL_KEY.readBoolean(ourKeys(hadoopConf));
  }

  /**
   * Warns (once per JVM, through {@code resources}' {@link ConfigWarnings}) about every key under
   * our prefix in a Hadoop configuration that names no key of ours: for the driver's checkpoint
   * file manager, which reads our keys there and may run where no store ever opens.
   */
  public static void checkKeys(Configuration hadoopConf, ProcessResources resources) {
    ConfigWarnings.of(resources).checkKeys(ourKeys(hadoopConf).keySet());
  }

  /** The entries of {@code hadoopConf} under {@link #PREFIX}. */
  private static Map<String, String> ourKeys(Configuration hadoopConf) {
    Map<String, String> keys = new HashMap<>();
    for (Map.Entry<String, String> e : hadoopConf) {
      if (e.getKey().startsWith(PREFIX)) {
        keys.put(e.getKey(), e.getValue());
      }
    }
    return keys;
  }

  /** The hedge policy of our {@code hedge.*} keys in {@code confs} (absent keys: defaults). */
  static HedgePolicy hedgePolicy(Map<String, String> confs) {
    HedgePolicy.Builder b = HedgePolicy.builder();
    if (!StreamStateKeys.HEDGE_ENABLED_KEY.readBoolean(confs)) {
      return b.disable().build();
    }
    try {
      return b.floor(Duration.ofMillis(StreamStateKeys.HEDGE_FLOOR_MS_KEY.readLong(confs)))
          .initialDeadline(
              Duration.ofMillis(StreamStateKeys.HEDGE_INITIAL_DEADLINE_MS_KEY.readLong(confs)))
          .multiplier(StreamStateKeys.HEDGE_MULTIPLIER_KEY.readDouble(confs))
          .percentile(StreamStateKeys.HEDGE_PERCENTILE_KEY.readDouble(confs))
          .budgetFraction(StreamStateKeys.HEDGE_BUDGET_FRACTION_KEY.readDouble(confs))
          .stalledAfter(
              Duration.ofMillis(StreamStateKeys.HEDGE_STALLED_AFTER_MS_KEY.readLong(confs)))
          .build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Invalid streamstate hedge configuration (keys "
              + PREFIX
              + "hedge.*; defaults "
              + HedgePolicy.defaults()
              + "): "
              + e.getMessage(),
          e);
    }
  }

  /** The hedging policy for this executor's changelog writes. */
  public HedgePolicy hedgePolicy() {
    return hedgePolicy;
  }

  public StoreOptions storeOptions() {
    return storeOptions;
  }

  /** The cap set, else {@link #DEFAULT_MEMORY_CAP_BYTES} (see {@link #memoryCapSet}). */
  public long memoryCapBytes() {
    return memoryCapBytes;
  }

  /**
   * Whether {@link #MEMORY_CAP_BYTES} was set; if not, the provider sizes the cap against the
   * executor's container (spark/README.md, "Sizing native memory").
   */
  public boolean memoryCapSet() {
    return memoryCapSet;
  }

  /**
   * The heap every store's heap mirrors of the JVM may hold together ({@link #HEAP_MIRROR_BYTES}),
   * or -1 when not set: a tenth of the heap, at most 512 MiB.
   */
  public long heapMirrorBytes() {
    return heapMirrorBytes;
  }

  /**
   * The least time between two trims of the C heap after RocksDB freed memory ({@link
   * #NATIVE_HEAP_TRIM_INTERVAL_MS}); 0: never.
   */
  public long nativeHeapTrimIntervalMs() {
    return nativeHeapTrimIntervalMs;
  }

  public Optional<String> localDir() {
    return localDir;
  }

  public long lockTimeoutMs() {
    return lockTimeoutMs;
  }

  /**
   * How long closing a provider waits for its store's snapshot upload ({@link
   * #SNAPSHOT_CLOSE_WAIT_MS}).
   */
  public long snapshotCloseWaitMs() {
    return snapshotCloseWaitMs;
  }
}
