package io.streamstate.bench.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.RuntimeConfig;

/**
 * The providers the benchmark compares, by label ({@code --providers}), and each label's Spark
 * confs: the state store provider class, the checkpoint file manager of Spark's own logs, and the
 * variants' keys (our provider's switches, and the file sink's commit protocol of the tail-free
 * variants). {@link #applyTo} sets them before each query.
 */
enum Provider {
  STREAMSTATE("streamstate", "io.streamstate.spark.StreamStateProvider", false, false),
  /** Ours with hedged writes off: what hedging buys, measured in the same run. */
  STREAMSTATE_NOHEDGE(
      "streamstate-nohedge", "io.streamstate.spark.StreamStateProvider", false, false),
  /** Ours with group commit off: what group commit buys, measured in the same run. */
  STREAMSTATE_NOGROUP(
      "streamstate-nogroup", "io.streamstate.spark.StreamStateProvider", false, false),
  /** Ours with our rename-free checkpoint file manager for Spark's logs (hedged on HDFS-like). */
  STREAMSTATE_RFLOGS(
      "streamstate-rflogs", "io.streamstate.spark.StreamStateProvider", false, false),
  /** Ours with deflate changelogs (zlib level 1). */
  STREAMSTATE_DEFLATE(
      "streamstate-deflate", "io.streamstate.spark.StreamStateProvider", false, false),
  /** Ours with lz4 changelogs. */
  STREAMSTATE_LZ4("streamstate-lz4", "io.streamstate.spark.StreamStateProvider", false, false),
  /** {@code streamstate-rflogs} with uncompressed changelogs: what compression buys. */
  STREAMSTATE_RFLOGS_RAW(
      "streamstate-rflogs-raw", "io.streamstate.spark.StreamStateProvider", false, false),
  /**
   * {@code streamstate-rflogs} with a segment file per group commit instead of appends to a segment
   * journal: what the journal buys.
   */
  STREAMSTATE_RFLOGS_FILES(
      "streamstate-rflogs-files", "io.streamstate.spark.StreamStateProvider", false, false),
  /**
   * {@code streamstate-rflogs} with Spark's offset and commit logs in log journals too (opt-in:
   * {@code logJournal.enabled}): no metadata request per batch anywhere.
   */
  STREAMSTATE_LOGJOURNAL(
      "streamstate-logjournal", "io.streamstate.spark.StreamStateProvider", false, false),
  /**
   * Ours with nothing of the batch left to a single slow write: {@code streamstate-logjournal} (our
   * checkpoint file manager, Spark's logs in log journals) and the file sink's part files committed
   * by {@code io.streamstate.spark.HedgedFileCommitProtocol}.
   */
  STREAMSTATE_TAILFREE(
      "streamstate-tailfree", "io.streamstate.spark.StreamStateProvider", false, false),
  /** {@code streamstate-tailfree} with {@code hedge.enabled=false}: what hedging costs. */
  STREAMSTATE_TAILFREE_NOHEDGE(
      "streamstate-tailfree-nohedge", "io.streamstate.spark.StreamStateProvider", false, false),
  HDFS(
      "hdfs",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
      false,
      false),
  ROCKSDB(
      "rocksdb",
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
      false,
      false),
  ROCKSDB_CHANGELOG(
      "rocksdb-changelog",
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
      true,
      false),
  /**
   * {@code rocksdb-changelog} with our rename-free checkpoint file manager: how Spark 4.2 runs
   * {@code transformWithState} with our storage (its changelogs and zips written once, hedged on
   * HDFS-like profiles). On request only.
   */
  ROCKSDB_CHANGELOG_RF(
      "rocksdb-changelog-rf",
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
      true,
      false),
  NO_DURABILITY("no-durability", "io.streamstate.spark.StreamStateProvider", false, true);

  /** Spark's tuned checkpoint file manager for its logs (no process per file), for everyone. */
  static final String SPARK_FILE_SYSTEM_MANAGER = sparkFileSystemManager();

  /** Our checkpoint file manager for Spark's logs, of the {@code streamstate-rflogs} family. */
  static final String RENAME_FREE_MANAGER =
      "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

  /** Our provider's switches that a variant turns off (the provider's default: true). */
  static final String HEDGE_ENABLED = "spark.sql.streaming.stateStore.streamstate.hedge.enabled";

  static final String GROUP_COMMIT_ENABLED =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.enabled";

  static final String GROUP_COMMIT_JOURNAL =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.journal";
  static final String LOG_JOURNAL = "spark.sql.streaming.stateStore.streamstate.logJournal.enabled";
  static final String CHANGELOG_CODEC =
      "spark.sql.streaming.stateStore.streamstate.changelog.codec";

  /** Spark's (internal) key for the file sink's commit protocol. */
  static final String COMMIT_PROTOCOL = "spark.sql.streaming.commitProtocolClass";

  /** Our hedged commit protocol for the file sink, named only: not every build has it. */
  static final String HEDGED_COMMIT_PROTOCOL = "io.streamstate.spark.HedgedFileCommitProtocol";

