package io.streamstate.spark;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeSet;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.util.TaskCompletionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Set;

/**
 * One version of one partition's state, open in a task: a thin layer over a {@link
 * StateTransaction} that turns rows into bytes ({@link ColumnFamilyCodec}). What every Spark line
 * shares; each line's {@code StreamStateStore} (in {@code src/line-4.x} and {@code src/line-3.5})
 * extends it with the members of its Spark's {@code StateStore} that name types only it has
 * (iterators, column family specs, checkpoint info). Members whose signature is the same in the
 * lines that have them are here, without {@code @Override} (this class implements no Spark trait;
 * the line's subclass does).
 *
 * <p>The same object serves as the read-only store (ended by {@link #release()} or {@link
 * #abort()}) and the writable one; a read store becomes writable in place ({@link
 * #upgradeToWritable}), as Spark's aggregation does between its restore and save steps. Until it is
 * committed, aborted or released, the store holds its provider's one permit; a task completion
 * listener releases it if the task forgets.
 *
 * <p>Thread confinement: the task thread that loaded the store uses it.
 */
abstract class StreamStateStoreBase {
  private static final Logger LOG = LoggerFactory.getLogger(StreamStateStoreBase.class);

  private enum State {
    OPEN,
    COMMITTED,
    ABORTED,
    RELEASED
  }

  private final StreamStateProviderBase provider;
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

  /** The commit Spark asked for by checkpoint id (format v2), or empty. */
  private final OptionalLong requestedCommitId;

  private long committedVersion = -1;
  private StateStoreMetrics committedMetrics;
  private boolean rowFormatValidated;

  StreamStateStoreBase(
      StreamStateProviderBase provider,
      StateTransaction tx,
      long version,
      OptionalLong requestedCommitId,
      boolean readOnly,
      boolean forceSnapshotOnCommit) {
    this.provider = provider;
    this.tx = tx;
    this.rowCounts = new RowCounts(tx);
    this.version = version;
    this.requestedCommitId = requestedCommitId;
    this.readOnly = readOnly;
    this.forceSnapshotOnCommit = forceSnapshotOnCommit;
  }

