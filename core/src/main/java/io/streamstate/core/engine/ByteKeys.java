package io.streamstate.core.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Comparator;

/** Key order: unsigned lexicographic bytes, the order of RocksDB's default comparator. */
public final class ByteKeys {
  public static final Comparator<byte[]> ORDER = Arrays::compareUnsigned;

  private ByteKeys() {}

  /**
   * The smallest key greater than every key starting with {@code prefix}, or null if there is none
   * (the prefix is empty or all 0xFF).
   */
  public static byte[] prefixEnd(byte[] prefix) {
    byte[] end = Arrays.copyOf(prefix, prefix.length);
    for (int i = end.length - 1; i >= 0; i--) {
      if (end[i] != (byte) 0xFF) {
        end[i]++;
        return Arrays.copyOf(end, i + 1);
      }
    }
    return null;
  }

  /**
   * A well-mixed 64-bit hash of the bytes, 8 at a time. {@code Arrays.hashCode} (and {@code
   * ByteBuffer}'s) is a base-31 polynomial: state keys made of fixed-width numbers (Spark's
   * UnsafeRow) collide often under it (a +1 in one byte and -31 in the next cancel out).
   */
  public static long hash64(byte[] b) {
    long h = 0x9E3779B97F4A7C15L ^ b.length;
    int i = 0;
    for (; i + 8 <= b.length; i += 8) {
      h = mix(h ^ (long) LONGS.get(b, i));
    }
    long tail = 0;
    for (; i < b.length; i++) {
      tail = (tail << 8) | (b[i] & 0xFF);
    }
    return mix(h ^ tail);
  }

  /** The finalizer of MurmurHash3 (fmix64). */
  public static long mix(long h) {
    h ^= h >>> 33;
    h *= 0xFF51AFD7ED558CCDL;
    h ^= h >>> 33;
    h *= 0xC4CEB93FE1A85EC3L;
    h ^= h >>> 33;
    return h;
  }

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
}
