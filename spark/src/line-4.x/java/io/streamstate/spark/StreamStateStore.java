package io.streamstate.spark;

import io.streamstate.core.engine.StateTransaction;
import java.util.OptionalLong;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreErrors;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.runtime.BoxedUnit;

/**
 * Spark 4.x's {@code StateStore} (4.0, 4.1 and 4.2): the members whose types only 4.x has
 * (iterators, column family specs and errors, checkpoint info); the rest is {@link
 * StreamStateStoreBase}'s. Members only newer 4.x lines declare carry no {@code @Override}.
 */
final class StreamStateStore extends StreamStateStoreBase implements StateStore {
  StreamStateStore(
      StreamStateProviderBase provider,
      StateTransaction tx,
      long version,
      OptionalLong requestedCommitId,
      boolean readOnly,
      boolean forceSnapshotOnCommit) {
    super(provider, tx, version, requestedCommitId, readOnly, forceSnapshotOnCommit);
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey, String colFamilyName) {
    return spark(prefixRows("prefixScan", prefixKey, colFamilyName, false));
  }

  // Spark 4.2 API
  public StateStoreIterator<UnsafeRowPair> prefixScanWithMultiValues(
      UnsafeRow prefixKey, String colFamilyName) {
    return spark(prefixRows("prefixScanWithMultiValues", prefixKey, colFamilyName, true));
  }

  // Spark 4.2 API
  public StateStoreIterator<UnsafeRowPair> rangeScan(
      Option<UnsafeRow> startKey, Option<UnsafeRow> endKey, String colFamilyName) {
    return spark(rangeRows("rangeScan", startKey, endKey, colFamilyName, false));
  }

  // Spark 4.2 API
  public StateStoreIterator<UnsafeRowPair> rangeScanWithMultiValues(
      Option<UnsafeRow> startKey, Option<UnsafeRow> endKey, String colFamilyName) {
    return spark(rangeRows("rangeScanWithMultiValues", startKey, endKey, colFamilyName, true));
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> iterator(String colFamilyName) {
    return spark(allRows("iterator", colFamilyName, false));
  }

  // Spark 4.2 API
  public StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(String colFamilyName) {
    return spark(allRows("iteratorWithMultiValues", colFamilyName, true));
  }

  @Override
  public boolean removeColFamilyIfExists(String colFamilyName) {
    checkWritable("removeColFamilyIfExists");
    checkFamilyName("remove_col_family", colFamilyName, false);
    return dropFamily(colFamilyName);
  }

  @Override
  public void createColFamilyIfAbsent(
      String colFamilyName,
      StructType keySchema,
      StructType valueSchema,
      KeyStateEncoderSpec keyStateEncoderSpec,
      boolean useMultipleValuesPerKey,
      boolean isInternal) {
    checkOpen("createColFamilyIfAbsent");
    checkFamilyName("create_col_family", colFamilyName, isInternal);
    createFamily(
        new EncoderSpecCodec(
            colFamilyName, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey),
        isInternal);
  }

  /**
   * The commit this store made and the one it was loaded at, by checkpoint id, when checkpoint
   * format v2 is on (as Spark's RocksDB provider reports them; the driver records the first in the
   * commit log and checks the second against it); otherwise no ids.
   */
  @Override
  public StateStoreCheckpointInfo getStateStoreCheckpointInfo() {
    if (!provider().storeConf().enableStateStoreCheckpointIds()) {
      return new StateStoreCheckpointInfo(
          id().partitionId(), batchVersion(), Option.empty(), Option.empty());
    }
    String committed = committedCheckpointId();
    if (committed == null) {
      throw StateStoreErrors.stateStoreOperationOutOfOrder(
          "Cannot get checkpointInfo without committing the store");
    }
    return new StateStoreCheckpointInfo(
        id().partitionId(),
        batchVersion(),
        Option.apply(committed),
        Option.apply(baseCheckpointId()));
  }

  /** Spark's own checks and error classes for column family names. */
  private void checkFamilyName(String operation, String name, boolean isInternal) {
    if (!usesColumnFamilies()) {
      throw StateStoreErrors.unsupportedOperationException(
          operation, "multiple column families are disabled for this operator");
    }
    if (name.isEmpty()
        || !name.trim().equals(name)
        || (name.equals(StateStore.DEFAULT_COL_FAMILY_NAME()) && !isInternal)) {
      throw StateStoreErrors.cannotUseColumnFamilyWithInvalidName(operation, name);
    }
    if (!isInternal && name.charAt(0) == '$') {
      throw StateStoreErrors.cannotCreateColumnFamilyWithReservedChars(name);
    }
  }

  /** Rows as Spark's {@code StateStoreIterator}: closing it closes the engine's iterator. */
  private static StateStoreIterator<UnsafeRowPair> spark(RowPairs rows) {
    return new StateStoreIterator<>(
        ScalaInterop.iterator(rows),
        () -> {
          rows.close();
          return BoxedUnit.UNIT;
        });
  }
}
