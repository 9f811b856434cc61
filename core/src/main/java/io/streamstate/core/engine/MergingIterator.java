package io.streamstate.core.engine;

import io.streamstate.core.engine.local.LocalDb;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NoSuchElementException;
import java.util.function.Consumer;

/**
 * Iterates the committed entries of a column family (a {@link LocalDb.Cursor}) merged with a
 * transaction's uncommitted changes (a sorted overlay), in key order. The overlay wins on equal
 * keys; its tombstones and scan deletions hide committed entries.
 *
 * <p>A live view of the overlay: each step returns the smallest key after the last one returned,
 * with the overlay as it is at that step, so changes made while iterating (Spark evicts expired
 * state by removing keys it iterates; an operator may put while it iterates) are seen the way
 * Spark's HDFS-backed provider's map iterator sees them. The committed entries cannot change during
 * a transaction. One exception, also the map's: an iterator created over nothing (no committed
 * entry and no change in its range) stays empty.
 */
final class MergingIterator implements CloseableIterator<KeyValue> {
  private final LocalDb.Cursor base;
  private final NavigableMap<byte[], byte[]> overlay;
  private final Overlay changes;
  private final byte[] endExclusive;
  private final Consumer<byte[]> committedKeys;

  /**
   * A lower bound of the index of the first scan deletion at or after the committed key looked at
   * next: committed keys are looked at in increasing order, and scan deletions only append.
   */
  private int deletedIndex;

  /** The last key returned or skipped: every later step returns a greater one. */
  private byte[] position;

  /** The overlay's first entry after {@link #position}, valid while the overlay is unchanged. */
  private Map.Entry<byte[], byte[]> overlayHead;

  /**
   * An iterator of the overlay that last returned {@link #overlayHead}, usable while the overlay's
   * {@link Overlay#insertions} are {@link #overlayCursorAtInsertions}.
   */
  private Iterator<Map.Entry<byte[], byte[]>> overlayCursor;

  private int overlayCursorAtInsertions;

  private boolean overlayHeadKnown;
  private int overlayHeadAtModification;

  private KeyValue next;

  /**
   * Whether {@link #next} came from the committed entries, and the overlay's change count when it
   * was found: the committed key is reported when it is returned, not when {@link #hasNext} finds
   * it (a caller that looks ahead before deleting the key it holds, as Spark's join eviction does,
   * still deletes the key last returned), and only if that key was not changed in between.
   */
  private boolean nextIsCommitted;

  private int nextFoundAtModification;

  private boolean closed;

  /**
   * @param base positioned at the first key to return, or null when there is no committed data
   * @param overlay the overlay's entries from the same start (a live view), possibly empty
   * @param changes the overlay's owner: its change count and newest changed key tell whether a
   *     cached position is still valid
   * @param endExclusive where to stop, or null for no bound
   * @param committedKeys told each key returned from the committed entries as {@link #next} returns
   *     it, unless the overlay changed since {@link #hasNext} found it
   */
  MergingIterator(
      LocalDb.Cursor base,
      NavigableMap<byte[], byte[]> overlay,
      Overlay changes,
      byte[] endExclusive,
      Consumer<byte[]> committedKeys) {
    this.base = base;
    this.overlay = overlay;
    this.changes = changes;
    this.endExclusive = endExclusive;
    this.committedKeys = committedKeys;
    if (baseKey() == null && !anyLiveChange()) {
      close(); // created over nothing: stays empty
    }
  }

  /** Whether the overlay holds a key (not a deletion) before the end. */
  private boolean anyLiveChange() {
    for (Map.Entry<byte[], byte[]> e : overlay.entrySet()) {
      if (!beforeEnd(e.getKey())) {
        return false;
      }
      if (e.getValue() != Overlay.TOMBSTONE) {
        return true;
      }
    }
    return false;
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
    if (nextIsCommitted && unchangedSinceFound(result.key())) {
      committedKeys.accept(result.key());
    }
    return result;
  }

  /**
   * Whether the overlay holds no change at {@code key} made since {@link #hasNext} found it: none
   * at all, or one at a smaller key (the caller deleted the key it held before it moved on).
   */
  private boolean unchangedSinceFound(byte[] key) {
    int modifications = changes.modifications();
    return modifications == nextFoundAtModification
        || (modifications == nextFoundAtModification + 1
            && ByteKeys.ORDER.compare(changes.lastChangedKey(), key) < 0);
  }

