package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.core.ProcessResources;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

class OpenDatabasesTest {
  private static final Path THREADS = Path.of("/proc/self/task");

  /**
   * A compaction runs at the lowest CPU priority once the process's open databases exist (Linux
   * shows a thread's nice value in /proc; RocksDB names its compaction threads "rocksdb:low" and
   * lowers a thread's priority when it takes its next job).
   */
  @Test
  void compactionsRunAtTheLowestCpuPriority(@TempDir Path tmp) throws Exception {
    assumeTrue(Files.isDirectory(THREADS), "needs Linux's /proc");
    try (ProcessResources resources = new ProcessResources("test")) {
      OpenDatabases.of(resources);
      // Any RocksDB instance of the process: they share the default environment's pools.
      try (Options options = new Options().setCreateIfMissing(true);
          RocksDB db = RocksDB.open(options, tmp.toString());
          FlushOptions flush = new FlushOptions().setWaitForFlush(true);
          CompactRangeOptions compact = new CompactRangeOptions()) {
        for (int file = 0; file < 2; file++) {
          for (int i = 0; i < 100; i++) {
            db.put(("k" + i).getBytes(StandardCharsets.UTF_8), new byte[] {(byte) file});
          }
          db.flush(flush);
        }
        db.compactRange(
            db.getDefaultColumnFamily(),
            null,
            null,
            compact.setBottommostLevelCompaction(
                CompactRangeOptions.BottommostLevelCompaction.kForce));
      }
    }
    List<Integer> niceOfCompactionThreads = niceValues("rocksdb:low");
    assertThat(niceOfCompactionThreads).isNotEmpty().containsOnly(19);
  }

  /** The nice values of this process's threads named {@code name}. */
  private static List<Integer> niceValues(String name) throws IOException {
    List<Integer> nice = new ArrayList<>();
    try (Stream<Path> tasks = Files.list(THREADS)) {
      for (Path task : tasks.toList()) {
        try {
          if (!Files.readString(task.resolve("comm")).trim().equals(name)) {
            continue;
          }
          // Fields after the command's closing parenthesis; nice is the 19th field of the line.
          String stat = Files.readString(task.resolve("stat"));
          String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          nice.add(Integer.parseInt(after[16]));
        } catch (IOException e) {
          // the thread ended meanwhile
        }
      }
    }
    return nice;
  }
}
