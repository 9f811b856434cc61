package io.streamstate.cli.deep;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.Storage;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * The RocksDB side of {@code verify --deep}: one store of streamstate's provider rebuilt at a
 * version in a scratch RocksDB by core's own loader ({@link VersionedStore#begin}: the lineage from
 * its base snapshot, every changelog replayed), then every column family's keys counted and
 * compared with the counts the provider records in the store itself. The only classes of the
 * command that load RocksDB (rocksdbjni from {@code $SPARK_HOME/jars}); nothing is written to the
 * checkpoint (the transaction is aborted).
 */
public final class StoreRebuild {
  /**
   * The internal column family in which the spark adapter's {@code RowCounts} records each family's
   * key count, in the same commit as the changes it counts: key the family name (UTF-8), value the
   * count (8 bytes, big-endian) and an optional flag byte. The name and layout are {@code
   * io.streamstate.spark.RowCounts.FAMILY}'s.
   */
  public static final String ROW_COUNTS_FAMILY = "_streamstate_row_counts";

  private static final long SCRATCH_MEMORY_BYTES = 64L << 20;

  private StoreRebuild() {}

  /**
   * What the rebuild found: per family (not the row counts family) the keys counted and the count
   * recorded ({@code null} where none is: a store written before counts were kept, or by Spark's
   * provider through ours without counts).
   */
  public record Result(Map<String, Long> counted, Map<String, Long> recorded) {
    /** The families whose counted keys differ from a recorded count. */
    public Map<String, long[]> mismatches() {
      Map<String, long[]> m = new TreeMap<>();
      counted.forEach(
          (family, n) -> {
            Long r = recorded.get(family);
            if (r != null && r.longValue() != n) {
              m.put(family, new long[] {n, r});
            }
          });
      recorded.forEach(
          (family, r) -> {
            if (!counted.containsKey(family) && r != 0) {
              m.put(family, new long[] {0, r});
            }
          });
      return m;
    }

    /** Whether the store records counts at all. */
    public boolean hasRecordedCounts() {
      return !recorded.isEmpty();
    }

    /** The keys counted in every family. */
    public long rows() {
      return counted.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  /**
   * Rebuilds the store at {@code prefix} of {@code stateStorage} at {@code version} (commit {@code
   * commitId} when the commit log names one) in {@code scratch}, and counts.
   *
   * @throws io.streamstate.core.error.StreamStateException the version cannot be loaded
   */
  public static Result rebuild(
      ProcessResources resources,
      Storage stateStorage,
      String name,
      String prefix,
      long version,
      OptionalLong commitId,
      Path scratch) {
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(SCRATCH_MEMORY_BYTES);
        VersionedStore store =
            VersionedStore.builder(name, stateStorage)
                .prefix(prefix)
                .localDir(scratch)
                .memoryBudget(budget)
                .resources(resources)
                .open()) {
      StateTransaction tx = store.begin(version, commitId);
      try {
        Map<String, Long> counted = new TreeMap<>();
        Map<String, Long> recorded = new TreeMap<>();
        for (String family : tx.columnFamilies()) {
          if (family.equals(ROW_COUNTS_FAMILY)) {
            try (CloseableIterator<KeyValue> it = tx.iterator(family)) {
              while (it.hasNext()) {
                KeyValue kv = it.next();
                if (kv.value().length >= 8) {
                  recorded.put(
                      new String(kv.key(), StandardCharsets.UTF_8),
                      ByteBuffer.wrap(kv.value(), 0, 8).getLong());
                }
              }
            }
            continue;
          }
          long n = 0;
          try (CloseableIterator<KeyValue> it = tx.iterator(family)) {
            while (it.hasNext()) {
              it.next();
              n++;
            }
          }
          counted.put(family, n);
        }
        return new Result(counted, recorded);
      } finally {
        tx.abort();
      }
    }
  }
}
