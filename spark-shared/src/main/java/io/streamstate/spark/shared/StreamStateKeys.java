package io.streamstate.spark.shared;

import static io.streamstate.spark.shared.StreamStateSettings.*;

import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.local.NativeHeapTrimmer;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.hadoop.SlowDataNodes;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Every configuration key, described once: {@link StreamStateSettings} reads through these
 * descriptions, {@link ConfigWarnings} names unknown keys against them, and {@link ConfigReference}
 * writes docs/configuration.md from them. The key names are the constants of {@link
 * StreamStateSettings} (and {@link HadoopStorages}, {@link SlowDataNodes}).
 */
public final class StreamStateKeys {
  static final ConfigKey SNAPSHOT_INTERVAL_KEY =
      ConfigKey.of(
              SNAPSHOT_INTERVAL,
              ConfigKey.Type.COUNT,
              null,
              "maintenance snapshots a store once it is this many versions past its last snapshot")
          .computedDefault("Spark's `spark.sql.streaming.stateStore.minDeltasForSnapshot` (10)");

  static final ConfigKey SNAPSHOT_INLINE_SST_MAX_BYTES_KEY =
      ConfigKey.of(
              SNAPSHOT_INLINE_SST_MAX_BYTES,
              ConfigKey.Type.SIZE,
              Long.toString(StoreOptions.DEFAULT_INLINE_SST_MAX_BYTES),
              "a snapshot carries a new SST up to this size inside its manifest, newest first,"
                  + " while the manifest holds at most twice this, instead of as a file of its"
                  + " own: a small store snapshots as one file. Larger and older SSTs are shared"
                  + " files that later snapshots reuse. 0 makes every SST a file")
          .shownAs("2m (2097152)");

  static final ConfigKey SNAPSHOT_REPLAY_DEBT_PERCENT_KEY =
      ConfigKey.of(
          SNAPSHOT_REPLAY_DEBT_PERCENT,
          ConfigKey.Type.COUNT,
          Integer.toString(StoreOptions.DEFAULT_REPLAY_DEBT_PERCENT),
          "a commit after which a restart would replay more changes (those committed since the"
              + " last snapshot) than this percent of the store's keys, and more than"
              + " `snapshot.replayDebtMinChanges`, starts a snapshot in the background: a"
              + " restart's replay stays bounded by the state's size, not by `snapshotInterval`"
              + " versions of changes. 0 turns it off");

  static final ConfigKey SNAPSHOT_REPLAY_DEBT_MIN_CHANGES_KEY =
      ConfigKey.of(
          SNAPSHOT_REPLAY_DEBT_MIN_CHANGES,
          ConfigKey.Type.COUNT,
          Long.toString(StoreOptions.DEFAULT_REPLAY_DEBT_MIN_CHANGES),
          "the changes to replay below which no replay-debt snapshot starts, whatever"
              + " `snapshot.replayDebtPercent` says: a snapshot costs about a write of the whole"
              + " state, so a small store whose every batch changes most of its keys would"
              + " otherwise snapshot every few batches and spend its CPU on it (issue 21 bench,"
              + " section 35); this many changes replay in about a second");

  static final ConfigKey SNAPSHOT_CLOSE_WAIT_MS_KEY =
      ConfigKey.of(
              SNAPSHOT_CLOSE_WAIT_MS,
              ConfigKey.Type.DURATION,
              Long.toString(DEFAULT_SNAPSHOT_CLOSE_WAIT_MS),
              "how long closing a provider (Spark unloads it, or `StateStore.stop()`) waits for"
                  + " its store's snapshot still uploading in the background to publish, so that"
                  + " the next load starts from it instead of replaying the changes it covers."
                  + " 0: close at once, and the upload is dropped (its files are retention's)")
          .shownAs("30s (30000)");

