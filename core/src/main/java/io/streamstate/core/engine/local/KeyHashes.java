package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import java.util.Arrays;

/**
 * The hashes of a column family's keys as a scan passes them, for a new {@link LiveKeyFilter}:
 * grown as they come, up to {@link LiveKeyFilter#MAX_KEYS} (a family with more gets no filter). The
 * one copy of that rule for everything that builds filters: a full scan from the start ({@link
 * LocalDb#newIterator}), a rebuild's scan of a snapshot ({@link FilterRebuild}) and a checkpoint of
 * a heap-mirrored family ({@link #filterOf}).
 */
final class KeyHashes {
  private long[] hashes = new long[1024];
  private int count;

  /** Adds a key's hash; false (nothing added) once there are more keys than a filter holds. */
  boolean add(byte[] key) {
    if (count == hashes.length) {
      if (count >= LiveKeyFilter.MAX_KEYS) {
        return false;
      }
      hashes = Arrays.copyOf(hashes, count * 2);
    }
    hashes[count++] = ByteKeys.hash64(key);
    return true;
  }

  int count() {
    return count;
  }

  /** A filter of the first {@code count} keys; null if there are more than a filter holds. */
  static LiveKeyFilter filterOf(byte[][] keys, int count) {
    KeyHashes hashes = new KeyHashes();
    for (int i = 0; i < count; i++) {
      if (!hashes.add(keys[i])) {
        return null;
      }
    }
    return hashes.filter(0);
  }

  /** A filter over the keys added, with room for {@code more} to be added to it after. */
  LiveKeyFilter filter(int more) {
    return LiveKeyFilter.of(hashes, count, more);
  }
}