  StreamStateProviderBase provider() {
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

  public StateStoreId id() {
    return provider.stateStoreId();
  }

  public long version() {
    return version;
  }

  public UnsafeRow get(UnsafeRow key, String colFamilyName) {
    checkOpen("get");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    UnsafeRow value = codec.decodeValue(tx.get(colFamilyName, codec.encodeKey(key)));
    validateRowFormat(key, value);
    return value;
  }

  // Spark 4.2 API
  public Iterator<UnsafeRow> multiGet(UnsafeRow[] keys, String colFamilyName) {
    checkOpen("multiGet");
    List<UnsafeRow> values = new ArrayList<>(keys.length);
    for (UnsafeRow key : keys) {
      values.add(get(key, colFamilyName));
    }
    return ScalaInterop.iterator(values.iterator());
  }

  // Spark 4.2 API
  public boolean keyExists(UnsafeRow key, String colFamilyName) {
    checkOpen("keyExists");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    return tx.exists(colFamilyName, codec.encodeKey(key));
  }

  public Iterator<UnsafeRow> valuesIterator(UnsafeRow key, String colFamilyName) {
    checkOpen("valuesIterator");
    requireKey(key);
    ColumnFamilyCodec codec = multiValued("valuesIterator", colFamilyName);
    return ScalaInterop.iterator(codec.decodeValues(tx.get(colFamilyName, codec.encodeKey(key))));
  }

  /** The rows whose key starts with {@code prefixKey}, for the line's {@code prefixScan}. */
  final RowPairs prefixRows(
      String operation, UnsafeRow prefixKey, String colFamilyName, boolean multipleValues) {
    checkOpen(operation);
    ColumnFamilyCodec codec =
        multipleValues ? multiValued(operation, colFamilyName) : provider.codec(colFamilyName);
    requireCapability(codec.supportsPrefixScan(), operation, codec);
    return pairs(
        tx.prefixIterator(colFamilyName, codec.encodePrefix(prefixKey)), codec, multipleValues);
  }

  /** The rows from {@code startKey} (inclusive) to {@code endKey} (exclusive), for 4.2's scans. */
  final RowPairs rangeRows(
      String operation,
      Option<UnsafeRow> startKey,
      Option<UnsafeRow> endKey,
      String colFamilyName,
      boolean multipleValues) {
    checkOpen(operation);
    ColumnFamilyCodec codec =
        multipleValues ? multiValued(operation, colFamilyName) : provider.codec(colFamilyName);
    requireCapability(codec.supportsRangeScan(), operation, codec);
    return pairs(range(codec, colFamilyName, startKey, endKey), codec, multipleValues);
  }

  /** Every row of the family, for the line's {@code iterator}. */
  final RowPairs allRows(String operation, String colFamilyName, boolean multipleValues) {
    checkOpen(operation);
    ColumnFamilyCodec codec =
        multipleValues ? multiValued(operation, colFamilyName) : provider.codec(colFamilyName);
    return pairs(tx.iterator(colFamilyName), codec, multipleValues);
  }

  // Spark 4.2 API
  public Set<String> allColumnFamilyNames() {
    var names = new TreeSet<String>(tx.columnFamilies());
    names.removeIf(RowCounts::isInternal);
    return ScalaInterop.set(names);
  }

  /** Ends a read store (or an uncommitted store) without changing anything. Idempotent. */
  // Spark 4.1+ API (4.0 and 3.5 end read stores with abort())
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

  /** Drops a column family; the line checks the name first. */
  final boolean dropFamily(String colFamilyName) {
    checkWritable("removeColFamilyIfExists");
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

  /** Creates a column family if absent, with its codec; the line checks the name first. */
  final void createFamily(ColumnFamilyCodec codec, boolean isInternal) {
    checkOpen("createColFamilyIfAbsent");
    String colFamilyName = codec.name();
    if (RowCounts.isInternal(colFamilyName)) {
      throw new IllegalArgumentException(
          "Column family name '" + colFamilyName + "' is reserved by streamstate");
    }
    if (!tx.columnFamilies().contains(colFamilyName)) {
      tx.createColumnFamily(colFamilyName);
    }
    rowCounts.declared(colFamilyName, isInternal);
    provider.registerCodec(codec);
  }

  /** Whether the operator declared column families (4.x); the line refuses them otherwise. */
  final boolean usesColumnFamilies() {
    return provider.useColumnFamilies();
  }

  public void put(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkWritable("put");
    requireKey(key);
    requireValue(value);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    byte[] encoded =
        codec.multipleValues()
            ? codec.appendValues(null, new UnsafeRow[] {value})
            : codec.encodeValue(value);
    rowCounts.put(colFamilyName, codec.encodeOwnedKey(key), encoded);
  }

  // Spark 4.1+ API
  public void putList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkWritable("putList");
    requireKey(key);
    requireValues(values);
    ColumnFamilyCodec codec = multiValued("putList", colFamilyName);
    rowCounts.put(colFamilyName, codec.encodeOwnedKey(key), codec.appendValues(null, values));
  }

  public void remove(UnsafeRow key, String colFamilyName) {
    checkWritable("remove");
    requireKey(key);
    ColumnFamilyCodec codec = provider.codec(colFamilyName);
    rowCounts.delete(colFamilyName, codec.encodeKey(key));
  }

  // Spark 4.2 API
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
  public void merge(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    requireValue(value);
    mergeList(key, new UnsafeRow[] {value}, colFamilyName);
  }

  // Spark 4.1+ API
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

  /**
   * Whether this store was loaded at the commit {@code commitId} names: any commit of its version
   * when empty, else exactly that one.
   */
  final boolean isLoadedAt(OptionalLong commitId) {
    return commitId.isEmpty() || tx.baseCommitId() == commitId.getAsLong();
  }

  /**
   * Spark's checkpoint id of the commit this store made (checkpoint format v2); null before commit.
   */
  final String committedCheckpointId() {
    return state == State.COMMITTED && committedVersion > 0
        ? CheckpointIds.format(tx.committedId())
        : null;
  }

  /**
   * Spark's checkpoint id of the version this store was loaded at, as Spark passed it (the driver
   * checks it against its commit log); null when it passed none.
   */
  final String baseCheckpointId() {
    return requestedCommitId.isPresent()
        ? CheckpointIds.format(requestedCommitId.getAsLong())
        : null;
  }

  /** The version this store's commit made, or will make (Spark 4.x's checkpoint info). */
  final long batchVersion() {
    return committedVersion > 0 ? committedVersion : version + 1;
  }

  public boolean hasCommitted() {
    return state == State.COMMITTED;
  }

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
  private RowPairs pairs(
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
    ColumnFamilyCodec codec = provider.codec(StreamStateProviderBase.DEFAULT_FAMILY);
    SparkLineApi.validateStateRowFormat(
        key, codec.keySchema(), value, codec.valueSchema(), id(), provider.storeConf());
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
              + codec.keyLayout());
    }
  }

  final void checkOpen(String operation) {
    if (providerClosed && state == State.OPEN) {
      throw new IllegalStateException(
          "Cannot " + operation + " on " + this + ": its provider was closed");
    }
    if (state != State.OPEN) {
      throw new IllegalStateException(
          "Cannot " + operation + " on " + this + ": it is " + state.name().toLowerCase());
    }
  }

  final void checkWritable(String operation) {
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

  final String describeStore() {
    return StreamStateProviderBase.describe(id());
  }
}
