package io.streamstate.core.engine;

import java.util.Arrays;

/**
 * Changes to keys not yet put in key order, for reads and writes by key: the keys and values in
 * arrays in the order they first came, and an open-addressing table of their indices by the key's
 * hash. A point read or write hashes the key once, where a tree walks a dozen levels comparing
 * bytes at each (the overlay's tree was a third of a saturated deduplication's store samples, issue
 * 21). {@link Overlay} sorts them once, when someone first needs them in order. Not thread-safe, as
 * the transaction.
 */
final class PendingChanges {
  private byte[][] keys = new byte[16][];
  private byte[][] values = new byte[16][];

  /**
   * Per slot, the key's hash (high 32 bits) and its index + 1 (low 32 bits); 0 for a free slot. At
   * most half full. The hash in the slot spares a probe a visit to another array (a cache miss): a
   * read of a key not changed here, the common case, touches only this array.
   */
  private long[] slots = new long[32];

  private int size;

  /** The value changed at {@code key}, or null if none. */
  byte[] get(byte[] key) {
    int hash = ByteKeys.hash32(key);
    int mask = slots.length - 1;
    for (int s = hash & mask; ; s = (s + 1) & mask) {
      long slot = slots[s];
      if (slot == 0) {
        return null;
      }
      if ((int) (slot >>> 32) == hash) {
        int i = (int) slot - 1;
        if (Arrays.equals(keys[i], key)) {
          return values[i];
        }
      }
    }
  }

  /** Sets {@code key}'s value; returns the previous one, or null if the key was not here. */
  byte[] put(byte[] key, byte[] value) {
    int hash = ByteKeys.hash32(key);
    int mask = slots.length - 1;
    int s = hash & mask;
    for (long slot; (slot = slots[s]) != 0; s = (s + 1) & mask) {
      int i = (int) slot - 1;
      if ((int) (slot >>> 32) == hash && Arrays.equals(keys[i], key)) {
        byte[] previous = values[i];
        values[i] = value;
        return previous;
      }
    }
    if (size == keys.length) {
      int capacity = size * 2;
      keys = Arrays.copyOf(keys, capacity);
      values = Arrays.copyOf(values, capacity);
    }
    keys[size] = key;
    values[size] = value;
    slots[s] = ((long) hash << 32) | ++size;
    if (size * 2 > slots.length) {
      rehash(slots.length * 2);
    }
    return null;
  }

  int size() {
    return size;
  }

  /** The keys, {@code [0, size())} in the order they came; not to be changed. */
  byte[][] keys() {
    return keys;
  }

  /** The value of {@code keys()[index]}. */
  byte[] valueAt(int index) {
    return values[index];
  }

  private void rehash(int capacity) {
    long[] old = slots;
    slots = new long[capacity];
    int mask = capacity - 1;
    for (long slot : old) {
      if (slot != 0) {
        int s = (int) (slot >>> 32) & mask;
        while (slots[s] != 0) {
          s = (s + 1) & mask;
        }
        slots[s] = slot;
      }
    }
  }
}
