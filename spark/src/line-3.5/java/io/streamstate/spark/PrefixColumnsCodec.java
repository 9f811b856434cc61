package io.streamstate.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder$;
import org.apache.spark.sql.types.StructType;

/**
 * Spark 3.5's keys: its RocksDB provider's key encoder for a number of prefix columns ({@code
 * numColsPrefixKey}: 0 for plain keys, more for prefix scans, as session windows use). The bytes
 * are those of 4.x's no-prefix and prefix-scan specs, so a checkpoint moves from 3.5 to 4.x.
 */
final class PrefixColumnsCodec extends ColumnFamilyCodec {
  private final int numColsPrefixKey;
  private final int keyFields;
  private final RocksDBStateEncoder keyEncoder;

  PrefixColumnsCodec(
      String name, StructType keySchema, StructType valueSchema, int numColsPrefixKey) {
    super(name, keySchema, valueSchema, false);
    this.numColsPrefixKey = numColsPrefixKey;
    this.keyFields = keySchema.length();
    this.keyEncoder =
        RocksDBStateEncoder$.MODULE$.getEncoder(keySchema, valueSchema, numColsPrefixKey);
  }

  @Override
  String keyLayout() {
    return numColsPrefixKey > 0
        ? "prefix scan over the first " + numColsPrefixKey + " key columns"
        : "no prefix";
  }

  @Override
  boolean supportsPrefixScan() {
    return keyEncoder.supportPrefixKeyScan();
  }

  @Override
  boolean supportsRangeScan() {
    return false;
  }

  @Override
  boolean supportsDeleteRange() {
    return false;
  }

  @Override
  byte[] encodeKey(UnsafeRow key) {
    return numColsPrefixKey == 0 ? encodeRow(key) : keyEncoder.encodeKey(key);
  }

  @Override
  boolean encodesFreshKeys() {
    return numColsPrefixKey == 0;
  }

  @Override
  byte[] encodePrefix(UnsafeRow prefixKey) {
    return keyEncoder.encodePrefixKey(prefixKey);
  }

  @Override
  UnsafeRow decodeKey(byte[] bytes) {
    if (numColsPrefixKey == 0) {
      return pointTo(bytes, 1, bytes.length - 1, keyFields);
    }
    // Spark's prefix-scan encoder returns a row of a reused projection: copy it.
    return keyEncoder.decodeKey(bytes).copy();
  }
}
