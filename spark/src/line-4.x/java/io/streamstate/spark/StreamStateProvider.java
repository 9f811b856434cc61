package io.streamstate.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.SupportsFineGrainedReplay;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;
import scala.collection.immutable.Seq;

/**
 * Spark 4.x's {@code StateStoreProvider} (4.0, 4.1 and 4.2) over the streamstate engine: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.streamstate.spark.StreamStateProvider}.
 *
 * <p>One provider instance is one partition of one operator's state: one engine store whose durable
 * files live in the store's checkpoint directory ({@code
 * <checkpoint>/state/<operatorId>/<partitionId>[/<storeName>]/}, under {@code changelog/}, {@code
 * snapshot/} and {@code sst/}) and whose working copy is a local RocksDB instance in a directory of
 * its own (see {@link StreamStateConf#LOCAL_DIR}).
 *
 * <p>Life cycle, as Spark drives it:
 *
 * <ol>
 *   <li>The driver creates instances with the no-arg constructor, never initialised, only to read
 *       {@link #supportedCustomMetrics()}: the constructor does nothing but check the Spark line.
 *   <li>On an executor {@link #init} opens the store (reading nothing yet).
 *   <li>Each batch a task calls {@link #getStore} (or {@link #getReadStore}, then {@link
 *       #upgradeReadStoreToWriteStore}), changes the store and commits it. One store of a provider
 *       is open at a time: a second task waits for the first store to be committed, aborted or
 *       released ({@link StreamStateConf#LOCK_TIMEOUT_MS}).
 *   <li>Spark's maintenance thread calls {@link #doMaintenance()} (snapshots and retention), and
 *       finally {@link #close()}.
 * </ol>
 *
 * <p>Checkpoint format v2 ({@value StreamStateConf#SPARK_CHECKPOINT_FORMAT_VERSION} = 2): the id
 * Spark passes to {@link #getStore} names the exact commit of the version to load, and a committed
 * store reports its own commit's id ({@link CheckpointIds}). {@code loadEmpty} (Spark 4.2's offline
 * state repartitioning) opens an empty store whose commit publishes the new version whole, as a
 * snapshot. Spark 4.2 refuses streaming {@code transformWithState} for every provider but its own
 * RocksDB one, by class name, before a provider is ever created (4.0 and 4.1 do not).
 *
 * <p>The lifecycle itself is {@link StreamStateProviderBase}'s, shared with the 3.5 line; this
 * class holds the members only 4.x's trait has. Those only newer 4.x lines call carry no
 * {@code @Override} (docs/spark-lines.md, "One source, compiled per line").
 */
