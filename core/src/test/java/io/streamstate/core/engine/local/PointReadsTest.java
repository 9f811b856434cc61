package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.IndexType;
import org.rocksdb.LRUCache;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBufferManager;

/**
 * {@link PointReads} answers as RocksDB's own {@code get} does, whichever way the library answers a
 * "may exist" question: absent, deleted (a tombstone), in a memtable, in a file whose blocks are
 * not cached (RocksDB cannot tell without reading: the fallback), in a file of LocalDb's table
 * format, and values larger than a thread's buffer. (RocksDB 9.8 sometimes answers "exists, with
 * its value" with an empty value for a value larger than the memtable read right after its flush;
 * not reproducible here, CommitPathTest's 100 MB value finds it.)
 */
class PointReadsTest {
  @TempDir Path tmp;

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static final byte[] LARGE = filled(10_000, 7);
  private static final byte[] TEN_MB = filled(10 << 20, 3);

  private static final byte[] HUGE = filled((1 << 20) + 5, 9);

  private static byte[] filled(int length, int b) {
    byte[] out = new byte[length];
    Arrays.fill(out, (byte) b);
    return out;
  }

  /** Runs {@code body} on the instance in {@code dir} opened with {@code table}'s options. */
  private static void withDb(String table, Path dir, DbBody body) throws RocksDBException {
    RocksDB.loadLibrary();
    // LocalDb's memory budget at 32 MiB: one cache, memtables charged to it.
    try (LRUCache cache = new LRUCache(32L << 20, -1, false, 0.1);
        WriteBufferManager writeBuffers = new WriteBufferManager(16L << 20, cache)) {
      withDb(table, dir, cache, writeBuffers, body);
    }
  }

  private static void withDb(
      String table, Path dir, LRUCache cache, WriteBufferManager writeBuffers, DbBody body)
      throws RocksDBException {
    BlockBasedTableConfig tableConfig = new BlockBasedTableConfig();
    if (table.equals("no-block-cache")) {
      tableConfig.setNoBlockCache(true);
    } else if (table.equals("partitioned-index")) {
      // LocalDb's table format and cache.
      tableConfig
          .setBlockCache(cache)
          .setIndexType(IndexType.kTwoLevelIndexSearch)
          .setPartitionFilters(true)
          .setFilterPolicy(new BloomFilter(10, false))
          .setMetadataBlockSize(4096)
          .setCacheIndexAndFilterBlocks(true)
          .setPinL0FilterAndIndexBlocksInCache(true)
          .setPinTopLevelIndexAndFilter(true)
          .setFormatVersion(LocalDb.SST_FORMAT_VERSION);
    }
    try (ColumnFamilyOptions familyOptions =
            new ColumnFamilyOptions()
                .setTableFormatConfig(tableConfig)
                // LocalDb's memtables under a 32 MiB budget: values larger than a memtable.
                .setWriteBufferSize(table.equals("partitioned-index") ? 2L << 20 : 64L << 20);
        DBOptions dbOptions =
            new DBOptions().setCreateIfMissing(true).setWriteBufferManager(writeBuffers)) {
      List<ColumnFamilyHandle> handles = new ArrayList<>();
      try (RocksDB db =
          RocksDB.open(
              dbOptions,
              dir.toString(),
              List.of(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, familyOptions)),
              handles)) {
        try {
          body.run(db, handles.get(0));
        } finally {
          handles.get(0).close();
        }
      }
    }
  }

  interface DbBody {
    void run(RocksDB db, ColumnFamilyHandle family) throws RocksDBException;
  }

  private static void flush(RocksDB db, ColumnFamilyHandle family) throws RocksDBException {
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
      db.flush(flush, family);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"cached", "no-block-cache", "partitioned-index"})
  void answersAsGetDoes(String table) throws Exception {
    RocksDB.loadLibrary();
    List<byte[]> keys = new ArrayList<>();
    for (String k :
        List.of(
            "absent",
            "in-file",
            "filler-0100",
            "deleted-in-memtable",
            "in-memtable",
            "large-in-file",
            "large-in-memtable",
            "huge-in-file",
            "ten-mb-in-file",
            "empty-value")) {
      keys.add(bytes(k));
    }
    keys.add(new byte[5_000]); // a key larger than a thread's key buffer, absent
    // Each order on a fresh instance, read right after its flush: each call is a key's first read.
    for (boolean existsFirst : new boolean[] {true, false}) {
      withDb(
          table,
          tmp.resolve(table + "-" + existsFirst),
          (db, family) -> {
            write(db, family);
            try (ReadOptions readOptions = new ReadOptions()) {
              // Twice: the second time with the buffers the first grew, and warm.
              for (int round = 0; round < 2; round++) {
                for (byte[] key : keys) {
                  String what =
                      new String(key, 0, Math.min(key.length, 30), StandardCharsets.UTF_8);
                  boolean exists = false;
                  if (existsFirst) {
                    exists = PointReads.exists(db, family, readOptions, key);
                  }
                  byte[] value = PointReads.get(db, family, readOptions, key);
                  if (!existsFirst) {
                    exists = PointReads.exists(db, family, readOptions, key);
                  }
                  byte[] expected = db.get(family, readOptions, key);
                  assertThat(value).as("value of %s (%s)", what, table).isEqualTo(expected);
                  assertThat(exists)
                      .as("existence of %s (%s)", what, table)
                      .isEqualTo(expected != null);
                }
              }
              assertThat(PointReads.get(db, family, readOptions, bytes("huge-in-file")))
                  .isEqualTo(HUGE);
            }
          });
    }
  }

  private static void write(RocksDB db, ColumnFamilyHandle family) throws RocksDBException {
    for (int i = 0; i < 200; i++) {
      db.put(family, bytes(String.format("filler-%04d", i)), bytes("f" + i));
    }
    db.put(family, bytes("in-file"), bytes("v1"));
    db.put(family, bytes("deleted-in-memtable"), bytes("v2"));
    db.put(family, bytes("large-in-file"), LARGE);
    db.put(family, bytes("huge-in-file"), HUGE);
    db.put(family, bytes("ten-mb-in-file"), TEN_MB);
    db.put(family, bytes("empty-value"), new byte[0]);
    flush(db, family);
    db.delete(family, bytes("deleted-in-memtable"));
    db.put(family, bytes("in-memtable"), bytes("v3"));
    db.put(family, bytes("large-in-memtable"), LARGE);
  }
}
