package io.streamstate.spark.shared;

import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.hedge.HedgePolicy;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;

/**
 * Every configuration key of the Spark adapters, with its default and its parsing: the one place
 * they are documented. Spark-free, the same in every Spark line: an adapter reads Spark's {@code
 * StateStoreConf} into a plain map and two ints and calls {@link #parse(Map, int, int)} (its {@code
 * io.streamstate.spark.StreamStateConf} extends this class, so the adapter's code names the keys
 * and accessors through it).
 *
 * <p>Keys live under {@value #PREFIX}. Spark hands a provider only the SQL confs starting with
 * {@code spark.sql.streaming.stateStore.} ({@code StateStoreConf.sqlConfs()}), which is why ours
 * sit there; set them on the session ({@code spark.conf.set}) or with {@code --conf}.
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@value #SNAPSHOT_INTERVAL}</td><td>Spark's {@code
 *       spark.sql.streaming.stateStore.minDeltasForSnapshot} (10)</td><td>maintenance snapshots a
 *       store once it is this many versions past its last snapshot</td></tr>
 *   <tr><td>{@value #SNAPSHOT_INLINE_SST_MAX_BYTES}</td><td>2097152 (2 MiB)</td><td>a snapshot
 *       carries a new SST up to this size inside its manifest, newest first, while the manifest
 *       holds at most twice this, instead of as a file of its own: a small store snapshots as one
 *       file. Larger and older SSTs are shared files that later snapshots reuse. 0 makes every SST
 *       a file</td></tr>
 *   <tr><td>{@value #CHANGELOG_CODEC}</td><td>deflate</td><td>how commits store their changes
 *       in changelogs and segments: {@code deflate} (zlib level 1, about a ninth of the bytes of
 *       Spark's rows, at a few ms of CPU per MB) or {@code none}. Readers need no setting</td></tr>
 *   <tr><td>{@value #MEMORY_CAP_BYTES}</td><td>268435456 (256 MiB); on YARN and Kubernetes at
 *       most what fits {@code spark.executor.memoryOverhead} beside the JVM's own native memory
 *       (at least 64 MiB)</td><td>one RocksDB memory budget (block cache plus memtables) shared by
 *       every store of the executor JVM; the first store opened in a JVM fixes it</td></tr>
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
 *   <tr><td>{@value #DURABILITY}</td><td>sync</td><td>{@code sync}: a commit returns once its
 *       changelog is durable (Spark's exactly-once). {@code async}: a commit returns once applied
 *       locally and its upload follows; losing an executor loses up to {@value
 *       #ASYNC_MAX_LAG_VERSIONS} versions of each of its stores, which then resume from their
 *       newest durable version (logged at WARN, counted in {@code streamstateVersionsLost}). Only
 *       for users who accept losing those batches' state changes</td></tr>
 *   <tr><td>{@value #ASYNC_MAX_LAG_VERSIONS}</td><td>1</td><td>in {@code async}: the most versions
 *       a store may be ahead of durable storage; a commit waits while it is</td></tr>
 *   <tr><td>{@value #GROUP_COMMIT_ENABLED}</td><td>true</td><td>in {@code sync}: the commits of
 *       one batch that an executor's stores make together are published as one segment file
 *       instead of one changelog each (each commit still returns only once durable); see {@code
 *       docs/protocol.md}, "Group commit"</td></tr>
 *   <tr><td>{@value #GROUP_COMMIT_MAX_WAIT_MS}</td><td>250</td><td>how long a commit waits at most
 *       for the other tasks of the executor that began a store of the same batch together with it;
 *       a commit that no other task can join is written at once</td></tr>
 *   <tr><td>{@value #GROUP_COMMIT_WAVE_MS}</td><td>0 with the segment journal, 250
 *       without (S3)</td><td>"together": tasks that began their store within this long of each
 *       other (a wave of tasks); later tasks are not waited for. With the journal, commits that
 *       arrive while an append is being written go together in the next one</td></tr>
 *   <tr><td>{@value #HEDGE_ENABLED}</td><td>true</td><td>hedge slow changelog writes: a write
 *       still running at its deadline is written again under the commit's alternate name and the
 *       first copy to complete commits (the other is deleted); see {@code docs/protocol.md},
 *       "Hedged writes"</td></tr>
 *   <tr><td>{@value #HEDGE_FLOOR_MS}</td><td>20</td><td>the deadline is never shorter than
 *       this</td></tr>
 *   <tr><td>{@value #HEDGE_INITIAL_DEADLINE_MS}</td><td>200</td><td>the deadline until enough
 *       write latencies are known</td></tr>
 *   <tr><td>{@value #HEDGE_MULTIPLIER}</td><td>1.5</td><td>the deadline is this times the
 *       {@value #HEDGE_PERCENTILE} percentile of the executor's recent write latencies</td></tr>
 *   <tr><td>{@value #HEDGE_PERCENTILE}</td><td>0.95</td><td>see above</td></tr>
 *   <tr><td>{@value #HEDGE_BUDGET_FRACTION}</td><td>0.05</td><td>at most about this fraction of
 *       writes are hedged (token bucket per executor)</td></tr>
 *   <tr><td>{@value #HEDGE_STALLED_AFTER_MS}</td><td>1000</td><td>a write still running this long
 *       whose hedge the budget refused is hedged from a small reserve kept for stuck writes (1 % of
 *       writes, 8 at once)</td></tr>
 * </table>
 *
 * <p>The hedge settings are per executor JVM: the first store opened in a JVM fixes them, like the
 * memory cap.
 *
 * <p>Retention comes from Spark's {@code spark.sql.streaming.minBatchesToRetain} (default 100):
 * loading any of the newest that many versions stays possible.
 */
