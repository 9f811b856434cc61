package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import io.streamstate.core.format.Changelog;
import java.util.Arrays;
import java.util.List;

/**
 * One column family's committed entries, held in the heap beside RocksDB while they fit {@link
 * HeapMirrorBudget}: reads and scans of a small store then cost an array step, not a call into
 * RocksDB (whose iterator steps over every older version and tombstone its memtable still holds).
 * RocksDB stays the local engine: what snapshots, restores and recovery read.
 *
 * <p>Exact or absent, never partial: made empty with a new family or from a scan of the whole
 * family that no apply interrupted ({@link LocalDb#newIterator}), changed by every apply (RocksDB
 * takes the same changes then, or later as a {@link WriteLag}'s difference), dropped (and its bytes
 * given back) once it outgrows the budget. Keys and values are the changelog's own arrays: nothing
 * changes them after a commit, and readers do not write into what they are given (Spark's
 * HDFS-backed provider hands out its map's own rows too).
 *
 * <p>Two sorted arrays, not a tree: a commit's changes come in key order, so an apply is one merge
 * (a pass over the entries, reference copies), where a tree pays a search per change; a scan starts
 * with a binary search. A point lookup (each read, and each put's "did it exist?") goes through a
 * hash table of positions built with each published version from the entries' key hashes, kept
 * beside the keys and merged with them, so that only new keys are hashed: a binary search of a
 * 25,000-key partition was about 17 comparisons, each a cache miss into another key (issue 21
 * bench, section 25). One writer at a time (a scan building it, then the applies, under its
 * instance's lock); readers see whole versions only: each apply publishes new arrays through one
 * volatile reference ({@link Entries}), never changes published ones.
 */
final class HeapMirror {
  /**
   * Heap per entry beyond its key's and value's bytes: two array headers and two references (48),
   * its key's hash and up to three slots of the hash table (16).
   */
  static final long ENTRY_OVERHEAD = 64;

  private static final byte[][] NONE = new byte[0][];

  private static final int[] NO_HASHES = new int[0];

  private final HeapMirrorBudget budget;

  /** The writer's arrays: those published, or, while a scan builds the mirror, growing. */
  private byte[][] keys = NONE;

  private byte[][] values = NONE;

  /** Each key's {@link #hashOf}, at the key's position. */
  private int[] hashes = NO_HASHES;

  private int size;

  /** What readers see: the last version applied (or built and published). */
  private volatile Entries published = Entries.EMPTY;

  /** Bytes charged to the budget for this mirror. */
  private long bytes;

  /** Why the last {@link #append} or {@link #apply} refused, or null. */
  private Refusal refusal;

  /** Why a mirror could not take what it was given. */
  enum Refusal {
    /** The family is larger than one mirror may be: it stays in RocksDB until it shrinks. */
    FAMILY_TOO_LARGE,
    /** The process's mirrors hold the whole budget now. */
    BUDGET_FULL,
    /** Keys out of order. */
    OUT_OF_ORDER
  }

  HeapMirror(HeapMirrorBudget budget) {
    this.budget = budget;
  }

  static long entryBytes(byte[] key, byte[] value) {
    return key.length + value.length + ENTRY_OVERHEAD;
  }

  byte[] get(byte[] key) {
    return published.get(key);
  }

  boolean contains(byte[] key) {
    return published.find(key) >= 0;
  }

  /** Makes what a scan built visible to readers, before the mirror is handed out. */
  void publish() {
    published = new Entries(keys, values, size, hashes, tableOf(hashes, size));
  }

  /** A key's hash in the table. */
  static int hashOf(byte[] key) {
    long h = ByteKeys.hash64(key);
    return (int) (h ^ (h >>> 32));
  }

  /**
   * An open-addressing table (linear probing) of positions plus one (0: empty) by {@code hashes},
   * its size the smallest power of two that gives each entry at least 1.5 slots.
   */
  private static int[] tableOf(int[] hashes, int size) {
    int slots = Integer.highestOneBit(Math.max(2, size + (size >> 1)) - 1) << 1;
    int[] table = new int[slots];
    int mask = slots - 1;
    for (int i = 0; i < size; i++) {
      int slot = hashes[i] & mask;
      while (table[slot] != 0) {
        slot = (slot + 1) & mask;
      }
      table[slot] = i + 1;
    }
    return table;
  }

  /**
   * Appends an entry whose key is above every key held (a scan's next entry); false (nothing
   * charged) if it is not, or the budget has no room: give up on this mirror.
   */
  boolean append(byte[] key, byte[] value) {
    if (size > 0 && ByteKeys.ORDER.compare(keys[size - 1], key) >= 0) {
      return refuse(Refusal.OUT_OF_ORDER);
    }
    long delta = entryBytes(key, value);
    if (!charge(delta)) {
      return false;
    }
    if (size == keys.length) {
      int capacity = Math.max(16, size * 2);
      keys = Arrays.copyOf(keys, capacity);
      values = Arrays.copyOf(values, capacity);
      hashes = Arrays.copyOf(hashes, capacity);
    }
    keys[size] = key;
    values[size] = value;
    hashes[size] = hashOf(key);
    size++;
    return true;
  }

