package io.streamstate.spark;

import java.io.ByteArrayOutputStream;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * How the rows of one column family become the bytes the engine stores, and back.
 *
 * <p><b>Keys</b> are encoded by Spark's own RocksDB key encoders ({@code
 * KeyStateEncoderSpec.toEncoder} over {@code UnsafeRowDataEncoder}), so that every spec (no prefix,
 * prefix scan, range scan, timestamp as prefix/postfix) produces exactly the bytes Spark's {@code
 * RocksDBStateStoreProvider} produces (without its 2-byte virtual column family id: we use real
 * column families). The engine iterates in unsigned byte order, as RocksDB does, so prefix and
 * range scans return rows in the same order as Spark's RocksDB provider.
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
final class ColumnFamilyCodec {
  private static final byte ENCODING_VERSION = 0;

  private final String name;
  private final StructType valueSchema;
  private final KeyStateEncoderSpec spec;
  private final boolean multipleValues;
  private final int keyFields;
  private final int valueFields;
  private final boolean plainKey;
  private final RocksDBKeyStateEncoder keyEncoder;
  private final boolean rangeScan;
  private final boolean deleteRange;

  ColumnFamilyCodec(
      String name, StructType valueSchema, KeyStateEncoderSpec spec, boolean multipleValues) {
    this.name = name;
    this.valueSchema = valueSchema;
    this.spec = spec;
    this.multipleValues = multipleValues;
    this.keyFields = spec.keySchema().length();
    this.valueFields = valueSchema.length();
    this.plainKey = spec instanceof NoPrefixKeyStateEncoderSpec;
    // useColumnFamilies=false: Spark's encoders do not add the virtual column family id anyway
    // (RocksDB.scala does), and the engine keeps column families apart.
    this.keyEncoder = spec.toEncoder(new UnsafeRowDataEncoder(spec, valueSchema), false);
    this.rangeScan =
        capability(keyEncoder, "supportsRangeScan", spec instanceof RangeKeyScanStateEncoderSpec);
    this.deleteRange = capability(keyEncoder, "supportsDeleteRange", false);
  }

  /**
   * What a key encoder supports. Spark 4.2's encoders say it ({@code supportsRangeScan}, {@code
   * supportsDeleteRange}); 4.1's have no such methods (this source is compiled against both), and
   * there only range-scan specs keep their keys ordered and nothing calls {@code deleteRange}.
   */
  private static boolean capability(
      RocksDBKeyStateEncoder encoder, String method, boolean withoutTheMethod) {
    try {
      return (Boolean) encoder.getClass().getMethod(method).invoke(encoder);
    } catch (NoSuchMethodException e) {
      return withoutTheMethod;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot ask Spark's key encoder " + method, e);
    }
  }

  String name() {
    return name;
  }

  StructType valueSchema() {
    return valueSchema;
  }

  KeyStateEncoderSpec spec() {
    return spec;
  }

  boolean multipleValues() {
    return multipleValues;
  }

  boolean supportsPrefixScan() {
    return keyEncoder.supportPrefixKeyScan();
  }

  boolean supportsRangeScan() {
    return rangeScan;
  }

  boolean supportsDeleteRange() {
    return deleteRange;
  }

  byte[] encodeKey(UnsafeRow key) {
    return keyEncoder.encodeKey(key);
  }

  byte[] encodePrefix(UnsafeRow prefixKey) {
    return keyEncoder.encodePrefixKey(prefixKey);
  }

  UnsafeRow decodeKey(byte[] bytes) {
    if (plainKey) {
      return pointTo(bytes, 1, bytes.length - 1, keyFields);
    }
    // Spark's split-key encoders return a row of a reused projection: copy it.
    return keyEncoder.decodeKey(bytes).copy();
  }

  byte[] encodeValue(UnsafeRow value) {
    int size = value.getSizeInBytes();
    byte[] out = new byte[1 + size];
    out[0] = ENCODING_VERSION;
    value.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + 1);
    return out;
  }

  /** The value of a single-valued family; for a multi-valued one, its first value. */
  UnsafeRow decodeValue(byte[] bytes) {
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
  byte[] appendValues(byte[] existing, UnsafeRow[] values) {
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
  Iterator<UnsafeRow> decodeValues(byte[] bytes) {
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

  private static UnsafeRow pointTo(byte[] bytes, int offset, int length, int numFields) {
    UnsafeRow row = new UnsafeRow(numFields);
    row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length);
    return row;
  }
}
