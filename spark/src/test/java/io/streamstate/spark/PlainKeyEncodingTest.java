package io.streamstate.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * A plain key (no prefix or range columns) is encoded by our own one-copy path, not by Spark's
 * encoder: its bytes must stay exactly Spark's (checkpoints move between our lines and convert to
 * and from Spark's RocksDB provider), for every kind of key row the operators make.
 */
class PlainKeyEncodingTest {
  private static final StructType VALUE = new StructType().add("count", DataTypes.LongType);

  private static final StructType WINDOW =
      new StructType().add("start", DataTypes.TimestampType).add("end", DataTypes.TimestampType);

  @Test
  void plainKeysAreSparksBytesForEveryKindOfKeyRow() {
    Random random = new Random(21);
    List<StructType> schemas =
        List.of(
            new StructType().add("id", DataTypes.LongType, false),
            new StructType().add("window", WINDOW).add("shop", DataTypes.LongType),
            new StructType().add("name", DataTypes.StringType).add("n", DataTypes.IntegerType),
            new StructType()
                .add("a", DataTypes.StringType)
                .add("b", DataTypes.DoubleType)
                .add("c", DataTypes.StringType));
    int compared = 0;
    for (StructType keySchema : schemas) {
      NoPrefixKeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(keySchema);
      EncoderSpecCodec codec = new EncoderSpecCodec("default", VALUE, spec, false);
      RocksDBKeyStateEncoder spark = spec.toEncoder(new UnsafeRowDataEncoder(spec, VALUE), false);
      UnsafeProjection project = UnsafeProjection.create(keySchema);
      for (int i = 0; i < 200; i++) {
        UnsafeRow row = project.apply(randomRow(keySchema, random));
        byte[] expected = spark.encodeKey(row);
        assertArrayEquals(expected, codec.encodeKey(row), keySchema.simpleString() + " row " + i);
        // A row inside a larger array, at an offset: what a projection's reused buffer holds.
        byte[] padded = new byte[row.getSizeInBytes() + 24];
        row.writeToMemory(padded, Platform.BYTE_ARRAY_OFFSET + 16);
        UnsafeRow inside = new UnsafeRow(keySchema.length());
        inside.pointTo(padded, Platform.BYTE_ARRAY_OFFSET + 16, row.getSizeInBytes());
        assertArrayEquals(expected, codec.encodeKey(inside), keySchema.simpleString() + " inside");
        assertEquals(row, codec.decodeKey(codec.encodeKey(row)));
        compared++;
      }
    }
    assertEquals(800, compared);
  }

  private static InternalRow randomRow(StructType schema, Random random) {
    List<Object> values = new ArrayList<>();
    for (var field : schema.fields()) {
      if (field.nullable() && random.nextInt(10) == 0) {
        values.add(null);
      } else if (field.dataType() instanceof StructType struct) {
        values.add(randomRow(struct, random));
      } else if (field.dataType() == DataTypes.StringType) {
        byte[] text = new byte[random.nextInt(40)];
        for (int i = 0; i < text.length; i++) {
          text[i] = (byte) ('a' + random.nextInt(26));
        }
        values.add(UTF8String.fromBytes(text));
      } else if (field.dataType() == DataTypes.IntegerType) {
        values.add(random.nextInt());
      } else if (field.dataType() == DataTypes.DoubleType) {
        values.add(random.nextDouble());
      } else {
        values.add(random.nextLong()); // LongType, TimestampType
      }
    }
    return new GenericInternalRow(values.toArray());
  }
}
