package io.streamstate.spark;

import io.streamstate.core.engine.StateTransaction;
import java.util.OptionalLong;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import scala.collection.Iterator;

/**
 * Spark 3.5's {@code StateStore}: no column families (every row is in the default one), and plain
 * Scala iterators, which close the engine's iterator when exhausted (and at the end of the store's
 * transaction, if an operator stops early). The rest is {@link StreamStateStoreBase}'s, shared with
 * the 4.x lines.
 */
final class StreamStateStore extends StreamStateStoreBase implements StateStore {
  private static final String DEFAULT = StreamStateProviderBase.DEFAULT_FAMILY;

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
  public UnsafeRow get(UnsafeRow key) {
    return get(key, DEFAULT);
  }

  @Override
  public Iterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey) {
    return closingWhenExhausted(prefixRows("prefixScan", prefixKey, DEFAULT, false), () -> {});
  }

  /**
   * Every row. After {@link #commit()}, the rows of the version it made: Spark 3.5's complete-mode
   * aggregation iterates its store after committing it; that reads through a read store of the new
   * version, ended when the iterator is exhausted or with the task.
   */
  @Override
  public Iterator<UnsafeRowPair> iterator() {
    if (hasCommitted()) {
      StreamStateStoreBase committed = provider().open(batchVersion(), true, false);
      return closingWhenExhausted(
          committed.allRows("iterator", DEFAULT, false), committed::release);
    }
    return closingWhenExhausted(allRows("iterator", DEFAULT, false), () -> {});
  }

  @Override
  public void put(UnsafeRow key, UnsafeRow value) {
    put(key, value, DEFAULT);
  }

  @Override
  public void remove(UnsafeRow key) {
    remove(key, DEFAULT);
  }

  /** Closes {@code rows}, then runs {@code atEnd}, once the last row has been read. */
  private static Iterator<UnsafeRowPair> closingWhenExhausted(RowPairs rows, Runnable atEnd) {
    return ScalaInterop.iterator(
        new java.util.Iterator<UnsafeRowPair>() {
          private boolean ended;

          @Override
          public boolean hasNext() {
            boolean more = !ended && rows.hasNext();
            if (!more && !ended) {
              ended = true;
              rows.close();
              atEnd.run();
            }
            return more;
          }

          @Override
          public UnsafeRowPair next() {
            return rows.next();
          }
        });
  }
}