  static final ConfigKey CHANGELOG_CODEC_KEY =
      ConfigKey.choice(
          CHANGELOG_CODEC,
          List.of("lz4", "deflate", "none"),
          "how commits store their changes in changelogs and segments: `lz4` (Spark's own"
              + " lz4-java, the codec of Spark's own providers' files: compressed about 4 times and"
              + " read back about 10 times faster than deflate, spent by each task on its own"
              + " commit), `deflate` (zlib level 1: Spark's rows shrink to about a ninth, a fifth to"
              + " a half smaller than lz4's, at a few ms of CPU per MB: for storage billed by the"
              + " byte or a slow link to it) or `none`. Readers need no setting:"
              + " each payload names its codec, and a checkpoint may mix them. Spark's"
              + " `spark.sql.streaming.stateStore.compression.codec` does not change it (see"
              + " below)");

  static final ConfigKey MEMORY_CAP_BYTES_KEY =
      ConfigKey.of(
              MEMORY_CAP_BYTES,
              ConfigKey.Type.SIZE,
              null,
              "one RocksDB memory budget (block cache + memtables) for every store of the JVM."
                  + " Native memory, paid from `spark.executor.memoryOverhead` on YARN and"
                  + " Kubernetes: see spark/README.md, \"Sizing native memory\". A cap set larger"
                  + " than the overhead holds is kept, with a warning naming both keys. Size it"
                  + " for the executor's state: at about 1.2 GB of state per executor (10M keys"
                  + " of the seed job), reads miss a 256 MiB cache and the batch that evicts 4M"
                  + " rows is the slowest (docs/bench/2026-12-03-issue21.md)")
          .computedDefault(
              "256m; on YARN and Kubernetes at most what fits `spark.executor.memoryOverhead`"
                  + " beside the JVM's own native memory (320 MiB), at least 64m")
          .scope(ConfigKey.Scope.PROCESS);

  static final ConfigKey HEAP_MIRROR_BYTES_KEY =
      ConfigKey.of(
              HEAP_MIRROR_BYTES,
              ConfigKey.Type.SIZE,
              null,
              "heap for copies of small stores' committed state: a store's column family of up"
                  + " to 64 MiB (keys, values and 64 bytes an entry) is read and scanned from the"
                  + " heap, kept exact by every commit, RocksDB staying the local engine"
                  + " (snapshots, restores): it takes a mirrored store's changes when a snapshot"
                  + " reads it, as the difference since the last one, whose replaced entries this"
                  + " budget also holds meanwhile; larger ones, or past this budget, are read from"
                  + " RocksDB alone. A store restored from a snapshot (a restart, a moved task)"
                  + " is copied into the heap as it opens when RocksDB's estimate of its keys"
                  + " fits. Eviction scans of small states (window aggregations,"
                  + " deduplication) step through the heap instead of through RocksDB's memtable"
                  + " versions (docs/bench/2026-12-03-issue21.md section 19). 0: none")
          .computedDefault("a tenth of the executor's heap, at most 512m")
          .scope(ConfigKey.Scope.PROCESS);

  static final ConfigKey NATIVE_HEAP_TRIM_INTERVAL_MS_KEY =
      ConfigKey.of(
              NATIVE_HEAP_TRIM_INTERVAL_MS,
              ConfigKey.Type.DURATION,
              Long.toString(NativeHeapTrimmer.DEFAULT_MIN_INTERVAL_MS),
              "the least time between two trims of the C heap: after RocksDB flushes, compacts"
                  + " or closes an instance, the memory it freed goes back to the operating system"
                  + " (glibc's `malloc_trim`, through the JVM's `System.trim_native_heap`, on a"
                  + " thread of its own), so that the container is not billed, or killed, for"
                  + " memory malloc keeps free (300-600 MB after an eviction at 10M keys:"
                  + " docs/bench/2026-12-03-issue21.md section 29). 0: never. Off by itself"
                  + " where the JVM has no such command (before 17.0.9, another allocator) or"
                  + " trims on its own (`-XX:TrimNativeHeapInterval`)")
          .shownAs("1s (1000)")
          .scope(ConfigKey.Scope.PROCESS);

