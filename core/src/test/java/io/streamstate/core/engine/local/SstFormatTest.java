package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots carry SST files byte for byte between Spark lines, so they must be in a format every
 * supported RocksDB reads: 5 (RocksDB 8.3, Spark 3.5's, refuses 9.x's default 6).
 */
class SstFormatTest {
  @TempDir Path tmp;

  @Test
  void sstFilesAreWrittenInAFormatSpark35sRocksDbReads() throws IOException {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(64L << 20)) {
      LocalDb db =
          LocalDb.open(
              "s",
              tmp.resolve("db"),
              budget,
              OpenDatabases.of(resources),
              LocalSpace.unmanaged("s", tmp));
      try {
        db.apply(
            new Changelog(
                1,
                1,
                0,
                List.of(),
                List.of(
                    new Changelog.FamilyChanges(
                        LocalDb.DEFAULT_FAMILY,
                        List.of(new Changelog.Change(new byte[] {1}, new byte[] {2}))))));
        db.checkpoint(tmp.resolve("checkpoint"));
      } finally {
        db.close();
      }
    }
    List<Path> ssts;
    try (Stream<Path> files = Files.list(tmp.resolve("checkpoint"))) {
      ssts = files.filter(f -> f.toString().endsWith(".sst")).toList();
    }
    assertThat(ssts).isNotEmpty();
    for (Path sst : ssts) {
      // A block-based table's footer ends: format_version (u32 LE) | magic number (u64).
      byte[] bytes = Files.readAllBytes(sst);
      int formatVersion =
          ByteBuffer.wrap(bytes, bytes.length - 12, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
      assertThat(formatVersion).as("format_version of %s", sst).isEqualTo(5);
    }
  }
}
