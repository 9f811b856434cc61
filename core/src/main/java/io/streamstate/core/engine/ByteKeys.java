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

  /** {@link #hash64} folded to 32 bits and spread, for open-addressing tables of keys. */
  static int hash32(byte[] b) {
    long h = hash64(b);
    int x = (int) (h ^ (h >>> 32));
    return x ^ (x >>> 16);
  }

  /**
   * The indices {@code 0..n-1} of {@code keys[0, n)} in key order ({@link #ORDER}), found mostly
   * without comparing keys: each key's 8 bytes at the offset where the keys first differ (UnsafeRow
   * keys share their first bytes) are packed with its index into a long, the longs sorted as
   * numbers, and only keys whose packed prefixes tie are compared further (by the same means one
   * level deeper, or in full when few). A comparison sort of byte arrays in random order cost more
   * than a tree's inserts of the same keys (issue 21 bench, section 27): each comparison is a cache
   * miss on two keys; here each key is read once.
   */
  static int[] sortedOrder(byte[][] keys, int n) {
    int[] order = new int[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    sortRange(keys, order, 0, n, 0);
    return order;
  }

  /** Sorts {@code order[from, to)} by key; the keys there share at least {@code shared} bytes. */
  private static void sortRange(byte[][] keys, int[] order, int from, int to, int shared) {
    int n = to - from;
    if (n <= 16) {
      insertionSort(keys, order, from, to);
      return;
    }
    byte[] first = keys[order[from]];
    int common = first.length;
    for (int i = from + 1; i < to && common > shared; i++) {
      byte[] key = keys[order[i]];
      int m = Arrays.mismatch(first, 0, common, key, 0, Math.min(common, key.length));
      if (m >= 0) {
        common = m;
      }
    }
    if (common <= shared && shared > 0) {
      // No progress since the level above (keys equal, or one a prefix of the others, for as far
      // as the prefixes reach): compare in full.
      Integer[] boxed = new Integer[n];
      for (int i = 0; i < n; i++) {
        boxed[i] = order[from + i];
      }
      Arrays.sort(boxed, (a, b) -> ORDER.compare(keys[a], keys[b]));
      for (int i = 0; i < n; i++) {
        order[from + i] = boxed[i];
      }
      return;
    }
    int indexBits = 32 - Integer.numberOfLeadingZeros(n - 1);
    long indexMask = (1L << indexBits) - 1;
    long[] packed = new long[n];
    for (int i = 0; i < n; i++) {
      int index = order[from + i];
      // Unsigned prefix order as signed long order: flip the sign bit.
      packed[i] = ((prefixAt(keys[index], common) & ~indexMask) | i) ^ Long.MIN_VALUE;
    }
    Arrays.sort(packed);
    int[] run = Arrays.copyOfRange(order, from, to);
    for (int i = 0; i < n; i++) {
      order[from + i] = run[(int) (packed[i] & indexMask)];
    }
    // Keys whose prefixes (their bits above the index) tie: sorted among themselves.
    int start = 0;
    for (int i = 1; i <= n; i++) {
      if (i == n || (packed[i] >>> indexBits) != (packed[start] >>> indexBits)) {
        if (i - start > 1) {
          sortRange(keys, order, from + start, from + i, common + 1);
        }
        start = i;
      }
    }
  }

  private static void insertionSort(byte[][] keys, int[] order, int from, int to) {
    for (int i = from + 1; i < to; i++) {
      int index = order[i];
      byte[] key = keys[index];
      int j = i - 1;
      while (j >= from && ORDER.compare(keys[order[j]], key) > 0) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = index;
    }
  }

  /** The 8 bytes of {@code key} from {@code offset}, big-endian, zeros past its end. */
  private static long prefixAt(byte[] key, int offset) {
    if (offset + 8 <= key.length) {
      return (long) BIG_ENDIAN_LONGS.get(key, offset);
    }
    long prefix = 0;
    for (int i = offset; i < offset + 8; i++) {
      prefix = (prefix << 8) | (i < key.length ? key[i] & 0xFF : 0);
    }
    return prefix;
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

  private static final VarHandle BIG_ENDIAN_LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
}