  /** The SQL confs the variants set; each cell sets its own and unsets the others. */
  static final List<String> VARIANT_KEYS =
      List.of(
          HEDGE_ENABLED,
          GROUP_COMMIT_ENABLED,
          CHANGELOG_CODEC,
          GROUP_COMMIT_JOURNAL,
          LOG_JOURNAL,
          COMMIT_PROTOCOL);

  final String label;
  final String className;
  final boolean changelog;
  final boolean discardsState;

  Provider(String label, String className, boolean changelog, boolean discardsState) {
    this.label = label;
    this.className = className;
    this.changelog = changelog;
    this.discardsState = discardsState;
  }

  static Provider byLabel(String label) {
    for (Provider p : values()) {
      if (p.label.equals(label)) {
        return p;
      }
    }
    throw new IllegalArgumentException("Unknown provider " + label);
  }

  /**
   * Sets this label's session confs for the next query: the provider class, the checkpoint file
   * manager of Spark's logs, the variant's keys, and RocksDB's changelog checkpointing.
   */
  void applyTo(RuntimeConfig conf) {
    conf.set("spark.sql.streaming.stateStore.providerClass", className);
    conf.set("spark.sql.streaming.checkpointFileManagerClass", checkpointFileManager());
    // The variants: the keys this one does not set are unset, so they take our provider's (or
    // Spark's) defaults, and a variant never leaks into the next cell.
    Map<String, String> variant = variantConfs();
    for (String key : VARIANT_KEYS) {
      if (variant.containsKey(key)) {
        conf.set(key, variant.get(key));
      } else {
        conf.unset(key);
      }
    }
    conf.set(
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
        Boolean.toString(changelog));
  }

  /**
   * The SQL confs of this label's variant (empty: every default, ours and Spark's); the keys are
   * among {@link #VARIANT_KEYS}.
   */
  Map<String, String> variantConfs() {
    return switch (this) {
      case STREAMSTATE_NOHEDGE -> Map.of(HEDGE_ENABLED, "false");
      case STREAMSTATE_NOGROUP -> Map.of(GROUP_COMMIT_ENABLED, "false");
      case STREAMSTATE_DEFLATE -> Map.of(CHANGELOG_CODEC, "deflate");
      case STREAMSTATE_LZ4 -> Map.of(CHANGELOG_CODEC, "lz4");
      case STREAMSTATE_RFLOGS_RAW -> Map.of(CHANGELOG_CODEC, "none");
      case STREAMSTATE_RFLOGS_FILES -> Map.of(GROUP_COMMIT_JOURNAL, "false");
      case STREAMSTATE_LOGJOURNAL -> Map.of(LOG_JOURNAL, "true");
      case STREAMSTATE_TAILFREE ->
          Map.of(LOG_JOURNAL, "true", COMMIT_PROTOCOL, HEDGED_COMMIT_PROTOCOL);
      case STREAMSTATE_TAILFREE_NOHEDGE ->
          Map.of(
              LOG_JOURNAL, "true", COMMIT_PROTOCOL, HEDGED_COMMIT_PROTOCOL, HEDGE_ENABLED, "false");
      default -> Map.of();
    };
  }

  /**
   * Classes this label names by configuration only, which a build may lack: the tail-free variants'
   * commit protocol.
   */
  List<String> requiredClasses() {
    String protocol = variantConfs().get(COMMIT_PROTOCOL);
    return protocol == null ? List.of() : List.of(protocol);
  }

  /** Ours: our provider keeping its state (not the no-durability baseline). */
  boolean ours() {
    return className.equals(STREAMSTATE.className) && !discardsState;
  }

  /** A variant of ours that runs only when {@code --providers} names it. */
  boolean onRequestOnly() {
    return (ours() && this != STREAMSTATE) || this == ROCKSDB_CHANGELOG_RF;
  }

  /** The checkpoint file manager of Spark's own logs for this label. */
  String checkpointFileManager() {
    return this == STREAMSTATE_RFLOGS
            || this == STREAMSTATE_RFLOGS_RAW
            || this == STREAMSTATE_RFLOGS_FILES
            || this == STREAMSTATE_LOGJOURNAL
            || this == STREAMSTATE_TAILFREE
            || this == STREAMSTATE_TAILFREE_NOHEDGE
            || this == ROCKSDB_CHANGELOG_RF
        ? RENAME_FREE_MANAGER
        : SPARK_FILE_SYSTEM_MANAGER;
  }

  /**
   * Spark 4.1 moved it into {@code ...streaming.checkpointing} (docs/spark-lines.md, section 8).
   */
  private static String sparkFileSystemManager() {
    String since41 =
        "org.apache.spark.sql.execution.streaming.checkpointing."
            + "FileSystemBasedCheckpointFileManager";
    try {
      Class.forName(since41, false, Provider.class.getClassLoader());
      return since41;
    } catch (ClassNotFoundException e) {
      return "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager";
    }
  }
}
