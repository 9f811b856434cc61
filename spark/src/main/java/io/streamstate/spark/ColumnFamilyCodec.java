package io.streamstate.spark;

import java.io.ByteArrayOutputStream;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * How the rows of one column family become the bytes the engine stores, and back.
 *
 * <p><b>Keys</b> are encoded by Spark's own RocksDB key encoders (plain keys by {@link #encodeRow},
 * the same bytes in one copy), so that every key layout produces exactly the bytes Spark's {@code
 * RocksDBStateStoreProvider} produces (without its 2-byte virtual column family id: we use real
 * column families); how a line builds them is its subclass's ({@code EncoderSpecCodec} on 4.x from
 * a {@code KeyStateEncoderSpec}, {@code PrefixColumnsCodec} on 3.5 from a number of prefix
 * columns). The layouts 3.5 has (no prefix, prefix scan) are the same bytes in every line, so a
 * checkpoint moves between lines. The engine iterates in unsigned byte order, as RocksDB does, so
 * prefix and range scans return rows in the same order as Spark's RocksDB provider.
 *
 * <p><b>Values</b>, the same format as that provider with {@code mergeOperatorVersion = 2}:
 *
 * <pre>
 * single value:     [0x00 (encoding version)][UnsafeRow bytes]
 * multiple values:  ([int32 length, native order][0x00][UnsafeRow bytes])*   (no delimiter)
 * </pre>
 *
 * <p>Decoded rows are fresh objects, never reused, pointing into arrays nobody else holds:
 * operators may keep them across calls (Spark's HDFS provider gives the same guarantee).
 *
 * <p>Not thread-safe (Spark's encoders reuse buffers): one store of a provider is open at a time,
 * used by one task thread.
 */
abstract class ColumnFamilyCodec {
  private static final byte ENCODING_VERSION = 0;

  private final String name;
  private final StructType keySchema;
  private final StructType valueSchema;
  private final boolean multipleValues;
  private final int valueFields;

  ColumnFamilyCodec(
      String name, StructType keySchema, StructType valueSchema, boolean multipleValues) {
    this.name = name;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.multipleValues = multipleValues;
    this.valueFields = valueSchema.length();
  }

  final String name() {
    return name;
  }

  final StructType keySchema() {
    return keySchema;
  }

  final StructType valueSchema() {
    return valueSchema;
  }

  final boolean multipleValues() {
    return multipleValues;
  }

  /** How keys are laid out, for error messages (Spark's key encoder spec). */
  abstract String keyLayout();

  abstract boolean supportsPrefixScan();

  abstract boolean supportsRangeScan();

  abstract boolean supportsDeleteRange();

  abstract byte[] encodeKey(UnsafeRow key);

  /** Whether {@link #encodeKey} returns a new array every time (ours does; Spark's may not). */
  abstract boolean encodesFreshKeys();

  /** The key's bytes in an array nobody else holds: the caller may hand it on and keep it. */
  final byte[] encodeOwnedKey(UnsafeRow key) {
    byte[] encoded = encodeKey(key);
    return encodesFreshKeys() ? encoded : encoded.clone();
  }

  abstract byte[] encodePrefix(UnsafeRow prefixKey);

  /** A fresh row nobody else holds. */
  abstract UnsafeRow decodeKey(byte[] bytes);

  final byte[] encodeValue(UnsafeRow value) {
    return encodeRow(value);
  }

  /**
   * {@code [0x00 (encoding version)][UnsafeRow bytes]}: a single value, and a plain key (no prefix
   * or range columns), byte for byte what Spark's {@code encodeUnsafeRow} gives for it (3.5's
   * {@code RocksDBStateEncoder}, 4.x's {@code RocksDBDataEncoder}), in one array and one copy where
   * Spark's takes two ({@code UnsafeRow.getBytes} first): a key is encoded for every read, put and
   * removal (issue 21).
   */
  static byte[] encodeRow(UnsafeRow row) {
    int size = row.getSizeInBytes();
    byte[] out = new byte[1 + size];
    out[0] = ENCODING_VERSION;
    row.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + 1);
    return out;
  }

  /** The value of a single-valued family; for a multi-valued one, its first value. */
  final UnsafeRow decodeValue(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    if (multipleValues) {
      Iterator<UnsafeRow> it = decodeValues(bytes);
      return it.hasNext() ? it.next() : null;
    }
    return pointTo(bytes, 1, bytes.length - 1, valueFields);
  }

  /** Appends the list encoding of {@code values} to {@code existing} (may be null). */
  final byte[] appendValues(byte[] existing, UnsafeRow[] values) {
    ByteArrayOutputStream out =
        new ByteArrayOutputStream((existing == null ? 0 : existing.length) + 64 * values.length);
    if (existing != null) {
      out.writeBytes(existing);
    }
    byte[] length = new byte[4];
    for (UnsafeRow value : values) {
      int size = value.getSizeInBytes();
      Platform.putInt(length, Platform.BYTE_ARRAY_OFFSET, size + 1);
      out.writeBytes(length);
      out.write(ENCODING_VERSION);
      out.writeBytes(value.getBytes());
    }
    return out.toByteArray();
  }

  /** The values of a multi-valued family's entry; empty for null. */
  final Iterator<UnsafeRow> decodeValues(byte[] bytes) {
    if (bytes == null) {
      return Collections.emptyIterator();
    }
    return new Iterator<>() {
      private int pos;

      @Override
      public boolean hasNext() {
        return pos < bytes.length;
      }

      @Override
      public UnsafeRow next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        if (bytes.length - pos < 5) {
          throw corrupt(bytes.length - pos);
        }
        int length = Platform.getInt(bytes, Platform.BYTE_ARRAY_OFFSET + pos);
        if (length < 1 || length > bytes.length - pos - 4) {
          throw corrupt(length);
        }
        UnsafeRow row = pointTo(bytes, pos + 5, length - 1, valueFields);
        pos += 4 + length;
        return row;
      }

      private IllegalStateException corrupt(int found) {
        return new IllegalStateException(
            "Corrupt multi-value entry in column family '"
                + name
                + "': bad length "
                + found
                + " at offset "
                + pos
                + " of "
                + bytes.length);
      }
    };
  }

  static UnsafeRow pointTo(byte[] bytes, int offset, int length, int numFields) {
    UnsafeRow row = new UnsafeRow(numFields);
    row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length);
    return row;
  }
}