  private KeyValue advance() {
    while (true) {
      byte[] baseKey = baseKey();
      Map.Entry<byte[], byte[]> head = overlayHead();
      byte[] overlayKey = head == null ? null : head.getKey();
      if (overlayKey != null && !beforeEnd(overlayKey)) {
        overlayKey = null;
      }
      if (baseKey == null && overlayKey == null) {
        return null;
      }
      int cmp =
          baseKey == null
              ? 1
              : overlayKey == null ? -1 : ByteKeys.ORDER.compare(baseKey, overlayKey);
      if (cmp < 0) {
        if (scanDeleted(baseKey)) { // deleted by this transaction, not in the map
          base.next();
          moveTo(baseKey);
          continue;
        }
        KeyValue kv = new KeyValue(baseKey, base.value());
        base.next();
        moveTo(baseKey);
        nextIsCommitted = true;
        nextFoundAtModification = changes.modifications();
        return kv;
      }
      byte[] value = head.getValue();
      if (cmp == 0) {
        base.next();
      }
      moveTo(overlayKey);
      if (value != Overlay.TOMBSTONE) {
        nextIsCommitted = false;
        return new KeyValue(overlayKey, value);
      }
    }
  }

  /**
   * The overlay's first entry after {@link #position}. While the overlay's entries after the
   * position are as they were when the head was found (no change, or one change at or before the
   * position: Spark's eviction deleting the key just returned), a known head stays, and once the
   * position moves past it the map iterator that found it takes one step, unless a key was added to
   * the map since (the iterator would fail); otherwise it is looked up again (O(log n) and a new
   * iterator). A window aggregation's eviction scan spent a tenth of a task's store time in one
   * {@code higherEntry} per overlay entry (issue 21 bench, section 25).
   */
  private Map.Entry<byte[], byte[]> overlayHead() {
    int modifications = changes.modifications();
    boolean unchangedAfterPosition =
        modifications == overlayHeadAtModification
            || (modifications == overlayHeadAtModification + 1
                && position != null
                && ByteKeys.ORDER.compare(changes.lastChangedKey(), position) <= 0);
    if (overlayHeadKnown && unchangedAfterPosition) {
      overlayHeadAtModification = modifications;
      return overlayHead;
    }
    if (!unchangedAfterPosition
        || overlayCursor == null
        || changes.insertions() != overlayCursorAtInsertions) {
      overlayCursor =
          (position == null ? overlay : overlay.tailMap(position, false)).entrySet().iterator();
      overlayCursorAtInsertions = changes.insertions();
    }
    // The position is the passed head's key (it moves past the head only onto it), so the
    // cursor's next entry is the first after the position.
    overlayHead = overlayCursor.hasNext() ? overlayCursor.next() : null;
    overlayHeadKnown = true;
    overlayHeadAtModification = modifications;
    return overlayHead;
  }

  /** Whether committed key {@code key}, not in the overlay's map, is one of its scan deletions. */
  private boolean scanDeleted(byte[] key) {
    int count = changes.deletedCount();
    if (count == 0 || ByteKeys.ORDER.compare(key, changes.deletedAt(count - 1)) > 0) {
      return false; // the common case while a scan deletes behind itself
    }
    deletedIndex = changes.firstDeletedAtOrAfter(deletedIndex, key);
    return deletedIndex < count && Arrays.equals(changes.deletedAt(deletedIndex), key);
  }

  private void moveTo(byte[] key) {
    position = key;
    if (overlayHead != null && ByteKeys.ORDER.compare(overlayHead.getKey(), key) <= 0) {
      overlayHeadKnown = false;
    }
  }

  private boolean beforeEnd(byte[] key) {
    return endExclusive == null || ByteKeys.ORDER.compare(key, endExclusive) < 0;
  }

  /** The committed entry's key, or null at the end (of the data or of the range). */
  private byte[] baseKey() {
    if (base == null || !base.isValid()) {
      return null;
    }
    byte[] key = base.key();
    return beforeEnd(key) ? key : null;
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
