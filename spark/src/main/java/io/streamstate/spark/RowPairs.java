package io.streamstate.spark;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.BiConsumer;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * The rows of an engine iterator as Spark's {@link StateStoreIterator}: a fresh pair and fresh rows
 * per element (Spark's operators may keep them), and closing it closes the engine's iterator.
 */
final class RowPairs {
  private RowPairs() {}

  /** One pair per key; {@code check} sees each decoded key and value (Spark's format check). */
  static StateStoreIterator<UnsafeRowPair> singleValued(
      CloseableIterator<KeyValue> entries,
      ColumnFamilyCodec codec,
      BiConsumer<UnsafeRow, UnsafeRow> check) {
    return closing(entries, new SingleValuePairs(entries, codec, check));
  }

  /** One pair per value of a multi-valued key, the key repeated. */
  static StateStoreIterator<UnsafeRowPair> multiValued(
      CloseableIterator<KeyValue> entries, ColumnFamilyCodec codec) {
    return closing(entries, new MultiValuePairs(entries, codec));
  }

  private static StateStoreIterator<UnsafeRowPair> closing(
      CloseableIterator<KeyValue> entries, Iterator<UnsafeRowPair> rows) {
    return new StateStoreIterator<>(
        CollectionConverters.asScala(rows),
        () -> {
          entries.close();
          return BoxedUnit.UNIT;
        });
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
