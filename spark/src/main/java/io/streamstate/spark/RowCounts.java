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
 */
final class RowCounts {
  /** The internal family: family name (UTF-8) to its key count (8 bytes, big-endian). */
  static final String FAMILY = "_streamstate_row_counts";

  private final StateTransaction tx;
  private final Map<String, Long> deltas = new HashMap<>();

  /** Families dropped (and maybe re-created) in this transaction: their stored count is void. */
  private final Set<String> reset = new HashSet<>();

  RowCounts(StateTransaction tx) {
    this.tx = tx;
  }

  static boolean isInternal(String family) {
    return FAMILY.equals(family);
  }

  /** Puts {@code key} into the transaction, counting it if it is new. */
  void put(String family, byte[] key, byte[] value) {
    if (!tx.putAndCheckExisted(family, key, value)) {
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
    reset.add(family);
  }

  /** Keys of all user families, counting this transaction's changes. */
  long total() {
    long total = 0;
    for (String family : tx.columnFamilies()) {
      if (!isInternal(family)) {
        total += count(family);
      }
    }
    return total;
  }

  /** Writes the changed counts into the transaction; call just before commit. */
  void flush() {
    if (deltas.isEmpty() && reset.isEmpty()) {
      return;
    }
    if (!tx.columnFamilies().contains(FAMILY)) {
      tx.createColumnFamily(FAMILY);
    }
    Set<String> changed = new HashSet<>(deltas.keySet());
    changed.addAll(reset);
    for (String family : changed) {
      byte[] key = family.getBytes(StandardCharsets.UTF_8);
      if (tx.columnFamilies().contains(family)) {
        tx.put(FAMILY, key, ByteBuffer.allocate(8).putLong(count(family)).array());
      } else {
        tx.delete(FAMILY, key);
      }
    }
    // The transaction now holds the new counts: nothing is pending any more.
    deltas.clear();
    reset.clear();
  }

  private long count(String family) {
    long stored = reset.contains(family) ? 0 : stored(family);
    return stored + deltas.getOrDefault(family, 0L);
  }

  private long stored(String family) {
    if (!tx.columnFamilies().contains(FAMILY)) {
      return 0;
    }
    byte[] value = tx.get(FAMILY, family.getBytes(StandardCharsets.UTF_8));
    return value == null ? 0 : ByteBuffer.wrap(value).getLong();
  }

  private void add(String family, long n) {
    deltas.merge(family, n, Long::sum);
  }
}
