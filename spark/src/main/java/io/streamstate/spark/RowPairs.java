package io.streamstate.spark;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.BiConsumer;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;

/**
 * The rows of an engine iterator: a fresh pair and fresh rows per element (Spark's operators may
 * keep them); closing it closes the engine's iterator (so does the end of the store's transaction).
 * Each line turns it into what its Spark returns ({@code StateStoreIterator} on 4.x, a plain Scala
 * iterator on 3.5).
 */
final class RowPairs implements Iterator<UnsafeRowPair>, AutoCloseable {
  private final CloseableIterator<KeyValue> entries;
  private final Iterator<UnsafeRowPair> rows;

  private RowPairs(CloseableIterator<KeyValue> entries, Iterator<UnsafeRowPair> rows) {
    this.entries = entries;
    this.rows = rows;
  }

  /** One pair per key; {@code check} sees each decoded key and value (Spark's format check). */
  static RowPairs singleValued(
      CloseableIterator<KeyValue> entries,
      ColumnFamilyCodec codec,
      BiConsumer<UnsafeRow, UnsafeRow> check) {
    return new RowPairs(entries, new SingleValuePairs(entries, codec, check));
  }

  /** One pair per value of a multi-valued key, the key repeated. */
  static RowPairs multiValued(CloseableIterator<KeyValue> entries, ColumnFamilyCodec codec) {
    return new RowPairs(entries, new MultiValuePairs(entries, codec));
  }

  @Override
  public boolean hasNext() {
    return rows.hasNext();
  }

  @Override
  public UnsafeRowPair next() {
    return rows.next();
  }

  @Override
  public void close() {
    entries.close();
  }

  private static final class SingleValuePairs implements Iterator<UnsafeRowPair> {
    private final CloseableIterator<KeyValue> entries;
    private final ColumnFamilyCodec codec;
    private final BiConsumer<UnsafeRow, UnsafeRow> check;

    SingleValuePairs(
        CloseableIterator<KeyValue> entries,
        ColumnFamilyCodec codec,
        BiConsumer<UnsafeRow, UnsafeRow> check) {
      this.entries = entries;
      this.codec = codec;
      this.check = check;
    }

    @Override
    public boolean hasNext() {
      return entries.hasNext();
    }

    @Override
    public UnsafeRowPair next() {
      KeyValue kv = entries.next();
      UnsafeRow key = codec.decodeKey(kv.key());
      UnsafeRow value = codec.decodeValue(kv.value());
      check.accept(key, value);
      return new UnsafeRowPair(key, value);
    }
  }

  private static final class MultiValuePairs implements Iterator<UnsafeRowPair> {
    private final CloseableIterator<KeyValue> entries;
    private final ColumnFamilyCodec codec;
    private UnsafeRow key;
    private Iterator<UnsafeRow> values = Collections.emptyIterator();

    MultiValuePairs(CloseableIterator<KeyValue> entries, ColumnFamilyCodec codec) {
      this.entries = entries;
      this.codec = codec;
    }

    @Override
    public boolean hasNext() {
      while (!values.hasNext() && entries.hasNext()) {
        KeyValue kv = entries.next();
        key = codec.decodeKey(kv.key());
        values = codec.decodeValues(kv.value());
      }
      return values.hasNext();
    }

    @Override
    public UnsafeRowPair next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return new UnsafeRowPair(key, values.next());
    }
  }
}
