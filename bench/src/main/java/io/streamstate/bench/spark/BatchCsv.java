package io.streamstate.bench.spark;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The per-batch CSV of a round, {@code batches-round<N>.csv} (heap mode: {@code
 * batches-round<N>-cell<id>.csv}, a JVM per cell): its columns, which {@link Report} reads by name,
 * and a line per recorded batch.
 */
final class BatchCsv implements AutoCloseable {
  /** Counters of the simulated storage recorded per batch (the increase since the last batch). */
  static final String[] COUNTERS = {
    "create",
    "write",
    "sync",
    "addBlock",
    "open",
    "rename",
    "delete",
    "mkdirs",
    "status",
    "list",
    "stateCreate",
    "stateSync",
    "stateAddBlock",
    "stateOpen",
    "stateRename",
    "stateDelete",
    "stateMkdirs",
    "stateStatus",
    "stateList",
    "sinkCreate",
    "sinkSync",
    "sinkAddBlock",
    "sinkOpen",
    "sinkRename",
    "sinkDelete",
    "sinkMkdirs",
    "sinkStatus",
    "sinkList",
    "metadataOps",
    "stateMetadataOps",
    "sinkMetadataOps",
    "filesWritten",
    "stateFilesWritten",
    "sinkFilesWritten",
    "bytesWritten",
    "bytesRead",
    "delayMs",
    "modelMs",
    "slowNodeWaits",
    "slowNodeWaitMs",
    "favoredCreates",
    "favoredCreatesOnSlow"
  };

  /**
   * Columns of the per-batch CSV: the batch's identity and timings, the counters, the hedges
   * ({@link HedgeColumns}), the clock.
   */
  static final String[] COLUMNS =
      Stream.of(
              new String[] {
                "round",
                "cell",
                "provider",
                "workload",
                "keys",
                "storage",
                "phase",
                "batchId",
                "triggerMs",
                "addBatchMs",
                "walCommitMs",
                "commitOffsetsMs",
                "commitMs",
                "stateRows",
                "inputRows",
                "heapMb",
                "heapAfterGcMb",
                "heapCommittedMb",
                "heapCommittedBeforeGcMb",
                "rssBeforeGcMb",
                "nonHeapCommittedMb",
                "rssMb",
                "rssAnonMb",
                "rssFileMb",
                "directBufferMb",
                "rocksdbCacheMb",
                "rocksdbPinnedMb",
                "rocksdbMemtableMb",
                "rocksdbTableReaderMb"
              },
              COUNTERS,
              HedgeColumns.NAMES,
              new String[] {"sinceStartMs"})
          .flatMap(Arrays::stream)
          .toArray(String[]::new);

  private final PrintWriter out;

  private BatchCsv(PrintWriter out) {
    this.out = out;
  }

  /**
   * Creates (or truncates) the CSV of {@code round} in the results folder {@code dir} and writes
   * its header; {@code onlyCell} names heap mode's one cell of the round, else null.
   */
  static BatchCsv create(Path dir, int round, Cell onlyCell) throws IOException {
    Path file =
        dir.resolve(
            "batches-round" + round + (onlyCell != null ? "-cell" + onlyCell.id() : "") + ".csv");
    PrintWriter out =
        new PrintWriter(
            Files.newBufferedWriter(
                file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING));
    out.println(String.join(",", COLUMNS));
    return new BatchCsv(out);
  }

  /**
   * Writes one batch's {@code row} (values by column name; absent ones empty), adding the cell's
   * identity and the {@code phase} ({@code steady}, {@code recovery}, {@code saturation}, {@code
   * baseline}) to it.
   */
  void write(Map<String, Object> row, Cell cell, int round, String phase) {
    row.put("round", round);
    row.put("cell", cell.id());
    row.put("provider", cell.provider().label);
    row.put("workload", cell.workload().label);
    row.put("keys", cell.keys());
    row.put("storage", cell.storage());
    row.put("phase", phase);
    List<String> values = new ArrayList<>();
    for (String c : COLUMNS) {
      Object v = row.get(c);
      values.add(v == null ? "" : v.toString());
    }
    out.println(String.join(",", values));
  }

  void flush() {
    out.flush();
  }

  @Override
  public void close() {
    out.close();
  }
}
