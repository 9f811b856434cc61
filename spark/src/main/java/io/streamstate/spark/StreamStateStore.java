package io.streamstate.spark;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreErrors;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Set;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One version of one partition's state, open in a task: a thin layer over a {@link
 * StateTransaction} that turns rows into bytes ({@link ColumnFamilyCodec}).
 *
 * <p>The same class serves as the read-only store ({@link StreamStateProvider#getReadStore}, ended
 * by {@link #release()}) and the writable one; a read store becomes writable in place ({@link
 * StreamStateProvider#upgradeReadStoreToWriteStore}), as Spark's aggregation does between its
 * restore and save steps. Until it is committed, aborted or released, the store holds its
 * provider's one permit; a task completion listener releases it if the task forgets.
 *
 * <p>Thread confinement: the task thread that loaded the store uses it.
 *
 * <p>Over 600 lines because Spark's {@code StateStore} is that wide (get, multiGet, keyExists, four
 * scans with and without multiple values, put, merge, their list forms, remove, deleteRange, column
 * families, commit, metrics): each member is a few lines over the transaction and the codec, which
 * hold the logic.
 */
final class StreamStateStore implements StateStore {
  private static final Logger LOG = LoggerFactory.getLogger(StreamStateStore.class);

  private enum State {
    OPEN,
    COMMITTED,
    ABORTED,
    RELEASED
  }

  private final StreamStateProvider provider;
  private final StateTransaction tx;
  private final RowCounts rowCounts;
  private final long version;
  private volatile boolean readOnly;
  private volatile boolean forceSnapshotOnCommit;
  private volatile State state = State.OPEN;
  private long taskAttemptId = -1;

  /** The thread that loaded it, which uses it (thread confinement). */
  private final Thread owner = Thread.currentThread();

  /** Its provider was closed while it was open in another thread: every operation now fails. */
  private volatile boolean providerClosed;

  private long committedVersion = -1;
  private StateStoreMetrics committedMetrics;
  private boolean rowFormatValidated;

  StreamStateStore(
      StreamStateProvider provider,
      StateTransaction tx,
      long version,
      boolean readOnly,
      boolean forceSnapshotOnCommit) {
    this.provider = provider;
    this.tx = tx;
    this.rowCounts = new RowCounts(tx);
    this.version = version;
    this.readOnly = readOnly;
    this.forceSnapshotOnCommit = forceSnapshotOnCommit;
  }

  StreamStateProvider provider() {
    return provider;
  }

  /** Ends the store with the task if the operator did not (a failed or cancelled task). */
  void attachToTask() {
    TaskContext task = TaskContext.get();
    if (task == null) {
      return;
    }
    taskAttemptId = task.taskAttemptId();
    task.addTaskCompletionListener(
        (TaskCompletionListener)
            ctx -> {
              try {
                if (state == State.OPEN) {
                  if (readOnly) {
                    release();
                  } else {
                    abort();
                  }
                }
              } catch (RuntimeException e) {
                LOG.warn("Failed to end state store {} at task completion", this, e);
              }
            });
  }

  boolean isOwnedByCurrentThread() {
    return owner == Thread.currentThread();
  }

  /**
   * The provider was closed from another thread: the next operation fails, and the owner's end of
   * the store (abort, or its task's completion listener) closes the engine. Takes no lock: the
   * owner may hold this store's monitor in a long commit.
   */
  void stopForClose() {
    providerClosed = true;
  }

  /** The provider is being closed by the owning thread: ends this store as the task would. */
  void endForClose() {
    if (readOnly) {
      release();
    } else {
      abort();
    }
  }

  boolean isOpenReadOnlyOf(long attemptId) {
    return state == State.OPEN && readOnly && taskAttemptId == attemptId;
  }

  /** Makes an open read store writable; false if it is not open any more. */
  synchronized boolean upgradeToWritable(boolean forceSnapshot) {
    if (state != State.OPEN) {
      return false;
    }
    readOnly = false;
    forceSnapshotOnCommit = forceSnapshot;
    tx.expectCommit(true); // it may commit now: group commits wait for it again
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // ReadStateStore

  @Override
  public StateStoreId id() {
    return provider.stateStoreId();
  }

  @Override
  public long version() {
    return version;
  }

  @Override
  public UnsafeRow get(UnsafeRow key, String colFamilyName) {
    checkOpen("get");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    UnsafeRow value = codec.decodeValue(tx.get(colFamilyName, codec.encodeKey(key)));
    validateRowFormat(key, value);
    return value;
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public Iterator<UnsafeRow> multiGet(UnsafeRow[] keys, String colFamilyName) {
    checkOpen("multiGet");
    List<UnsafeRow> values = new ArrayList<>(keys.length);
    for (UnsafeRow key : keys) {
      values.add(get(key, colFamilyName));
    }
    return CollectionConverters.asScala(values.iterator());
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public boolean keyExists(UnsafeRow key, String colFamilyName) {
    checkOpen("keyExists");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    return tx.exists(colFamilyName, codec.encodeKey(key));
  }

  @Override
  public Iterator<UnsafeRow> valuesIterator(UnsafeRow key, String colFamilyName) {
    checkOpen("valuesIterator");
    requireKey(key);
    ColumnFamilyCodec codec = multiValued("valuesIterator", colFamilyName);
    return CollectionConverters.asScala(
        codec.decodeValues(tx.get(colFamilyName, codec.encodeKey(key))));
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey, String colFamilyName) {
    checkOpen("prefixScan");
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    requireCapability(codec.supportsPrefixScan(), "prefixScan", codec);
    return pairs(tx.prefixIterator(colFamilyName, codec.encodePrefix(prefixKey)), codec, false);
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public StateStoreIterator<UnsafeRowPair> prefixScanWithMultiValues(
      UnsafeRow prefixKey, String colFamilyName) {
    checkOpen("prefixScanWithMultiValues");
    ColumnFamilyCodec codec = multiValued("prefixScanWithMultiValues", colFamilyName);
    requireCapability(codec.supportsPrefixScan(), "prefixScanWithMultiValues", codec);
    return pairs(tx.prefixIterator(colFamilyName, codec.encodePrefix(prefixKey)), codec, true);
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public StateStoreIterator<UnsafeRowPair> rangeScan(
      Option<UnsafeRow> startKey, Option<UnsafeRow> endKey, String colFamilyName) {
    checkOpen("rangeScan");
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    requireCapability(codec.supportsRangeScan(), "rangeScan", codec);
    return pairs(range(codec, colFamilyName, startKey, endKey), codec, false);
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public StateStoreIterator<UnsafeRowPair> rangeScanWithMultiValues(
      Option<UnsafeRow> startKey, Option<UnsafeRow> endKey, String colFamilyName) {
    checkOpen("rangeScanWithMultiValues");
    ColumnFamilyCodec codec = multiValued("rangeScanWithMultiValues", colFamilyName);
    requireCapability(codec.supportsRangeScan(), "rangeScanWithMultiValues", codec);
    return pairs(range(codec, colFamilyName, startKey, endKey), codec, true);
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> iterator(String colFamilyName) {
    checkOpen("iterator");
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    return pairs(tx.iterator(colFamilyName), codec, false);
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(String colFamilyName) {
    checkOpen("iteratorWithMultiValues");
    ColumnFamilyCodec codec = multiValued("iteratorWithMultiValues", colFamilyName);
    return pairs(tx.iterator(colFamilyName), codec, true);
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public Set<String> allColumnFamilyNames() {
    var names = new TreeSet<String>(tx.columnFamilies());
    names.removeIf(RowCounts::isInternal);
    return CollectionConverters.asScala(names).toSet();
  }

  /** Ends a read store (or an uncommitted store) without changing anything. Idempotent. */
  // Spark 4.1+ API (no @Override: this source is also compiled against 4.0, where abort() ends a
  // read store; see abort())
  public synchronized void release() {
    if (state == State.OPEN) {
      if (!readOnly) {
        throw new IllegalStateException(
            "release() is for read-only stores; abort or commit " + this + " instead");
      }
      state = State.RELEASED;
      try {
        tx.abort();
      } finally {
        provider.storeFinished(this);
      }
    }
  }

  /**
   * Drops the changes; on a read store, ends it (Spark 4.0 has no {@code release()} and ends read
   * stores this way). Idempotent; a no-op after commit.
   */
  @Override
  public synchronized void abort() {
    if (state == State.OPEN) {
      state = State.ABORTED;
      try {
        tx.abort();
      } finally {
        provider.storeFinished(this);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // StateStore

  @Override
  public boolean removeColFamilyIfExists(String colFamilyName) {
    checkWritable("removeColFamilyIfExists");
    checkFamilyName("remove_col_family", colFamilyName, false);
    if (RowCounts.isInternal(colFamilyName)) {
      return false;
    }
    boolean removed = tx.dropColumnFamily(colFamilyName);
    if (removed) {
      rowCounts.dropped(colFamilyName);
      provider.forgetCodec(colFamilyName);
    }
    return removed;
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
    if (RowCounts.isInternal(colFamilyName)) {
      throw new IllegalArgumentException(
          "Column family name '" + colFamilyName + "' is reserved by streamstate");
    }
    if (!tx.columnFamilies().contains(colFamilyName)) {
      tx.createColumnFamily(colFamilyName);
    }
    rowCounts.declared(colFamilyName, isInternal);
    provider.registerCodec(
        new ColumnFamilyCodec(
            colFamilyName, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey));
  }

  @Override
  public void put(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkWritable("put");
    requireKey(key);
    requireValue(value);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    byte[] encoded =
        codec.multipleValues()
            ? codec.appendValues(null, new UnsafeRow[] {value})
            : codec.encodeValue(value);
    rowCounts.put(colFamilyName, codec.encodeKey(key), encoded);
  }

  // Spark 4.1+ API (no @Override: also compiled against 4.0)
  public void putList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkWritable("putList");
    requireKey(key);
    requireValues(values);
    ColumnFamilyCodec codec = multiValued("putList", colFamilyName);
    rowCounts.put(colFamilyName, codec.encodeKey(key), codec.appendValues(null, values));
  }

  @Override
  public void remove(UnsafeRow key, String colFamilyName) {
    checkWritable("remove");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    rowCounts.delete(colFamilyName, codec.encodeKey(key));
  }

  // Spark 4.2 API (no @Override: this source is also compiled against 4.1, which lacks it)
  public void deleteRange(UnsafeRow beginKey, UnsafeRow endKey, String colFamilyName) {
    checkWritable("deleteRange");
    requireKey(beginKey);
    requireKey(endKey);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    requireCapability(codec.supportsDeleteRange(), "deleteRange", codec);
    try (CloseableIterator<KeyValue> it =
        tx.rangeIterator(colFamilyName, codec.encodeKey(beginKey), codec.encodeKey(endKey))) {
      while (it.hasNext()) {
        rowCounts.deletingExisting(colFamilyName);
        tx.delete(colFamilyName, it.next().key());
      }
    }
  }

  /** Appends a value (read, append, write: the engine has no merge operator). */
  @Override
  public void merge(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    requireValue(value);
    mergeList(key, new UnsafeRow[] {value}, colFamilyName);
  }

  // Spark 4.1+ API (no @Override: also compiled against 4.0)
  public void mergeList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkWritable("merge");
    requireKey(key);
    requireValues(values);
    ColumnFamilyCodec codec = multiValued("merge", colFamilyName);
    byte[] encodedKey = codec.encodeKey(key);
    byte[] existing = tx.get(colFamilyName, encodedKey);
    if (existing == null) {
      rowCounts.puttingNew(colFamilyName);
    }
    tx.put(colFamilyName, encodedKey, codec.appendValues(existing, values));
  }

  /**
   * Publishes the changes as version {@code version() + 1} (durable when this returns), then
   * reports the commit to Spark's coordinator (commit validation of foreachBatch sinks). With
   * {@code forceSnapshotOnCommit}, also takes the local checkpoint of the new version and leaves
   * its upload to the background: the commit never waits on snapshot files.
   */
  @Override
  public synchronized long commit() {
    checkWritable("commit");
    long newVersion;
    RowCounts.Totals rows;
    try {
      rowCounts.flush();
      rows = rowCounts.totals();
      newVersion = tx.commit();
    } catch (RuntimeException e) {
      state = State.ABORTED;
      try {
        tx.abort(); // a no-op if the engine aborted it already
      } finally {
        provider.storeFinished(this);
      }
      throw new IllegalStateException(
          "Failed to commit version "
              + (version + 1)
              + " of state store "
              + describeStore()
              + ": "
              + e.getMessage(),
          e);
    }
    state = State.COMMITTED;
    committedVersion = newVersion;
    try {
      if (forceSnapshotOnCommit) {
        provider.snapshotAfterCommit(newVersion);
      }
      committedMetrics = metricsAfterCommit(newVersion, rows);
    } finally {
      provider.storeFinished(this);
    }
    SparkLineApi.reportCommit(provider.storeConf(), newVersion, id(), provider.hadoopConf());
    return newVersion;
  }

  @Override
  public StateStoreMetrics metrics() {
    StateStoreMetrics m = committedMetrics;
    if (m != null) {
      return m;
    }
    return SparkLineApi.metrics(
        state == State.OPEN ? rowCounts.total() : provider.estimateKeys(),
        provider.memoryShareBytes(),
        Map.of(),
        id(),
        -1);
  }

  @Override
  public StateStoreCheckpointInfo getStateStoreCheckpointInfo() {
    long batchVersion = committedVersion > 0 ? committedVersion : version + 1;
    return new StateStoreCheckpointInfo(
        id().partitionId(), batchVersion, Option.empty(), Option.empty());
  }

  @Override
  public boolean hasCommitted() {
    return state == State.COMMITTED;
  }

  @Override
  public String toString() {
    return "StreamStateStore["
        + describeStore()
        + ", version="
        + version
        + ", "
        + (readOnly ? "read-only" : "writable")
        + ", "
        + state
        + (taskAttemptId >= 0 ? ", task attempt " + taskAttemptId : "")
        + "]";
  }

  // ---------------------------------------------------------------------------------------------

  private StateStoreMetrics metricsAfterCommit(long newVersion, RowCounts.Totals rows) {
    Map<StateStoreCustomMetric, Object> custom =
        provider.commitMetrics(newVersion, forceSnapshotOnCommit, rows);
    return SparkLineApi.metrics(
        rows.keys(), provider.memoryShareBytes(), custom, id(), provider.lastSnapshotVersion());
  }

  private CloseableIterator<KeyValue> range(
      ColumnFamilyCodec codec,
      String colFamilyName,
      Option<UnsafeRow> startKey,
      Option<UnsafeRow> endKey) {
    byte[] from = startKey.isDefined() ? codec.encodeKey(startKey.get()) : null;
    byte[] to = endKey.isDefined() ? codec.encodeKey(endKey.get()) : null;
    return tx.rangeIterator(colFamilyName, from, to);
  }

  /** Rows of an engine iterator ({@link RowPairs}), single-valued ones checked once per store. */
  private StateStoreIterator<UnsafeRowPair> pairs(
      CloseableIterator<KeyValue> entries, ColumnFamilyCodec codec, boolean multipleValues) {
    return multipleValues
        ? RowPairs.multiValued(entries, codec)
        : RowPairs.singleValued(entries, codec, this::validateRowFormat);
  }

  /** Spark's row format check, once per store, as its built-in providers do. */
  private void validateRowFormat(UnsafeRow key, UnsafeRow value) {
    if (rowFormatValidated || value == null || provider.useColumnFamilies()) {
      return;
    }
    ColumnFamilyCodec codec = provider.codec(StateStore.DEFAULT_COL_FAMILY_NAME());
    SparkLineApi.validateStateRowFormat(
        key, codec.spec().keySchema(), value, codec.valueSchema(), id(), provider.storeConf());
    rowFormatValidated = true;
  }

  private ColumnFamilyCodec multiValued(String operation, String colFamilyName) {
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    if (!codec.multipleValues()) {
      throw new IllegalStateException(
          operation
              + " needs a column family with multiple values per key; '"
              + colFamilyName
              + "' of "
              + describeStore()
              + " has one value per key");
    }
    return codec;
  }

  private void requireCapability(boolean supported, String operation, ColumnFamilyCodec codec) {
    if (!supported) {
      throw new IllegalStateException(
          operation
              + " is not supported on column family '"
              + codec.name()
              + "' of "
              + describeStore()
              + " with key encoder spec "
              + codec.spec());
    }
  }

  private void checkFamilyName(String operation, String name, boolean isInternal) {
    if (!provider.useColumnFamilies()) {
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

  private void checkOpen(String operation) {
    if (providerClosed && state == State.OPEN) {
      throw new IllegalStateException(
          "Cannot " + operation + " on " + this + ": its provider was closed");
    }
    if (state != State.OPEN) {
      throw new IllegalStateException(
          "Cannot " + operation + " on " + this + ": it is " + state.name().toLowerCase());
    }
  }

  private void checkWritable(String operation) {
    checkOpen(operation);
    if (readOnly) {
      throw new IllegalStateException("Cannot " + operation + " on read-only " + this);
    }
  }

  private static void requireKey(UnsafeRow key) {
    if (key == null) {
      throw new IllegalArgumentException("Key cannot be null");
    }
  }

  private static void requireValue(UnsafeRow value) {
    if (value == null) {
      throw new IllegalArgumentException("Cannot put a null value");
    }
  }

  private static void requireValues(UnsafeRow[] values) {
    if (values == null) {
      throw new IllegalArgumentException("Cannot put a null list of values");
    }
    for (UnsafeRow v : values) {
      requireValue(v);
    }
  }

  private String describeStore() {
    return StreamStateProvider.describe(id());
  }
}
