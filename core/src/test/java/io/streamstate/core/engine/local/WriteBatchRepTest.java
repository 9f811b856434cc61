package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteBatch;

/**
 * A batch built in its serialized form must be byte for byte the batch RocksDB's own {@code
 * put}/{@code delete} calls build, for the default column family (id 0) and others, for empty,
 * small and large (multi-byte varint) keys and values.
 */
class WriteBatchRepTest {
  @TempDir Path tmp;

  @Test
  void theSerializedBatchIsTheOneRocksDbsCallsBuild() throws Exception {
    RocksDbVersion.check();
    List<ColumnFamilyDescriptor> descriptors =
        List.of(
            new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY),
            new ColumnFamilyDescriptor("a".getBytes()),
            new ColumnFamilyDescriptor("b".getBytes()));
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options =
            new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
        RocksDB db = RocksDB.open(options, tmp.toString(), descriptors, handles)) {
      Random random = new Random(21);
      for (int round = 0; round < 20; round++) {
        WriteBatchRep rep = new WriteBatchRep(round % 2 == 0 ? 0 : 1 << 16);
        try (WriteBatch expected = new WriteBatch()) {
          int n = random.nextInt(2_000);
          for (int i = 0; i < n; i++) {
            ColumnFamilyHandle handle = handles.get(random.nextInt(handles.size()));
            byte[] key = bytes(random, random.nextInt(10) == 0 ? 300 : 40);
            if (random.nextInt(4) == 0) {
              expected.delete(handle, key);
              rep.delete(handle.getID(), key);
            } else {
              byte[] value = bytes(random, random.nextInt(10) == 0 ? 20_000 : 100);
              expected.put(handle, key, value);
              rep.put(handle.getID(), key, value);
            }
          }
          assertThat(handles.get(1).getID()).isNotZero();
          assertThat(rep.count()).isEqualTo(expected.count());
          assertThat(rep.toBytes()).isEqualTo(expected.data());
          try (WriteBatch rebuilt = new WriteBatch(rep.toBytes())) {
            assertThat(rebuilt.count()).isEqualTo(n);
          }
        }
      }
      for (ColumnFamilyHandle h : handles) {
        h.close();
      }
    }
  }

  private static byte[] bytes(Random random, int maxLength) {
    byte[] b = new byte[random.nextInt(maxLength + 1)];
    random.nextBytes(b);
    return b;
  }
}