public class StreamStateSettings {
  /** Prefix of every key. */
  public static final String PREFIX = "spark.sql.streaming.stateStore.streamstate.";

  public static final String SNAPSHOT_INTERVAL = PREFIX + "snapshotInterval";
  public static final String SNAPSHOT_INLINE_SST_MAX_BYTES = PREFIX + "snapshot.inlineSstMaxBytes";
  public static final String CHANGELOG_CODEC = PREFIX + "changelog.codec";
  public static final String MEMORY_CAP_BYTES = PREFIX + "memoryCapBytes";
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

  /**
   * {@code RenameFreeCheckpointFileManager}: keep Spark's offset and commit logs in journals
   * (docs/protocol.md, "Spark log journal"); default false.
   */
  public static final String LOG_JOURNAL = PREFIX + "logJournal.enabled";

  /**
   * {@code RenameFreeCheckpointFileManager}: a log journal rolls to the next epoch after this many
   * records (entries and deletes), or twice its live entries if more; default {@value
   * #DEFAULT_LOG_JOURNAL_ROLL_RECORDS}. The first manager of a process to open a log's journal
   * fixes it for that log.
   */
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

  /** Spark's key that selects checkpoint format v2 (checkpoint ids in the commit log). */
  public static final String SPARK_CHECKPOINT_FORMAT_VERSION =
      "spark.sql.streaming.stateStore.checkpointFormatVersion";

