package io.streamstate.core.engine;

import java.util.Arrays;

/**
 * What a transaction learned of its committed state's keys: whether each key it read exists, so
 * that a put of the same key later (Spark counts rows: a read, then a put) need not ask RocksDB
 * again. An open-addressing table of the keys' copies, their hashes and the answers: one allocation
 * a key (its copy), where a {@code HashMap} took four (the copy, a wrapper, a node, a boxed answer)
 * and was a tenth of a saturated join's read samples (docs/bench/2026-12-03-issue21.md section 16).
 * Not thread-safe, as the transaction.
 */
final class ExistenceMemo {
  /** Answers of {@link #lookUp}. */
  static final int UNKNOWN = -1;

  static final int ABSENT = 0;
  static final int PRESENT = 1;

  private byte[][] keys = new byte[64][];
  private int[] hashes = new int[64];
  private boolean[] present = new boolean[64];
  private int size;
  private final int maxKeys;

  ExistenceMemo(int maxKeys) {
    this.maxKeys = maxKeys;
  }

  /** {@link #PRESENT}, {@link #ABSENT} or {@link #UNKNOWN} for {@code key}. */
  int lookUp(byte[] key) {
    int hash = ByteKeys.hash32(key); // state keys collide often under Arrays.hashCode
    int mask = keys.length - 1;
    for (int i = hash & mask; ; i = (i + 1) & mask) {
      byte[] k = keys[i];
      if (k == null) {
        return UNKNOWN;
      }
      if (hashes[i] == hash && Arrays.equals(k, key)) {
        return present[i] ? PRESENT : ABSENT;
      }
    }
  }

  /**
   * Remembers {@code key} (copied) and whether it exists; nothing once {@code maxKeys} keys are
   * held (a transaction that reads millions of keys would hold them all in the heap).
   */
  void remember(byte[] key, boolean exists) {
    if (size >= maxKeys) {
      return;
    }
    int hash = ByteKeys.hash32(key);
    int mask = keys.length - 1;
    int i = hash & mask;
    while (keys[i] != null) {
      if (hashes[i] == hash && Arrays.equals(keys[i], key)) {
        present[i] = exists;
        return;
      }
      i = (i + 1) & mask;
    }
    keys[i] = key.clone();
    hashes[i] = hash;
    present[i] = exists;
    if (++size * 2 > keys.length) {
      grow();
    }
  }

  int size() {
    return size;
  }

  private void grow() {
    byte[][] oldKeys = keys;
    int[] oldHashes = hashes;
    boolean[] oldPresent = present;
    keys = new byte[oldKeys.length * 2][];
    hashes = new int[keys.length];
    present = new boolean[keys.length];
    int mask = keys.length - 1;
    for (int j = 0; j < oldKeys.length; j++) {
      if (oldKeys[j] != null) {
        int i = oldHashes[j] & mask;
        while (keys[i] != null) {
          i = (i + 1) & mask;
        }
        keys[i] = oldKeys[j];
        hashes[i] = oldHashes[j];
        present[i] = oldPresent[j];
      }
    }
  }
}
