package io.streamstate.core.engine;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * A transaction's uncommitted changes to one column family. Until someone needs them in key order
 * (an iterator, a scan deletion), they wait unsorted in a hash table ({@link PendingChanges}):
 * Spark reads and writes state by key for every row and asks for order once a batch, at its
 * eviction scan, or not before the commit. The first ordered pass sorts them ({@link
 * ByteKeys#sortedOrder}) into a {@link TreeMap}, which takes every change from then on: an iterator
 * over it is a live view (callers change keys while iterating). {@link MergingIterator} steps an
 * iterator of the tree only while no key was added to it ({@link #insertions}), and otherwise looks
 * its next entry up again, so a plain {@link TreeMap} does; a single thread uses it. Every change
 * goes through {@link #put} or {@link #appendDeleted}, which count it.
 *
 * <p>Beside the tree, the <em>scan deletions</em>: committed keys deleted right after a forward
 * scan returned them, nothing having changed since, each greater than the one before (Spark's
 * eviction removes expired keys that way, a quarter of a 10M-key store in one batch). They are
 * appended to a sorted array instead of inserted into the tree (each insertion a walk down the
 * tree, its byte comparisons and a rebalance). A change in the tree wins over a scan deletion (a
 * key put again).
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  /** The changes in key order, once an ordered pass was asked for; empty before. */
  private final TreeMap<byte[], byte[]> changes = new TreeMap<>(ByteKeys.ORDER);

  /** Every change while no ordered pass was asked for; null after (the tree has them). */
  private PendingChanges pending = new PendingChanges();

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  /** Changes made so far (the transaction's thread only). */
  private int modifications;

  /**
   * Changes that added a key, to the pending changes or the tree (the others replaced a value or
   * were appended).
   */
  private int insertions;

  /** The key of the newest change. */
  private byte[] lastChangedKey;

  /** The scan deletions, in key order: {@code deleted[0, deletedCount)}. */
  private byte[][] deleted = new byte[0][];

  private int deletedCount;

  /** Scan deletions that also have a change in {@link #changes} (put or deleted again). */
  private int deletedChangedAgain;

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }

  /**
   * The change recorded for {@code key}: its value, {@link #TOMBSTONE} if it was deleted, null if
   * this transaction did not change it.
   */
  byte[] get(byte[] key) {
    // No scan deletion before an ordered pass: scanDeleted answers at once then.
    byte[] value = pending != null ? pending.get(key) : changes.get(key);
    return value == null && scanDeleted(key) ? TOMBSTONE : value;
  }

  /** Records {@code value} (or {@link #TOMBSTONE}) for {@code key}; returns the previous change. */
  byte[] put(byte[] key, byte[] value) {
    modifications++;
    lastChangedKey = key;
    byte[] previous = pending != null ? pending.put(key, value) : changes.put(key, value);
    if (previous == null) {
      insertions++;
    }
    if (previous == null && scanDeleted(key)) {
      deletedChangedAgain++;
      return TOMBSTONE;
    }
    return previous;
  }

  /**
   * Deletes {@code key}, a committed key that a scan returned with no change made here since (so
   * neither the changes nor the scan deletions hold it), by appending it to the scan deletions if
   * it is greater than every key there. Returns false, having done nothing, if it is not: the
   * caller then deletes it as any key.
   */
  boolean appendDeleted(byte[] key) {
    ordered(); // a scan's deletions are in key order, as the tree
    if (hidesCommitted
        || (deletedCount > 0 && ByteKeys.ORDER.compare(key, deleted[deletedCount - 1]) <= 0)) {
      return false;
    }
    if (deletedCount == deleted.length) {
      deleted = Arrays.copyOf(deleted, Math.max(16, deletedCount + (deletedCount >> 1)));
    }
    deleted[deletedCount++] = key;
    modifications++;
    lastChangedKey = key;
    return true;
  }

  /** Whether {@code key} is a scan deletion (whatever {@link #changes} says of it). */
  boolean scanDeleted(byte[] key) {
    if (deletedCount == 0
        || ByteKeys.ORDER.compare(key, deleted[0]) < 0
        || ByteKeys.ORDER.compare(key, deleted[deletedCount - 1]) > 0) {
      return false;
    }
    return Arrays.binarySearch(deleted, 0, deletedCount, key, ByteKeys.ORDER) >= 0;
  }

  /**
   * The index of the first scan deletion {@code >= key}, searched from {@code from}, a lower bound
   * of it ({@link #deletedCount()} if none): an iterator moving forward passes its last answer, and
   * the few steps it usually moves are taken one by one.
   */
  int firstDeletedAtOrAfter(int from, byte[] key) {
    int i = from;
    for (int steps = 0; i < deletedCount && steps < 8; i++, steps++) {
      if (ByteKeys.ORDER.compare(deleted[i], key) >= 0) {
        return i;
      }
    }
    if (i >= deletedCount) {
      return deletedCount;
    }
    int found = Arrays.binarySearch(deleted, i, deletedCount, key, ByteKeys.ORDER);
    return found >= 0 ? found : -found - 1;
  }

  /** The scan deletion at {@code index} (below {@link #deletedCount()}). */
  byte[] deletedAt(int index) {
    return deleted[index];
  }

  int deletedCount() {
    return deletedCount;
  }

  /** How many keys this transaction changed. */
  long size() {
    return (pending == null ? 0L : pending.size())
        + changes.size()
        + deletedCount
        - deletedChangedAgain;
  }

  boolean isEmpty() {
    return size() == 0;
  }

  /**
   * Every changed key in key order with its value ({@link #TOMBSTONE} for a deletion): the map's
   * changes and the scan deletions, the map's where both hold a key.
   */
  void forEachChange(BiConsumer<byte[], byte[]> action) {
    if (pending != null) {
      // No ordered pass before: sorted here, without building the tree.
      int[] order = pendingInOrder();
      for (int index : order) {
        action.accept(pending.keys()[index], pending.valueAt(index));
      }
      return;
    }
    Iterator<Map.Entry<byte[], byte[]>> mapped = changes.entrySet().iterator();
    Map.Entry<byte[], byte[]> head = mapped.hasNext() ? mapped.next() : null;
    for (int i = 0; i < deletedCount; i++) {
      byte[] key = deleted[i];
      boolean changedAgain = false;
      while (head != null) {
        int cmp = ByteKeys.ORDER.compare(head.getKey(), key);
        if (cmp > 0) {
          break;
        }
        action.accept(head.getKey(), head.getValue());
        changedAgain |= cmp == 0;
        head = mapped.hasNext() ? mapped.next() : null;
      }
      if (!changedAgain) {
        action.accept(key, TOMBSTONE);
      }
    }
    while (head != null) {
      action.accept(head.getKey(), head.getValue());
      head = mapped.hasNext() ? mapped.next() : null;
    }
  }

  /**
   * The changes in key order (the scan deletions aside), a live view: the first call sorts the
   * pending changes into the tree, which takes every change from then on.
   */
  NavigableMap<byte[], byte[]> ordered() {
    if (pending != null) {
      int[] order = pendingInOrder();
      changes.putAll(new SortedChanges(pending, order));
      pending = null;
    }
    return changes;
  }

  /** The indices of the pending changes in key order. */
  private int[] pendingInOrder() {
    return ByteKeys.sortedOrder(pending.keys(), pending.size());
  }

  /**
   * Pending changes in key order as a sorted map, so that {@link TreeMap#putAll} into an empty tree
   * builds it in one linear pass (its {@code buildFromSorted}, taken for a sorted map with the
   * tree's comparator) instead of one insertion per key. Should the tree insert one by one, it is
   * slower, not wrong. Only what {@code putAll} reads is implemented.
   */
  private static final class SortedChanges extends AbstractMap<byte[], byte[]>
      implements SortedMap<byte[], byte[]> {
    private final PendingChanges pending;
    private final int[] order;

    SortedChanges(PendingChanges pending, int[] order) {
      this.pending = pending;
      this.order = order;
    }

    @Override
    public Comparator<? super byte[]> comparator() {
      return ByteKeys.ORDER;
    }

    @Override
    public int size() {
      return order.length;
    }

    @Override
    public Set<Map.Entry<byte[], byte[]>> entrySet() {
      return new AbstractSet<>() {
        @Override
        public int size() {
          return order.length;
        }

        @Override
        public Iterator<Map.Entry<byte[], byte[]>> iterator() {
          return new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
              return next < order.length;
            }

            @Override
            public Map.Entry<byte[], byte[]> next() {
              if (next >= order.length) {
                throw new NoSuchElementException();
              }
              int index = order[next++];
              return new AbstractMap.SimpleImmutableEntry<>(
                  pending.keys()[index], pending.valueAt(index));
            }
          };
        }
      };
    }

    @Override
    public SortedMap<byte[], byte[]> subMap(byte[] fromKey, byte[] toKey) {
      throw new UnsupportedOperationException();
    }

    @Override
    public SortedMap<byte[], byte[]> headMap(byte[] toKey) {
      throw new UnsupportedOperationException();
    }

    @Override
    public SortedMap<byte[], byte[]> tailMap(byte[] fromKey) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte[] firstKey() {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte[] lastKey() {
      throw new UnsupportedOperationException();
    }
  }

  /** The key of the newest change, or null before any; not to be changed by the caller. */
  byte[] lastChangedKey() {
    return lastChangedKey;
  }

  /**
   * How many changes added a key (to the pending changes or the tree): an iterator of the tree
   * (which fails on such a change, not on a replaced value) is valid while this is unchanged.
   */
  int insertions() {
    return insertions;
  }

  /** How many changes were made so far: an iterator's cached position is valid while unchanged. */
  int modifications() {
    return modifications;
  }
}
