package io.streamstate.spark;

import io.streamstate.core.engine.StateTransaction;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The exact number of keys of each column family, kept in the store itself (an internal column
 * family, written in the same commit as the changes it counts), so that Spark's {@code
 * numRowsTotal} is exact and survives restarts. Like Spark's RocksDB provider with {@code
 * trackTotalNumberOfRows} (its default), it costs one read per put or remove of a key the
 * transaction has not seen yet (a key it read, or an iterator just returned, is known).
 *
 * <p>Also whether Spark declared each family internal ({@code createColFamilyIfAbsent(...,
 * isInternal = true)}, e.g. a join's key-to-count index with state format 3): as in Spark's RocksDB
 * provider, {@code numRowsTotal} counts the keys of the other families only, and the internal ones
 * are reported apart ({@link Totals}). The flag is stored with the count, so it survives restarts
 * like Spark's column family metadata does.
 */
final class RowCounts {
  /**
   * The internal family: family name (UTF-8) to its key count (8 bytes, big-endian), followed by
   * one byte {@link #INTERNAL_FLAG} for a family Spark declared internal (absent: not internal; a
   * reader that knows only the count reads the first 8 bytes).
   */
  static final String FAMILY = "_streamstate_row_counts";

  private static final byte INTERNAL_FLAG = 1;

  /**
   * What the metrics report of a version: keys of Spark's non-internal families ({@code
   * numRowsTotal}), keys of its internal families, and how many families of each kind there are
   * ({@code default} among the non-internal ones), as Spark's RocksDB provider counts them.
   */
  record Totals(long keys, long internalKeys, long externalFamilies, long internalFamilies) {}

  private final StateTransaction tx;

  /** Per family, the keys this transaction added (negative: removed), in a mutable holder. */
  private final Map<String, long[]> deltas = new HashMap<>();

  /**
   * The family counted last and its holder: a task puts into one family at a time, and a map lookup
   * and a boxed {@code Long} per put were a visible part of a put's time (issue 21 bench, section
   * 25).
   */
  private String lastFamily;

  private long[] lastDelta;

  /** Families dropped (and maybe re-created) in this transaction: their stored count is void. */
  private final Set<String> reset = new HashSet<>();

  /** Families whose internal flag this transaction changes, to the new flag. */
  private final Map<String, Boolean> internalChanges = new HashMap<>();

  RowCounts(StateTransaction tx) {
    this.tx = tx;
  }

  static boolean isInternal(String family) {
    return FAMILY.equals(family);
  }

  /**
   * Puts {@code key} into the transaction, counting it if it is new. Both arrays go to the
   * transaction as they are: the caller made them for this put and must not use them again.
   */
  void put(String family, byte[] key, byte[] value) {
    if (!tx.putOwnedAndCheckExisted(family, key, value)) {
      add(family, 1);
    }
  }

  /** Deletes {@code key} from the transaction, counting it if it existed. */
  void delete(String family, byte[] key) {
    if (tx.deleteAndCheckExisted(family, key)) {
      add(family, -1);
    }
  }

  /** A key known to exist is being deleted. */
  void deletingExisting(String family) {
    add(family, -1);
  }

  /** A key known to be absent is being put. */
  void puttingNew(String family) {
    add(family, 1);
  }

  void dropped(String family) {
    deltas.remove(family);
    lastFamily = null;
    internalChanges.remove(family);
    reset.add(family);
  }

  /** Spark created or re-declared {@code family}, internal or not. */
  void declared(String family, boolean internal) {
    if (isInternalFamily(family) != internal) {
      internalChanges.put(family, internal);
    }
  }

  /** Keys of Spark's non-internal families ({@code numRowsTotal}), with this transaction's. */
  long total() {
    return totals().keys();
  }

  /** All the counts, with this transaction's changes. */
  Totals totals() {
    long keys = 0;
    long internalKeys = 0;
    long externalFamilies = 0;
    long internalFamilies = 0;
    for (String family : tx.columnFamilies()) {
      if (isInternal(family)) {
        continue;
      }
      if (isInternalFamily(family)) {
        internalKeys += count(family);
        internalFamilies++;
      } else {
        keys += count(family);
        externalFamilies++;
      }
    }
    return new Totals(keys, internalKeys, externalFamilies, internalFamilies);
  }

  /** Writes the changed counts into the transaction; call just before commit. */
  void flush() {
    if (deltas.isEmpty() && reset.isEmpty() && internalChanges.isEmpty()) {
      return;
    }
    if (!tx.columnFamilies().contains(FAMILY)) {
      tx.createColumnFamily(FAMILY);
    }
    Set<String> changed = new HashSet<>(deltas.keySet());
    changed.addAll(reset);
    changed.addAll(internalChanges.keySet());
    for (String family : changed) {
      byte[] key = family.getBytes(StandardCharsets.UTF_8);
      if (tx.columnFamilies().contains(family)) {
        boolean internal = isInternalFamily(family);
        ByteBuffer value = ByteBuffer.allocate(internal ? 9 : 8).putLong(count(family));
        if (internal) {
          value.put(INTERNAL_FLAG);
        }
        tx.put(FAMILY, key, value.array());
      } else {
        tx.delete(FAMILY, key);
      }
    }
    // The transaction now holds the new counts and flags: nothing is pending any more.
    deltas.clear();
    lastFamily = null;
    reset.clear();
    internalChanges.clear();
  }

  private long count(String family) {
    long stored = reset.contains(family) ? 0 : storedCount(stored(family));
    long[] delta = deltas.get(family);
    return stored + (delta == null ? 0 : delta[0]);
  }

  private boolean isInternalFamily(String family) {
    Boolean changed = internalChanges.get(family);
    if (changed != null) {
      return changed;
    }
    return !reset.contains(family) && storedInternal(stored(family));
  }

  private static long storedCount(byte[] value) {
    return value == null ? 0 : ByteBuffer.wrap(value).getLong();
  }

  private static boolean storedInternal(byte[] value) {
    return value != null && value.length > 8 && value[8] == INTERNAL_FLAG;
  }

  private byte[] stored(String family) {
    if (!tx.columnFamilies().contains(FAMILY)) {
      return null;
    }
    return tx.get(FAMILY, family.getBytes(StandardCharsets.UTF_8));
  }

  private void add(String family, long n) {
    if (family != lastFamily) {
      lastDelta = deltas.computeIfAbsent(family, f -> new long[1]);
      lastFamily = family;
    }
    lastDelta[0] += n;
  }
}
