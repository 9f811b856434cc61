package io.streamstate.core.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.function.BiConsumer;

/**
 * A transaction's uncommitted changes to one column family: a hash table for the point reads and
 * writes, and the keys' order kept only as far as someone asks for it. Every change goes through
 * {@link #put}, which counts it.
 *
 * <p>Why not a sorted map: in Spark's large batches its insertions were about half of the store's
 * CPU per row (issue 21, section 14: a {@code TreeMap} of 50k-100k changes, each insertion a walk
 * of pointers and a rebalance), and most changes never need their order while the transaction is
 * open: a window aggregation puts every key of the batch, then scans the whole state and deletes
 * the key it just returned (a change behind the scan, which no open iterator asks for again). Here
 * a new key is only appended to the pending keys; an ordered question ({@link #ceilingKey}, {@link
 * #higherKey}) places the pending keys first if one of them could be the answer: many at once by a
 * sort and a merge into the sorted keys, a few into a small sorted set beside them (joins
 * interleave single puts with iterators). The commit takes every key in order once.
 *
 * <p>A single thread uses it (the transaction's). Keys and values are not copied: callers hand over
 * arrays nobody changes afterwards.
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  private static final byte[][] NO_KEYS = new byte[0][];

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  // The hash table: open addressing, linear probing, at most half full; never removes.
  private byte[][] tableKeys = new byte[16][];
  private byte[][] tableValues = new byte[16][];
  private int[] tableHashes = new int[16];
  private int size;

  /** Keys in order: {@code sorted[0, sortedCount)}, and {@link #recent} beside them. */
  private byte[][] sorted = NO_KEYS;

  private int sortedCount;

  /** Keys placed in order a few at a time since the last merge into {@link #sorted}. */
  private final TreeSet<byte[]> recent = new TreeSet<>(ByteKeys.ORDER);

  /** Keys added since the last placement, in the order they came; none is in the order yet. */
  private final List<byte[]> pending = new ArrayList<>();

  /** The greatest pending key, or null when none is pending. */
  private byte[] pendingMax;

  /** Changes made so far. */
  private int modifications;

  /** The key of the newest change. */
  private byte[] lastChangedKey;

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }

  /** The change recorded for {@code key}: a value, {@link #TOMBSTONE}, or null if none. */
  byte[] get(byte[] key) {
    int slot = find(key, hash(key));
    return tableKeys[slot] == null ? null : tableValues[slot];
  }

  /** Records {@code value} (or {@link #TOMBSTONE}) for {@code key}; returns the previous one. */
  byte[] put(byte[] key, byte[] value) {
    modifications++;
    lastChangedKey = key;
    int hash = hash(key);
    int slot = find(key, hash);
    if (tableKeys[slot] != null) {
      byte[] previous = tableValues[slot];
      tableValues[slot] = value;
      return previous;
    }
    tableKeys[slot] = key;
    tableValues[slot] = value;
    tableHashes[slot] = hash;
    if (++size * 2 > tableKeys.length) {
      grow();
    }
    pending.add(key);
    if (pendingMax == null || ByteKeys.ORDER.compare(key, pendingMax) > 0) {
      pendingMax = key;
    }
    return null;
  }

  /** Keys changed so far. */
  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  /** The key of the newest change, or null before any; not to be changed by the caller. */
  byte[] lastChangedKey() {
    return lastChangedKey;
  }

  /** How many changes were made so far: an iterator's cached position is valid while unchanged. */
  int modifications() {
    return modifications;
  }

  /** The smallest changed key {@code >= from} (the smallest of all if {@code from} is null). */
  byte[] ceilingKey(byte[] from) {
    if (pendingMax != null && (from == null || ByteKeys.ORDER.compare(pendingMax, from) >= 0)) {
      placePending();
    }
    int i = from == null ? 0 : search(from, true);
    byte[] fromSorted = i < sortedCount ? sorted[i] : null;
    byte[] fromRecent =
        recent.isEmpty() ? null : from == null ? recent.first() : recent.ceiling(from);
    return min(fromSorted, fromRecent);
  }

  /** The smallest changed key {@code > after}. */
  byte[] higherKey(byte[] after) {
    if (pendingMax != null && ByteKeys.ORDER.compare(pendingMax, after) > 0) {
      placePending();
    }
    int i = search(after, false);
    byte[] fromSorted = i < sortedCount ? sorted[i] : null;
    byte[] fromRecent = recent.isEmpty() ? null : recent.higher(after);
    return min(fromSorted, fromRecent);
  }

  /** Every change in key order: the key and its value or {@link #TOMBSTONE}. */
  void forEachInOrder(BiConsumer<byte[], byte[]> change) {
    mergeAll();
    for (int i = 0; i < sortedCount; i++) {
      change.accept(sorted[i], get(sorted[i]));
    }
  }

  private static byte[] min(byte[] a, byte[] b) {
    if (a == null) {
      return b;
    }
    if (b == null) {
      return a;
    }
    return ByteKeys.ORDER.compare(a, b) <= 0 ? a : b;
  }

  /** The index of the first sorted key {@code >= key} ({@code inclusive}) or {@code > key}. */
  private int search(byte[] key, boolean inclusive) {
    int lo = 0;
    int hi = sortedCount;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int c = ByteKeys.ORDER.compare(sorted[mid], key);
      if (c < 0 || (c == 0 && !inclusive)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Puts the pending keys in order: beside the sorted keys, in {@link #recent}, while they are few
   * against them; otherwise every key is merged into one sorted array. Each key is thus placed in
   * the small set at most once and merged O(1) times on average.
   */
  private void placePending() {
    if ((long) (pending.size() + recent.size()) * 8 > sortedCount) {
      mergeAll();
      return;
    }
    recent.addAll(pending);
    pending.clear();
    pendingMax = null;
  }

  /** Merges the pending keys and {@link #recent} into {@link #sorted}. */
  private void mergeAll() {
    if (pending.isEmpty() && recent.isEmpty()) {
      return;
    }
    byte[][] incoming = pending.toArray(NO_KEYS);
    Arrays.sort(incoming, ByteKeys.ORDER); // pending keys often come in order: a linear pass then
    if (!recent.isEmpty()) {
      incoming = merge(recent.toArray(NO_KEYS), recent.size(), incoming, incoming.length);
      recent.clear();
    }
    sorted = merge(sorted, sortedCount, incoming, incoming.length);
    sortedCount = sorted.length;
    pending.clear();
    pendingMax = null;
  }

  /** The two sorted runs (disjoint: a key is added once) merged into a new array. */
  private static byte[][] merge(byte[][] a, int aCount, byte[][] b, int bCount) {
    byte[][] out = new byte[aCount + bCount][];
    int i = 0;
    int j = 0;
    int k = 0;
    while (i < aCount && j < bCount) {
      out[k++] = ByteKeys.ORDER.compare(a[i], b[j]) < 0 ? a[i++] : b[j++];
    }
    while (i < aCount) {
      out[k++] = a[i++];
    }
    while (j < bCount) {
      out[k++] = b[j++];
    }
    return out;
  }

  private static int hash(byte[] key) {
    long h = ByteKeys.hash64(key);
    return (int) (h ^ (h >>> 32));
  }

  /** The slot holding {@code key}, or the empty slot where it goes. */
  private int find(byte[] key, int hash) {
    int mask = tableKeys.length - 1;
    int slot = hash & mask;
    while (true) {
      byte[] k = tableKeys[slot];
      if (k == null || (tableHashes[slot] == hash && Arrays.equals(k, key))) {
        return slot;
      }
      slot = (slot + 1) & mask;
    }
  }

  private void grow() {
    byte[][] oldKeys = tableKeys;
    byte[][] oldValues = tableValues;
    int[] oldHashes = tableHashes;
    int capacity = oldKeys.length * 2;
    tableKeys = new byte[capacity][];
    tableValues = new byte[capacity][];
    tableHashes = new int[capacity];
    int mask = capacity - 1;
    for (int i = 0; i < oldKeys.length; i++) {
      if (oldKeys[i] != null) {
        int slot = oldHashes[i] & mask;
        while (tableKeys[slot] != null) {
          slot = (slot + 1) & mask;
        }
        tableKeys[slot] = oldKeys[i];
        tableValues[slot] = oldValues[i];
        tableHashes[slot] = oldHashes[i];
      }
    }
  }
}