  private final StoreOptions storeOptions;
  private final long memoryCapBytes;
  private final boolean memoryCapSet;
  private final Optional<String> localDir;
  private final long lockTimeoutMs;
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
        settings.localDir,
        settings.lockTimeoutMs,
        settings.hedgePolicy,
        settings.groupCommitMaxWaitMs,
        settings.groupCommitWaveMs,
        settings.journal);
  }

  private StreamStateSettings(
      StoreOptions storeOptions,
      long memoryCapBytes,
      boolean memoryCapSet,
      Optional<String> localDir,
      long lockTimeoutMs,
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
    this.localDir = localDir;
    this.lockTimeoutMs = lockTimeoutMs;
    this.hedgePolicy = hedgePolicy;
  }

  /**
   * Reads our keys from the SQL confs Spark passes to a provider.
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
    int retain = minVersionsToRetain;
    int interval = (int) readLong(confs, SNAPSHOT_INTERVAL, minDeltasForSnapshot);
    long grace = readLong(confs, TORN_FILE_GRACE_MS, DEFAULT_TORN_FILE_GRACE_MS);
    long inlineSst =
        readLong(confs, SNAPSHOT_INLINE_SST_MAX_BYTES, StoreOptions.DEFAULT_INLINE_SST_MAX_BYTES);
    String durability = confs.getOrDefault(DURABILITY, "sync").trim().toLowerCase(Locale.ROOT);
    int asyncLag;
    if (durability.equals("sync")) {
      asyncLag = 0;
    } else if (durability.equals("async")) {
      asyncLag = (int) readLong(confs, ASYNC_MAX_LAG_VERSIONS, 1);
      if (asyncLag < 1) {
        throw new IllegalArgumentException(
            "Invalid value for " + ASYNC_MAX_LAG_VERSIONS + ": " + asyncLag + " (expected >= 1)");
      }
    } else {
      throw new IllegalArgumentException(
          "Invalid value for " + DURABILITY + ": '" + durability + "' (expected sync or async)");
    }
    Changelog.Codec codec;
    try {
      codec = Changelog.Codec.fromName(confs.getOrDefault(CHANGELOG_CODEC, "deflate"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Invalid value for " + CHANGELOG_CODEC + ": " + e.getMessage(), e);
    }
    StoreOptions options;
    try {
      options = new StoreOptions(retain, interval, grace, asyncLag, inlineSst, codec);
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
    long cap = readLong(confs, MEMORY_CAP_BYTES, DEFAULT_MEMORY_CAP_BYTES);
    long lockTimeout = readLong(confs, LOCK_TIMEOUT_MS, DEFAULT_LOCK_TIMEOUT_MS);
    String dir = confs.get(LOCAL_DIR);
    return new StreamStateSettings(
        options,
        cap,
        confs.containsKey(MEMORY_CAP_BYTES),
        Optional.ofNullable(dir).filter(s -> !s.isBlank()),
        lockTimeout,
        hedgePolicy(confs),
        groupCommitMaxWaitMs(confs),
        confs.containsKey(GROUP_COMMIT_WAVE_MS)
            ? nonNegative(confs, GROUP_COMMIT_WAVE_MS, 0)
            : GroupCommitter.DEFAULT_WAVE,
        journal(confs, grace));
  }

  /** The segment journal settings, or null when {@link #GROUP_COMMIT_JOURNAL} is false. */
  private static SegmentJournalSettings journal(Map<String, String> confs, long graceMillis) {
    String enabled =
        confs.getOrDefault(GROUP_COMMIT_JOURNAL, "true").trim().toLowerCase(Locale.ROOT);
    if (!enabled.equals("true") && !enabled.equals("false")) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + GROUP_COMMIT_JOURNAL
              + ": '"
              + enabled
              + "' (expected true or false)");
    }
    if (enabled.equals("false")) {
      return null;
    }
    SegmentJournalSettings defaults = SegmentJournalSettings.defaults();
    long rollBytes = readLong(confs, GROUP_COMMIT_JOURNAL_ROLL_BYTES, defaults.rollBytes());
    long rollMs = readLong(confs, GROUP_COMMIT_JOURNAL_ROLL_MS, defaults.rollMillis());
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
    String enabled =
        confs.getOrDefault(GROUP_COMMIT_ENABLED, "true").trim().toLowerCase(Locale.ROOT);
    if (!enabled.equals("true") && !enabled.equals("false")) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + GROUP_COMMIT_ENABLED
              + ": '"
              + enabled
              + "' (expected true or false)");
    }
    long wait = nonNegative(confs, GROUP_COMMIT_MAX_WAIT_MS, 250);
    return enabled.equals("true") ? wait : -1;
  }

  private static long nonNegative(Map<String, String> confs, String key, long defaultValue) {
    long value = readLong(confs, key, defaultValue);
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
    Map<String, String> keys = new HashMap<>();
    String prefix = PREFIX + "hedge.";
    for (Map.Entry<String, String> e : hadoopConf) {
      if (e.getKey().startsWith(prefix)) {
        keys.put(e.getKey(), e.getValue());
      }
    }
    return hedgePolicy(keys);
  }

  /** {@link #LOG_JOURNAL_ROLL_RECORDS} in a Hadoop configuration (at least 1). */
  public static int logJournalRollRecords(Configuration hadoopConf) {
    int value = hadoopConf.getInt(LOG_JOURNAL_ROLL_RECORDS, DEFAULT_LOG_JOURNAL_ROLL_RECORDS);
    if (value < 1) {
      throw new IllegalArgumentException(
          "Invalid value for " + LOG_JOURNAL_ROLL_RECORDS + ": " + value + " (expected >= 1)");
    }
    return value;
  }

  /** The hedge policy of our {@code hedge.*} keys in {@code confs} (absent keys: defaults). */
  static HedgePolicy hedgePolicy(Map<String, String> confs) {
    String enabled = confs.getOrDefault(HEDGE_ENABLED, "true").trim().toLowerCase(Locale.ROOT);
    if (!enabled.equals("true") && !enabled.equals("false")) {
      throw new IllegalArgumentException(
          "Invalid value for " + HEDGE_ENABLED + ": '" + enabled + "' (expected true or false)");
    }
    HedgePolicy defaults = HedgePolicy.defaults();
    HedgePolicy.Builder b = HedgePolicy.builder();
    if (enabled.equals("false")) {
      return b.disable().build();
    }
    try {
      return b.floor(Duration.ofMillis(readLong(confs, HEDGE_FLOOR_MS, 20)))
          .initialDeadline(Duration.ofMillis(readLong(confs, HEDGE_INITIAL_DEADLINE_MS, 200)))
          .multiplier(readDouble(confs, HEDGE_MULTIPLIER, 1.5))
          .percentile(readDouble(confs, HEDGE_PERCENTILE, 0.95))
          .budgetFraction(readDouble(confs, HEDGE_BUDGET_FRACTION, 0.05))
          .stalledAfter(Duration.ofMillis(readLong(confs, HEDGE_STALLED_AFTER_MS, 1000)))
          .build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Invalid streamstate hedge configuration (keys "
              + PREFIX
              + "hedge.*; defaults "
              + defaults
              + "): "
              + e.getMessage(),
          e);
    }
  }

  /** The hedging policy for this executor's changelog writes. */
  public HedgePolicy hedgePolicy() {
    return hedgePolicy;
  }

  private static double readDouble(Map<String, String> confs, String key, double defaultValue) {
    String value = confs.get(key);
    if (value == null || value.isBlank()) {
      return defaultValue;
    }
    try {
      return Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "Invalid value for " + key + ": '" + value + "' (expected a number)", e);
    }
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
