package io.streamstate.core.engine;

import io.streamstate.core.engine.local.LocalDb;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Consumer;

/**
 * Iterates the committed entries of a column family (a {@link LocalDb.Cursor}) merged with a
 * transaction's uncommitted changes (a sorted overlay), in key order. The overlay wins on equal
 * keys; its tombstones hide committed entries. The overlay iterator is weakly consistent, so keys
 * may be removed while iterating (Spark evicts expired state that way).
 */
final class MergingIterator implements CloseableIterator<KeyValue> {
  private final LocalDb.Cursor base;
  private final Iterator<Map.Entry<byte[], byte[]>> overlay;
  private final byte[] endExclusive;
  private final Consumer<byte[]> committedKeys;
  private Map.Entry<byte[], byte[]> overlayHead;
  private KeyValue next;
  private boolean closed;

  /**
   * @param base positioned at the first key to return, or null when there is no committed data
   * @param overlay the overlay's entries from the same start, or an empty iterator
   * @param endExclusive where to stop, or null for no bound
   * @param committedKeys told each key returned from the committed entries, before it is returned
   */
  MergingIterator(
      LocalDb.Cursor base,
      Iterator<Map.Entry<byte[], byte[]>> overlay,
      byte[] endExclusive,
      Consumer<byte[]> committedKeys) {
    this.base = base;
    this.overlay = overlay;
    this.endExclusive = endExclusive;
    this.committedKeys = committedKeys;
    this.overlayHead = overlay.hasNext() ? overlay.next() : null;
  }

  @Override
  public boolean hasNext() {
    if (next == null && !closed) {
      next = advance();
      if (next == null) {
        close(); // exhausted: free the native iterator now, callers often never close
      }
    }
    return next != null;
  }

  @Override
  public KeyValue next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    KeyValue result = next;
    next = null;
    return result;
  }

  private KeyValue advance() {
    while (true) {
      byte[] baseKey = baseKey();
      byte[] overlayKey = overlayHead == null ? null : overlayHead.getKey();
      if (overlayKey != null
          && endExclusive != null
          && ByteKeys.ORDER.compare(overlayKey, endExclusive) >= 0) {
        overlayKey = null;
        overlayHead = null;
      }
      if (baseKey == null && overlayKey == null) {
        return null;
      }
      int cmp =
          baseKey == null
              ? 1
              : overlayKey == null ? -1 : ByteKeys.ORDER.compare(baseKey, overlayKey);
      if (cmp < 0) {
        KeyValue kv = new KeyValue(baseKey, base.value());
        base.next();
        committedKeys.accept(baseKey);
        return kv;
      }
      byte[] value = overlayHead.getValue();
      overlayHead = overlay.hasNext() ? overlay.next() : null;
      if (cmp == 0) {
        base.next();
      }
      if (value != Overlay.TOMBSTONE) {
        return new KeyValue(overlayKey, value);
      }
    }
  }

  /** The committed entry's key, or null at the end (of the data or of the range). */
  private byte[] baseKey() {
    if (base == null || !base.isValid()) {
      return null;
    }
    byte[] key = base.key();
    return endExclusive == null || ByteKeys.ORDER.compare(key, endExclusive) < 0 ? key : null;
  }

  boolean isClosed() {
    return closed;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      next = null;
      if (base != null) {
        base.close();
      }
    }
  }
}
