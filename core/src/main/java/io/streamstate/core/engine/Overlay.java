package io.streamstate.core.engine;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * A transaction's uncommitted changes to one column family, in key order. Callers change keys while
 * iterating: {@link MergingIterator} never holds an iterator of this map across a change, it looks
 * its next entry up again ({@code higherEntry}) once the count of changes moved, so a plain {@link
 * TreeMap} does (a concurrent skip list cost about a tenth of a window aggregation's task time in
 * its puts, issue 21); a single thread uses it. Every change of {@link #changes} goes through
 * {@link #put}, which counts it.
 *
 * <p>Beside the map, <em>deleted runs</em>: committed keys that a scan returned one after another
 * and that were deleted each as it was returned (Spark's eviction deletes the oldest keys of a
 * store that way, a quarter of a 10M-key store in one batch). Such a key is appended to its run, in
 * key order, instead of inserted into the map (each insertion a walk down the tree and its byte
 * comparisons: a seventh of the eviction batch's task samples); and every key between a run's first
 * and last is deleted, because the scan stepped over nothing live between two it returned. A change
 * in the map wins over a run (a key put again after its deletion). The commit writes a long run to
 * the local instance as one range deletion (see {@link #forEachLongRun}).
 */
final class Overlay {
  /** Marks a deleted key; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];

  /** Runs shorter than this are applied locally as a tombstone a key: few are worth a range. */
  static final int MIN_RANGE_KEYS = 128;

  final TreeMap<byte[], byte[]> changes = new TreeMap<>(ByteKeys.ORDER);

  /** True when committed data must be ignored: the family was created or re-created here. */
  final boolean hidesCommitted;

  /** Changes made to {@link #changes} so far (the transaction's thread only). */
  private int modifications;

  /** The key of the newest change to {@link #changes}. */
  private byte[] lastChangedKey;

  /** The deleted runs by their first key; they do not overlap. */
  private final TreeMap<byte[], DeletedRun> runs = new TreeMap<>(ByteKeys.ORDER);

  /** The run the next deletion of a returned key may extend. */
  private DeletedRun openRun;

  /** Keys in runs, and how many of them have a change in {@link #changes} as well. */
  private long runKeys;

  private long runKeysChangedAgain;

  /** Committed keys deleted as one scan returned them, consecutive in that scan. */
  private static final class DeletedRun {
    final List<byte[]> keys = new ArrayList<>();

    /** The scan that returned them, and the step at which it returned the last. */
    final Object scan;

    long lastStep;

    DeletedRun(Object scan) {
      this.scan = scan;
    }

    byte[] last() {
      return keys.get(keys.size() - 1);
    }
  }

  Overlay(boolean hidesCommitted) {
    this.hidesCommitted = hidesCommitted;
  }

  /**
   * The change recorded for {@code key}: its value, {@link #TOMBSTONE} if it was deleted, null if
   * this transaction did not change it.
   */
  byte[] get(byte[] key) {
    byte[] value = changes.get(key);
    return value == null && inRun(key) ? TOMBSTONE : value;
  }

  /** Records {@code value} (or {@link #TOMBSTONE}) for {@code key}; returns the previous change. */
  byte[] put(byte[] key, byte[] value) {
    modifications++;
    lastChangedKey = key;
    byte[] previous = changes.put(key, value);
    if (previous == null && inRun(key)) {
      runKeysChangedAgain++;
      return TOMBSTONE;
    }
    return previous;
  }

  /**
   * Deletes {@code key}, a committed key that scan {@code scan} returned at step {@code step}, by
   * extending that scan's run when {@code key} is the next key it returned after the run's last,
   * else by starting a run. Does nothing and returns false when {@code key} has a change or lies in
   * a run (the caller then deletes it as any key): it must still be the committed key as returned.
   */
  boolean deleteReturned(byte[] key, Object scan, long step) {
    if (hidesCommitted || changes.containsKey(key) || inRun(key)) {
      return false;
    }
    DeletedRun run = openRun;
    if (run != null && run.scan == scan && run.lastStep == step - 1 && noRunBetween(run, key)) {
      run.keys.add(key);
    } else {
      run = new DeletedRun(scan);
      run.keys.add(key);
      runs.put(key, run);
      openRun = run;
    }
    run.lastStep = step;
    runKeys++;
    return true;
  }

  /** Whether no other run starts between {@code run}'s last key and {@code key}. */
  private boolean noRunBetween(DeletedRun run, byte[] key) {
    byte[] next = runs.higherKey(run.last());
    return next == null || ByteKeys.ORDER.compare(next, key) > 0;
  }

  /** Whether {@code key} lies in a deleted run (whatever {@link #changes} says of it). */
  boolean inRun(byte[] key) {
    if (runs.isEmpty()) {
      return false;
    }
    Map.Entry<byte[], DeletedRun> floor = runs.floorEntry(key);
    return floor != null && ByteKeys.ORDER.compare(key, floor.getValue().last()) <= 0;
  }

  /** How many keys this transaction changed. */
  long size() {
    return changes.size() + runKeys - runKeysChangedAgain;
  }

  boolean isEmpty() {
    return size() == 0;
  }

  /**
   * Every changed key in key order with its value ({@link #TOMBSTONE} for a deletion): the changes
   * of the map and the keys of the runs, the map's where both hold a key.
   */
  void forEachChange(BiConsumer<byte[], byte[]> action) {
    Iterator<Map.Entry<byte[], byte[]>> mapped = changes.entrySet().iterator();
    Map.Entry<byte[], byte[]> head = mapped.hasNext() ? mapped.next() : null;
    for (DeletedRun run : runs.values()) {
      for (byte[] key : run.keys) {
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
    }
    while (head != null) {
      action.accept(head.getKey(), head.getValue());
      head = mapped.hasNext() ? mapped.next() : null;
    }
  }

  /**
   * The first and last key of each run of at least {@link #MIN_RANGE_KEYS} keys, in key order:
   * ranges in which every key the committed state holds is deleted or changed again.
   */
  void forEachLongRun(BiConsumer<byte[], byte[]> action) {
    for (DeletedRun run : runs.values()) {
      if (run.keys.size() >= MIN_RANGE_KEYS) {
        action.accept(run.keys.get(0), run.last());
      }
    }
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
