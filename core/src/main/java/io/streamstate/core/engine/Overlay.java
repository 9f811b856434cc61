package io.streamstate.core.engine;

import java.util.TreeMap;

/**
 * A transaction's uncommitted changes to one column family, in key order. Callers change keys while
 * iterating: {@link MergingIterator} never holds an iterator of this map across a change, it looks
 * its next entry up again ({@code higherEntry}) once the count of changes moved, so a plain {@link
 * TreeMap} does (a concurrent skip list cost about a tenth of a window aggregation's task time in
 * its puts, issue 21); a single thread uses it. Every change goes through {@link #put}, which
 * counts it.
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  final TreeMap<byte[], byte[]> changes = new TreeMap<>(ByteKeys.ORDER);

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  /** Changes made so far (the transaction's thread only). */
  private int modifications;

  /** The key of the newest change. */
  private byte[] lastChangedKey;

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }

  /** Records {@code value} (or {@link #TOMBSTONE}) for {@code key}; returns the previous one. */
  byte[] put(byte[] key, byte[] value) {
    modifications++;
    lastChangedKey = key;
    return changes.put(key, value);
  }

  /** The key of the newest change, or null before any; not to be changed by the caller. */
  byte[] lastChangedKey() {
    return lastChangedKey;
  }

  /** How many changes were made so far: an iterator's cached position is valid while unchanged. */
  int modifications() {
    return modifications;
  }
}
