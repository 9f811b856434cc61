package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import java.util.Arrays;

/**
 * The hashes of a column family's keys as a scan passes them, for a new {@link LiveKeyFilter}:
 * grown as they come, up to {@link LiveKeyFilter#MAX_KEYS} (a family with more gets no filter). The
 * one copy of that rule for both scans that build filters: a full scan from the start ({@link
 * LocalDb#newIterator}) and a rebuild's scan of a snapshot ({@link FilterRebuild}).
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

  /** A filter over the keys added, with room for {@code more} to be added to it after. */
  LiveKeyFilter filter(int more) {
    return LiveKeyFilter.of(hashes, count, more);
  }
}