  static final ConfigKey TORN_FILE_GRACE_MS_KEY =
      ConfigKey.of(
              TORN_FILE_GRACE_MS,
              ConfigKey.Type.DURATION,
              Long.toString(DEFAULT_TORN_FILE_GRACE_MS),
              "a file that does not verify and is older than this is a crashed writer's"
                  + " leftover and may be removed; minimum age of an unreferenced SST before"
                  + " retention deletes it. Ages are judged by the storage's clock (a probe"
                  + " file's modification time under `state/_clock/`), not the executor's: keep"
                  + " executors' clocks within half this of the storage's (docs/protocol.md,"
                  + " \"Clocks\")")
          .shownAs("2min (120000)");

  static final ConfigKey LOCAL_DIR_KEY =
      ConfigKey.of(
              LOCAL_DIR,
              ConfigKey.Type.TEXT,
              null,
              "root of the local RocksDB directories, one fresh subdirectory per provider"
                  + " instance, deleted when it closes. When it fills, tasks fail with `Local disk"
                  + " full: ... its local directory <dir> is out of space ...` naming this key,"
                  + " and are retried; the stores are rebuilt from durable storage"
                  + " (docs/reliability.md, \"Local disk full\")")
          .computedDefault(
              "the executor's local dir (`spark.local.dir`, YARN/K8s dirs), else"
                  + " `java.io.tmpdir`");

  static final ConfigKey LOCK_TIMEOUT_MS_KEY =
      ConfigKey.of(
              LOCK_TIMEOUT_MS,
              ConfigKey.Type.DURATION,
              Long.toString(DEFAULT_LOCK_TIMEOUT_MS),
              "how long a task waits for another task's open store of the same partition to be"
                  + " committed, aborted or released before failing")
          .shownAs("2min (120000)");

  static final ConfigKey DURABILITY_KEY =
      ConfigKey.choice(
          DURABILITY,
          List.of("sync", "async"),
          "`sync`: a commit returns once its changelog is durable (exactly-once). `async`: a"
              + " commit returns once applied locally; the upload follows, at most"
              + " `asyncMaxLagVersions` behind. Losing an executor then loses up to that many"
              + " versions of each of its stores: they resume from their newest durable version,"
              + " logged at WARN and counted in `streamstateVersionsLost`. Those batches' input"
              + " is missing from the state (aggregates undercount, dedup may re-emit, joins may"
              + " miss partners). Only for users who accept that");

  static final ConfigKey ASYNC_MAX_LAG_VERSIONS_KEY =
      ConfigKey.of(
          ASYNC_MAX_LAG_VERSIONS,
          ConfigKey.Type.COUNT,
          "1",
          "in `async`: most versions a store may be ahead of durable storage; a commit waits"
              + " while it is (at least 1)");

  static final ConfigKey GROUP_COMMIT_ENABLED_KEY =
      ConfigKey.of(
          GROUP_COMMIT_ENABLED,
          ConfigKey.Type.BOOLEAN,
          "true",
          "in `sync`: the commits one executor's stores make together for a batch are"
              + " published as one segment (`<checkpoint>/state/_segments/`, appended to a"
              + " segment journal where the store can, see `groupCommit.journal`) instead of one"
              + " changelog each; a task's commits of several stores (a join's four) complete"
              + " together, and the task's last commit returns only once all are durable"
              + " (docs/protocol.md, \"Group commit\"). `async` never groups");

  static final ConfigKey GROUP_COMMIT_MAX_WAIT_MS_KEY =
      ConfigKey.of(
              GROUP_COMMIT_MAX_WAIT_MS,
              ConfigKey.Type.DURATION,
              "250",
              "how long a commit waits at most for the other tasks of the executor that began a"
                  + " store of the same batch together with it (see `waveMs`); a commit nobody"
                  + " else can join is written at once. A waiting task holds its slot")
          .shownAs("250ms");

