package io.streamstate.core.engine;

import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A transaction's uncommitted changes to one column family, in key order. A concurrent map because
 * callers remove keys while iterating; a single thread uses it.
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  final ConcurrentSkipListMap<byte[], byte[]> changes = new ConcurrentSkipListMap<>(ByteKeys.ORDER);

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }
}
