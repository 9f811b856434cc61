package io.streamstate.core.engine;

import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A transaction's uncommitted changes to one column family, in key order. A concurrent map because
 * callers remove keys while iterating; a single thread uses it. Every change goes through {@link
 * #put}, which counts it, so that an open iterator knows when to look again ({@link
 * MergingIterator}).
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  final ConcurrentSkipListMap<byte[], byte[]> changes = new ConcurrentSkipListMap<>(ByteKeys.ORDER);

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  /** Changes made so far (the transaction's thread only). */
  private int modifications;

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }

  /** Records {@code value} (or {@link #TOMBSTONE}) for {@code key}; returns the previous one. */
  byte[] put(byte[] key, byte[] value) {
    modifications++;
    return changes.put(key, value);
  }

  /** How many changes were made so far: an iterator's cached position is valid while unchanged. */
  int modifications() {
    return modifications;
  }
}