  /**
   * Applies one family's changes of a version, in strictly ascending key order (a value of null: a
   * deletion); false (the mirror unchanged, nothing charged) if they are not in that order or the
   * result does not fit the budget: drop this mirror.
   */
  boolean apply(List<Changelog.Change> changes) {
    if (changes.isEmpty()) {
      return true;
    }
    int capacity = size + changes.size();
    byte[][] newKeys = new byte[capacity][];
    byte[][] newValues = new byte[capacity][];
    int[] newHashes = new int[capacity];
    int n = 0;
    int i = 0;
    long delta = 0;
    byte[] previous = null;
    for (Changelog.Change c : changes) {
      byte[] key = c.key();
      int at = search(key, i);
      int below = at >= 0 ? at : -at - 1;
      // Every old key from i on is above the previous change. So a key found there, or one that
      // goes in after one of them, is above it too; only a new key going in right at i may not be.
      if (at < 0 && below == i && previous != null && ByteKeys.ORDER.compare(previous, key) >= 0) {
        return refuse(Refusal.OUT_OF_ORDER);
      }
      previous = key;
      System.arraycopy(keys, i, newKeys, n, below - i);
      System.arraycopy(values, i, newValues, n, below - i);
      System.arraycopy(hashes, i, newHashes, n, below - i);
      n += below - i;
      i = below;
      int hash = 0;
      if (at >= 0) {
        delta -= entryBytes(keys[i], values[i]);
        hash = hashes[i];
        i++;
      }
      if (!c.isDelete()) {
        newKeys[n] = key;
        newValues[n] = c.value();
        newHashes[n] = at >= 0 ? hash : hashOf(key);
        delta += entryBytes(key, c.value());
        n++;
      }
    }
    System.arraycopy(keys, i, newKeys, n, size - i);
    System.arraycopy(values, i, newValues, n, size - i);
    System.arraycopy(hashes, i, newHashes, n, size - i);
    n += size - i;
    if (!charge(delta)) {
      return false;
    }
    keys = newKeys;
    values = newValues;
    hashes = newHashes;
    size = n;
    publish();
    return true;
  }

  /** Charges {@code delta} bytes (gives back a negative one); false if the budget refuses. */
  private boolean charge(long delta) {
    if (delta > 0) {
      if (bytes + delta > budget.familyCapBytes()) {
        return refuse(Refusal.FAMILY_TOO_LARGE);
      }
      if (!budget.tryCharge(delta)) {
        return refuse(Refusal.BUDGET_FULL);
      }
    } else if (delta < 0) {
      budget.release(-delta);
    }
    bytes += delta;
    return true;
  }

  private boolean refuse(Refusal why) {
    refusal = why;
    return false;
  }

  /** Why the last {@link #append} or {@link #apply} returned false. */
  Refusal refusal() {
    return refusal;
  }

  /**
   * Where {@code key} is among the keys from {@code from} on, as {@link Arrays#binarySearch}
   * answers: galloping first, since a commit's changes tend to fall close together.
   */
  private int search(byte[] key, int from) {
    int low = from;
    int step = 1;
    while (low < size) {
      int probe = Math.min(size - 1, from + step - 1);
      int cmp = ByteKeys.ORDER.compare(keys[probe], key);
      if (cmp == 0) {
        return probe;
      }
      if (cmp > 0) {
        return Arrays.binarySearch(keys, low, probe, key, ByteKeys.ORDER);
      }
      low = probe + 1;
      step <<= 1;
    }
    return -size - 1;
  }

  /** The entries as last published: later applies replace the arrays, never change them. */
  Entries entries() {
    return published;
  }

  /**
   * The mirror's entries at one version, by position, with their keys' hashes and a table of
   * positions by hash ({@link #tableOf}) for point lookups.
   */
  record Entries(byte[][] keys, byte[][] values, int size, int[] hashes, int[] table) {
    static final Entries EMPTY = new Entries(NONE, NONE, 0);

    /** Entries without a hash table: point lookups search ({@link #EMPTY}, tests). */
    Entries(byte[][] keys, byte[][] values, int size) {
      this(keys, values, size, null, null);
    }

    /** Where {@code key} is, as {@link Arrays#binarySearch} answers. */
    int indexOfKey(byte[] key) {
      return Arrays.binarySearch(keys, 0, size, key, ByteKeys.ORDER);
    }

    /** Where {@code key} is, or a negative number if it is not here. */
    int find(byte[] key) {
      if (table == null) {
        return indexOfKey(key);
      }
      int hash = hashOf(key);
      int mask = table.length - 1;
      for (int slot = hash & mask; ; slot = (slot + 1) & mask) {
        int position = table[slot] - 1;
        if (position < 0) {
          return -1;
        }
        if (hashes[position] == hash && Arrays.equals(keys[position], key)) {
          return position;
        }
      }
    }

    byte[] get(byte[] key) {
      int i = find(key);
      return i >= 0 ? values[i] : null;
    }

    /** The position of the first key at or above {@code from} (null: the first). */
    int indexOf(byte[] from) {
      if (from == null) {
        return 0;
      }
      int at = indexOfKey(from);
      return at >= 0 ? at : -at - 1;
    }
  }

  int size() {
    return size;
  }

  long bytes() {
    return bytes;
  }

  /** Gives the bytes back; the mirror is not used again. */
  void release() {
    budget.release(bytes);
    bytes = 0;
    keys = NONE;
    values = NONE;
    hashes = NO_HASHES;
    size = 0;
    publish();
  }
}