  static final ConfigKey GROUP_COMMIT_WAVE_MS_KEY =
      ConfigKey.of(
              GROUP_COMMIT_WAVE_MS,
              ConfigKey.Type.DURATION,
              null,
              "which tasks count as \"together\": those that began their store within this long"
                  + " of the segment's earliest member. Tasks that started later (a stage with"
                  + " more partitions than task slots) are never waited for. With the journal, a"
                  + " commit is written at once unless an append is in flight, and the commits"
                  + " that arrive meanwhile go together in the next append"
                  + " (docs/bench/2026-12-03-issue21.md)")
          .computedDefault(
              "0 with the segment journal (HDFS, local disk), 250ms without (S3, or"
                  + " `groupCommit.journal=false`)");

  static final ConfigKey GROUP_COMMIT_JOURNAL_KEY =
      ConfigKey.of(
          GROUP_COMMIT_JOURNAL,
          ConfigKey.Type.BOOLEAN,
          "true",
          "where the checkpoint's store can append and sync an open file (HDFS, local disk; not"
              + " S3): each group commit is one append and `hsync` to a segment journal the"
              + " executor keeps open (`_segments/<close-by>-<id>.journal`) instead of a new"
              + " segment file, so a commit asks the HDFS NameNode nothing. Durability is"
              + " unchanged: a commit returns once its append is synced. A late append is hedged"
              + " by a segment file, and later commits move to the next journal (docs/protocol.md,"
              + " \"Segment journal\"). `false`: a segment file per group commit");

  static final ConfigKey GROUP_COMMIT_JOURNAL_ROLL_BYTES_KEY =
      ConfigKey.of(
              GROUP_COMMIT_JOURNAL_ROLL_BYTES,
              ConfigKey.Type.SIZE,
              Long.toString(SegmentJournalSettings.defaults().rollBytes()),
              "a journal takes no append past this size (a larger segment gets a journal of its"
                  + " own)")
          .shownAs("128m (134217728)");

  static final ConfigKey GROUP_COMMIT_JOURNAL_ROLL_MS_KEY =
      ConfigKey.of(
              GROUP_COMMIT_JOURNAL_ROLL_MS,
              ConfigKey.Type.DURATION,
              Long.toString(SegmentJournalSettings.defaults().rollMillis()),
              "a journal takes appends for this long; the next one is created in the background"
                  + " beforehand. A journal is deleted once no store needs any record in it and"
                  + " its close-by time (creation + twice this) plus `tornFileGraceMs` has passed")
          .shownAs("10min (600000)");

  static final ConfigKey LOG_JOURNAL_KEY =
      ConfigKey.of(
          LOG_JOURNAL,
          ConfigKey.Type.BOOLEAN,
          "false",
          "(read by `RenameFreeCheckpointFileManager`) keep Spark's offset and commit logs in log"
              + " journals too: each entry is one append and `hsync` to `offsets/.journal-<epoch>`"
              + " or `commits/.journal-<epoch>`, so no batch asks the NameNode anything"
              + " (spark/README.md, \"Log journals\"). Opt-in: Spark's own checkpoint file manager"
              + " cannot read journaled entries");

  static final ConfigKey LOG_JOURNAL_ROLL_RECORDS_KEY =
      ConfigKey.of(
              LOG_JOURNAL_ROLL_RECORDS,
              ConfigKey.Type.COUNT,
              Integer.toString(DEFAULT_LOG_JOURNAL_ROLL_RECORDS),
              "(read by `RenameFreeCheckpointFileManager`) a log journal rolls to the next epoch"
                  + " after this many records (entries and deletes), or after twice its live"
                  + " entries if that is more (at least 1)")
          .scope(ConfigKey.Scope.LOG);

  static final ConfigKey HEDGE_ENABLED_KEY =
      ConfigKey.of(
          HEDGE_ENABLED,
          ConfigKey.Type.BOOLEAN,
          "true",
          "hedge slow changelog writes: a write still running at its deadline is written again"
              + " under the commit's alternate name; the first copy to complete commits, the other"
              + " is deleted (docs/protocol.md, \"Hedged writes\"). Snapshot uploads are hedged"
              + " with the same settings by a hedger of their own. The `hedge.*` keys also set"
              + " `RenameFreeCheckpointFileManager`'s hedging of Spark's offset and commit log"
              + " writes on HDFS and `HedgedFileCommitProtocol`'s hedging of file-sink outputs."
              + " Stores with equal `hedge.*` settings share one hedger per JVM (its deadline"
              + " learns from, and its budget bounds, all of them); stores with other settings get"
              + " a hedger of their own");

