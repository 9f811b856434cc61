package io.streamstate.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.sql.types.StructType;

/**
 * Spark 4.x keys: encoded by the key encoder of a {@code KeyStateEncoderSpec} ({@code
 * KeyStateEncoderSpec.toEncoder} over {@code UnsafeRowDataEncoder}), for every spec (no prefix,
 * prefix scan, range scan, timestamp as prefix/postfix).
 */
final class EncoderSpecCodec extends ColumnFamilyCodec {
  private final KeyStateEncoderSpec spec;
  private final int keyFields;
  private final boolean plainKey;
  private final RocksDBKeyStateEncoder keyEncoder;
  private final boolean rangeScan;
  private final boolean deleteRange;

  EncoderSpecCodec(
      String name, StructType valueSchema, KeyStateEncoderSpec spec, boolean multipleValues) {
    super(name, spec.keySchema(), valueSchema, multipleValues);
    this.spec = spec;
    this.keyFields = spec.keySchema().length();
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
   * supportsDeleteRange}); 4.0's and 4.1's have no such methods (this source is compiled against
   * all three), and there only range-scan specs keep their keys ordered and nothing calls {@code
   * deleteRange}.
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

  @Override
  String keyLayout() {
    return spec.toString();
  }

  @Override
  boolean supportsPrefixScan() {
    return keyEncoder.supportPrefixKeyScan();
  }

  @Override
  boolean supportsRangeScan() {
    return rangeScan;
  }

  @Override
  boolean supportsDeleteRange() {
    return deleteRange;
  }

  @Override
  byte[] encodeKey(UnsafeRow key) {
    return plainKey ? encodeRow(key) : keyEncoder.encodeKey(key);
  }

  @Override
  boolean encodesFreshKeys() {
    return plainKey;
  }

  @Override
  byte[] encodePrefix(UnsafeRow prefixKey) {
    return keyEncoder.encodePrefixKey(prefixKey);
  }

  @Override
  UnsafeRow decodeKey(byte[] bytes) {
    if (plainKey) {
      return pointTo(bytes, 1, bytes.length - 1, keyFields);
    }
    // Spark's split-key encoders return a row of a reused projection: copy it.
    return keyEncoder.decodeKey(bytes).copy();
  }
}
