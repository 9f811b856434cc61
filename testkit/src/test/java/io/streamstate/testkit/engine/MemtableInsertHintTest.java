package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.testkit.InMemoryStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit's write batch is in key order, and the local RocksDB inserts it into its memtables from
 * where the previous key went in (an insert hint). RocksJava has no setter for that option, so the
 * engine passes it as an options string, which a RocksDB may refuse: this reads the options every
 * column family was opened with back from RocksDB's own OPTIONS file. Also run on the oldest
 * RocksDB a supported Spark line ships.
 */
class MemtableInsertHintTest {
  @TempDir Path tmp;

  @Test
  void everyColumnFamilyInsertsWithAHint() throws IOException {
    Path local = tmp.resolve("l");
    try (VersionedStore store =
        VersionedStore.builder("h", new InMemoryStorage())
            .localDir(local)
            .options(StoreOptions.defaults())
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      try (StateTransaction tx = store.begin(0)) {
        tx.createColumnFamily("second");
        tx.put("default", bytes("a"), bytes("1"));
        tx.put("second", bytes("b"), bytes("2"));
        tx.commit();
      }
      try (StateTransaction tx = store.begin(1)) {
        assertThat(tx.get("second", bytes("b"))).isEqualTo(bytes("2"));
      }
      List<Path> optionFiles;
      try (Stream<Path> files = Files.walk(local)) {
        optionFiles =
            files.filter(f -> f.getFileName().toString().startsWith("OPTIONS-")).sorted().toList();
      }
      assertThat(optionFiles).as("RocksDB OPTIONS files under %s", local).isNotEmpty();
      // The newest file holds every family created so far.
      String options = Files.readString(optionFiles.get(optionFiles.size() - 1));
      Matcher section = Pattern.compile("\\[CFOptions \"([^\"]*)\"\\]").matcher(options);
      int families = 0;
      while (section.find()) {
        families++;
        int end = options.indexOf("\n[", section.end());
        String body = options.substring(section.end(), end < 0 ? options.length() : end);
        assertThat(body)
            .as("options of column family %s", section.group(1))
            .contains("memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.0");
      }
      assertThat(families).isEqualTo(2);
    }
  }
}
