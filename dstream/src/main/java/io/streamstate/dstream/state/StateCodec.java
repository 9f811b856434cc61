package io.streamstate.dstream.state;

import java.nio.ByteBuffer;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.serializer.JavaSerializer;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * How keys and states become bytes in a partition's store, and the layout of its two column
 * families:
 *
 * <ul>
 *   <li>{@value #STATE}: key → {@code [update time, 8 bytes big-endian][state]}
 *   <li>{@value #UPDATE_TIMES}: {@code [update time, 8 bytes, sign flipped, big-endian][key]} → a
 *       one-byte marker: the keys ordered by their last update, so that a batch finds the keys it
 *       times out by a range scan below its threshold, without reading any state. Kept only while
 *       the spec has a timeout (it costs a put and a delete per update); {@value #META} says
 *       whether it is complete.
 *   <li>{@value #META}: {@value #TIME_INDEX_COMPLETE} → a marker, present while {@value
 *       #UPDATE_TIMES} holds every key.
 * </ul>
 *
 * Keys and states are serialized with the process's Spark serializer ({@code spark.serializer};
 * Java serialization outside Spark). A key is found by its bytes: the serializer must write equal
 * keys as equal bytes, in every JVM and every version of the application that reads the state (Java
 * serialization of strings, boxed numbers and classes with a fixed {@code serialVersionUID} does;
 * Kryo does with the same class registrations). Not thread-safe: one per task.
 */
public final class StateCodec {
  /** The column family of the states. */
  public static final String STATE = "state";

  /** The column family of the keys by update time. */
  public static final String UPDATE_TIMES = "updateTimes";

  /** The column family of the partition's own facts. */
  public static final String META = "meta";

  /** The key of {@value #META} present while the update-time index is complete. */
  public static final String TIME_INDEX_COMPLETE = "timeIndexComplete";

  private static final byte[] PRESENT = {1};

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static final ClassTag<Object> ANY = (ClassTag) ClassTag$.MODULE$.AnyRef();

  private final SerializerInstance serializer;

  private StateCodec(SerializerInstance serializer) {
    this.serializer = serializer;
  }

  /** A codec on this process's Spark serializer, or on Java serialization outside Spark. */
  public static StateCodec create() {
    SparkEnv env = SparkEnv.get();
    return new StateCodec(
        env != null
            ? env.serializer().newInstance()
            : new JavaSerializer(new SparkConf(false)).newInstance());
  }

  /** The bytes of a key or a state. */
  public byte[] encode(Object value) {
    ByteBuffer buffer = serializer.serialize(value, ANY);
    byte[] bytes = new byte[buffer.remaining()];
    buffer.get(bytes);
    return bytes;
  }

  /** The object of {@code bytes} (from {@code offset} on). */
  @SuppressWarnings("unchecked")
  public <T> T decode(byte[] bytes, int offset) {
    return (T) serializer.deserialize(ByteBuffer.wrap(bytes, offset, bytes.length - offset), ANY);
  }

  /** A value of {@value #STATE}. */
  public static byte[] stateValue(long updateTimeMs, byte[] state) {
    return ByteBuffer.allocate(8 + state.length).putLong(updateTimeMs).put(state).array();
  }

  /** The update time of a value of {@value #STATE}. */
  public static long updateTime(byte[] stateValue) {
    return ByteBuffer.wrap(stateValue).getLong();
  }

  /** Where a value of {@value #STATE} holds the state's bytes. */
  public static final int STATE_OFFSET = 8;

  /** A key of {@value #UPDATE_TIMES}. */
  public static byte[] timeKey(long updateTimeMs, byte[] key) {
    return ByteBuffer.allocate(8 + key.length)
        .putLong(updateTimeMs ^ Long.MIN_VALUE)
        .put(key)
        .array();
  }

  /** The first key of {@value #UPDATE_TIMES} at or after {@code timeMs}. */
  public static byte[] timeBound(long timeMs) {
    return ByteBuffer.allocate(8).putLong(timeMs ^ Long.MIN_VALUE).array();
  }

  /** The key of a key of {@value #UPDATE_TIMES}. */
  public static byte[] keyOfTimeKey(byte[] timeKey) {
    byte[] key = new byte[timeKey.length - 8];
    System.arraycopy(timeKey, 8, key, 0, key.length);
    return key;
  }

  /** The key {@value #TIME_INDEX_COMPLETE} of {@value #META}, as bytes. */
  static byte[] timeIndexComplete() {
    return TIME_INDEX_COMPLETE.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The value of every key of {@value #UPDATE_TIMES}. */
  static byte[] present() {
    return PRESENT.clone();
  }
}