public class StreamStateProvider extends SparkLineProvider
    implements StateStoreProvider, SupportsFineGrainedReplay {
  public StreamStateProvider() {}

  @Override
  public void init(
      StateStoreId stateStoreId,
      StructType keySchema,
      StructType valueSchema,
      KeyStateEncoderSpec keyStateEncoderSpec,
      boolean useColumnFamilies,
      StateStoreConf storeConfs,
      Configuration hadoopConf,
      boolean useMultipleValuesPerKey,
      Option<StateSchemaProvider> stateSchemaProvider) {
    refuseUnsupportedEncodings(stateStoreId, storeConfs);
    initStore(
        stateStoreId,
        new EncoderSpecCodec(
            DEFAULT_FAMILY, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey),
        useColumnFamilies,
        storeConfs,
        hadoopConf);
  }

  /** What Spark 4.0 and 4.1 call (their {@code getStore} has no snapshot or empty-load flags). */
  public StateStore getStore(long version, Option<String> stateStoreCkptId) {
    return getStore(version, stateStoreCkptId, false, false);
  }

  /** What Spark 4.2 calls. */
  public StateStore getStore(
      long version,
      Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit,
      boolean loadEmpty) {
    checkInitialized();
    if (loadEmpty) {
      if (stateStoreCkptId.isDefined()) {
        throw new IllegalArgumentException(
            "loadEmpty takes no checkpoint id (given "
                + stateStoreCkptId.get()
                + " for version "
                + version
                + " of state store "
                + describe(stateStoreId())
                + ")");
      }
      return (StateStore) openEmpty(version);
    }
    return (StateStore)
        open(version, stateStoreCkptId.getOrElse(() -> null), false, forceSnapshotOnCommit);
  }

  @Override
  public ReadStateStore getReadStore(long version, Option<String> uniqueId) {
    checkInitialized();
    return (ReadStateStore) open(version, uniqueId.getOrElse(() -> null), true, false);
  }

  /** What Spark 4.1 calls (without the snapshot flag). */
  public StateStore upgradeReadStoreToWriteStore(
      ReadStateStore readStore, long version, Option<String> uniqueId) {
    return upgradeReadStoreToWriteStore(readStore, version, uniqueId, false);
  }

  /** What Spark 4.2 calls. */
  public StateStore upgradeReadStoreToWriteStore(
      ReadStateStore readStore,
      long version,
      Option<String> uniqueId,
      boolean forceSnapshotOnCommit) {
    if (readStore instanceof StreamStateStoreBase ours) {
      return (StateStore)
          upgradeForWrite(ours, version, uniqueId.getOrElse(() -> null), forceSnapshotOnCommit);
    }
    return getStore(version, uniqueId, forceSnapshotOnCommit, false);
  }

  /**
   * What Spark 4.1+ calls: the state of {@code endVersion} rebuilt from the snapshot of exactly
   * {@code snapshotVersion} ({@link FineGrainedReplay}).
   */
  public StateStore replayStateFromSnapshot(
      long snapshotVersion,
      long endVersion,
      boolean readOnly,
      Option<String> snapshotVersionStateStoreCkptId,
      Option<String> endVersionStateStoreCkptId) {
    return FineGrainedReplay.replay(
        this,
        snapshotVersion,
        endVersion,
        readOnly,
        snapshotVersionStateStoreCkptId,
        endVersionStateStoreCkptId);
  }

  /** What Spark 4.0 calls (no read-only flag, no checkpoint ids). */
  public StateStore replayStateFromSnapshot(long snapshotVersion, long endVersion) {
    return FineGrainedReplay.replay(
        this, snapshotVersion, endVersion, false, Option.empty(), Option.empty());
  }

  /**
   * What Spark 4.1+ calls: the changes of versions {@code startVersion} to {@code endVersion}
   * ({@link FineGrainedReplay}).
   */
  public NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>>
      getStateStoreChangeDataReader(
          long startVersion,
          long endVersion,
          Option<String> colFamilyNameOpt,
          Option<String> endVersionStateStoreCkptId) {
    return FineGrainedReplay.changes(
        this, startVersion, endVersion, colFamilyNameOpt, endVersionStateStoreCkptId);
  }

  /** What Spark 4.0 calls (no checkpoint id). */
  public NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>>
      getStateStoreChangeDataReader(
          long startVersion, long endVersion, Option<String> colFamilyNameOpt) {
    return FineGrainedReplay.changes(
        this, startVersion, endVersion, colFamilyNameOpt, Option.empty());
  }

  @Override
  public Seq<StateStoreCustomMetric> supportedCustomMetrics() {
    return StreamStateMetrics.customMetrics();
  }

  /** Spark's key for the state row encoding ({@code unsaferow}, the default, or {@code avro}). */
  static final String SPARK_ENCODING_FORMAT = "spark.sql.streaming.stateStore.encodingFormat";

  /** Spark 4.2's key for a checksum in every state row (default false). */
  static final String SPARK_ROW_CHECKSUM = "spark.sql.streaming.stateStore.rowChecksum.enabled";

  /**
   * Settings of Spark's that change how its providers encode rows, which ours does not do: refused
   * by name rather than ignored. Our files carry a CRC32C per frame instead of a checksum per row.
   */
  private static void refuseUnsupportedEncodings(StateStoreId id, StateStoreConf conf) {
    String encoding = conf.stateStoreEncodingFormat();
    if (!"unsaferow".equalsIgnoreCase(encoding)) {
      throw new UnsupportedOperationException(
          "streamstate stores state rows as UnsafeRow bytes and does not support "
              + SPARK_ENCODING_FORMAT
              + "="
              + encoding
              + " (state store "
              + (id == null ? "?" : describe(id))
              + "). Set "
              + SPARK_ENCODING_FORMAT
              + "=unsaferow (the default) for queries using"
              + " io.streamstate.spark.StreamStateProvider.");
    }
    Option<String> checksum = conf.sqlConfs().get(SPARK_ROW_CHECKSUM);
    if (checksum.isDefined() && Boolean.parseBoolean(checksum.get().trim())) {
      throw new UnsupportedOperationException(
          "streamstate does not add Spark's row checksum ("
              + SPARK_ROW_CHECKSUM
              + "=true, state store "
              + (id == null ? "?" : describe(id))
              + "): every file it writes carries a CRC32C per frame, verified on every read. Set "
              + SPARK_ROW_CHECKSUM
              + "=false (the default) for queries using"
              + " io.streamstate.spark.StreamStateProvider.");
    }
  }
}
