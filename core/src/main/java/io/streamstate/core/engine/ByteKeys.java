package io.streamstate.core.engine;

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
}