  static final ConfigKey HEDGE_FLOOR_MS_KEY =
      ConfigKey.of(
              HEDGE_FLOOR_MS, ConfigKey.Type.DURATION, "20", "the hedge deadline is never shorter")
          .shownAs("20ms");

  static final ConfigKey HEDGE_INITIAL_DEADLINE_MS_KEY =
      ConfigKey.of(
              HEDGE_INITIAL_DEADLINE_MS,
              ConfigKey.Type.DURATION,
              "200",
              "the deadline until enough latencies are known")
          .shownAs("200ms");

  static final ConfigKey HEDGE_MULTIPLIER_KEY =
      ConfigKey.of(
          HEDGE_MULTIPLIER,
          ConfigKey.Type.DECIMAL,
          "1.5",
          "deadline = multiplier × the `hedge.percentile` of the hedger's recent write"
              + " latencies");

  static final ConfigKey HEDGE_PERCENTILE_KEY =
      ConfigKey.of(HEDGE_PERCENTILE, ConfigKey.Type.DECIMAL, "0.95", "see `hedge.multiplier`");

  static final ConfigKey HEDGE_BUDGET_FRACTION_KEY =
      ConfigKey.of(
          HEDGE_BUDGET_FRACTION,
          ConfigKey.Type.DECIMAL,
          "0.05",
          "at most about this fraction of writes are hedged (token bucket per hedger)");

  static final ConfigKey HEDGE_STALLED_AFTER_MS_KEY =
      ConfigKey.of(
              HEDGE_STALLED_AFTER_MS,
              ConfigKey.Type.DURATION,
              "1000",
              "a write still running this long whose hedge the budget refused is hedged from a"
                  + " small reserve kept for stuck writes: 1 % of writes, 8 at once"
                  + " (docs/protocol.md, \"Reserve\")")
          .shownAs("1s (1000)");

  static final ConfigKey ALLOW_SINGLE_WRITER_STORAGE_KEY =
      ConfigKey.of(
          HadoopStorages.SPARK_ALLOW_SINGLE_WRITER,
          ConfigKey.Type.BOOLEAN,
          "false",
          "(read by the `hadoop` module) accept a store without create-if-absent (EMRFS `s3://`,"
              + " `gs://`, `abfs://`, `viewfs://`, ...), single-writer only");

  /** The Spark SQL keys, under {@link StreamStateSettings#PREFIX}, in the reference's order. */
  private static final List<ConfigKey> SQL_KEYS =
      List.of(
          SNAPSHOT_INTERVAL_KEY,
          SNAPSHOT_INLINE_SST_MAX_BYTES_KEY,
          SNAPSHOT_REPLAY_DEBT_PERCENT_KEY,
          SNAPSHOT_REPLAY_DEBT_MIN_CHANGES_KEY,
          SNAPSHOT_CLOSE_WAIT_MS_KEY,
          CHANGELOG_CODEC_KEY,
          MEMORY_CAP_BYTES_KEY,
          HEAP_MIRROR_BYTES_KEY,
          NATIVE_HEAP_TRIM_INTERVAL_MS_KEY,
          TORN_FILE_GRACE_MS_KEY,
          LOCAL_DIR_KEY,
          LOCK_TIMEOUT_MS_KEY,
          DURABILITY_KEY,
          ASYNC_MAX_LAG_VERSIONS_KEY,
          GROUP_COMMIT_ENABLED_KEY,
          GROUP_COMMIT_MAX_WAIT_MS_KEY,
          GROUP_COMMIT_WAVE_MS_KEY,
          GROUP_COMMIT_JOURNAL_KEY,
          GROUP_COMMIT_JOURNAL_ROLL_BYTES_KEY,
          GROUP_COMMIT_JOURNAL_ROLL_MS_KEY,
          LOG_JOURNAL_KEY,
          LOG_JOURNAL_ROLL_RECORDS_KEY,
          HEDGE_ENABLED_KEY,
          HEDGE_FLOOR_MS_KEY,
          HEDGE_INITIAL_DEADLINE_MS_KEY,
          HEDGE_MULTIPLIER_KEY,
          HEDGE_PERCENTILE_KEY,
          HEDGE_BUDGET_FRACTION_KEY,
          HEDGE_STALLED_AFTER_MS_KEY,
          ALLOW_SINGLE_WRITER_STORAGE_KEY);

  /** The Hadoop keys, for tools and for {@code spark.hadoop.*}. */
  private static final List<ConfigKey> HADOOP_KEYS =
      List.of(
          ConfigKey.of(
              HadoopStorages.ALLOW_SINGLE_WRITER,
              ConfigKey.Type.BOOLEAN,
              "false",
              "as `allowSingleWriterStorage`, for use outside Spark (the `streamstate` command,"
                  + " tests)"),
          ConfigKey.of(
                  SlowDataNodes.SUSPECT_MILLIS_KEY,
                  ConfigKey.Type.DURATION,
                  Long.toString(SlowDataNodes.DEFAULT_SUSPECT_MILLIS),
                  "how long an HDFS DataNode stays suspect after a late write through it: new"
                      + " files are placed away from it. 0 turns the tracking off. Read when a"
                      + " process first uses the cluster (one value per cluster per JVM; a later"
                      + " other value is not warned about yet)")
              .shownAs("1min (60000)")
              .scope(ConfigKey.Scope.PROCESS));

  private static final Map<String, ConfigKey> BY_NAME =
      SQL_KEYS.stream().collect(Collectors.toUnmodifiableMap(ConfigKey::name, Function.identity()));

  private StreamStateKeys() {}

  /** Every Spark SQL key of ours, in the reference's order. */
  public static List<ConfigKey> sqlKeys() {
    return SQL_KEYS;
  }

  /** Our Hadoop keys (not under {@link StreamStateSettings#PREFIX}). */
  public static List<ConfigKey> hadoopKeys() {
    return HADOOP_KEYS;
  }

  /** The key named {@code name} under our prefix, if there is one. */
  public static Optional<ConfigKey> find(String name) {
    return Optional.ofNullable(BY_NAME.get(name));
  }

  /** Whether {@code name} is under our prefix and names no key of ours. */
  public static boolean isUnknown(String name) {
    return name.startsWith(PREFIX) && !BY_NAME.containsKey(name);
  }

  /**
   * The known key nearest to {@code name} by edit distance (ignoring case, which a typo of
   * camelCase often gets wrong), or empty when even the nearest shares too little with it to be a
   * useful suggestion.
   */
  public static Optional<ConfigKey> closest(String name) {
    String typed = suffix(name);
    ConfigKey best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (ConfigKey key : SQL_KEYS) {
      int d = editDistance(typed, suffix(key.name()));
      if (d < bestDistance) {
        best = key;
        bestDistance = d;
      }
    }
    // Past half the typed suffix's length, the "nearest" key is a guess, not a correction.
    return bestDistance <= Math.max(2, typed.length() / 2) ? Optional.of(best) : Optional.empty();
  }

  /** The warning for an unknown key under our prefix: what it is, and the key meant. */
  public static String unknownKeyMessage(String name) {
    return "Unknown configuration key "
        + name
        + " (ignored); "
        + closest(name).map(k -> "did you mean " + k.name() + "?").orElse("no key of ours is close")
        + " Every key: docs/configuration.md";
  }

  private static String suffix(String name) {
    String s = name.startsWith(PREFIX) ? name.substring(PREFIX.length()) : name;
    return s.toLowerCase(Locale.ROOT);
  }

  /** Levenshtein distance: insertions, deletions and substitutions of one character. */
  static int editDistance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }
}
