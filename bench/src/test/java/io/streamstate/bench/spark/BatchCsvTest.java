package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The per-batch CSV's columns and lines ({@link BatchCsv}); runs no query. */
class BatchCsvTest {
  @Test
  void theCsvHasAColumnForEveryCounterOfTheSimulatedStorage() {
    Map<String, Long> counters = SimulatedFileSystem.counters("none.csv-columns-test").snapshot();
    assertThat(BatchCsv.COLUMNS)
        .contains(counters.keySet().toArray(new String[0]))
        .contains("stateMetadataOps", "stateCreate", "stateList")
        .contains("sinkFilesWritten", "sinkMetadataOps", "slowNodeWaits", "slowNodeWaitMs")
        .contains("walCommitMs", "commitOffsetsMs", "heapCommittedMb", "nonHeapCommittedMb")
        .doesNotHaveDuplicates();
  }

  @Test
  void theCsvHasTheHedgeColumnsBeforeTheClock() {
    List<String> columns = List.of(BatchCsv.COLUMNS);
    assertThat(columns).containsSubsequence(HedgeColumns.NAMES);
    assertThat(columns.indexOf("favoredCreates")).isLessThan(columns.indexOf("stateHedges"));
    assertThat(columns.get(columns.size() - 1)).isEqualTo("sinceStartMs");
  }

  @Test
  void aRowIsWrittenUnderTheHeaderWithTheCellsIdentityAndEmptyValuesForAbsentColumns(
      @TempDir Path dir) throws IOException {
    Cell cell = new Cell("007", "matrix", Provider.HDFS, Workload.WINDOW_AGG, 1000, "s3", 200, 6);
    Map<String, Object> row = new HashMap<>();
    row.put("batchId", 3L);
    row.put("triggerMs", 120L);
    try (BatchCsv csv = BatchCsv.create(dir, 2, null)) {
      csv.write(row, cell, 2, "steady");
    }
    try (BatchCsv csv = BatchCsv.create(dir, 2, cell)) {
      csv.write(new HashMap<>(), cell, 2, "baseline");
    }

    List<String> lines = Files.readAllLines(dir.resolve("batches-round2.csv"));
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).isEqualTo(String.join(",", BatchCsv.COLUMNS));
    String[] values = lines.get(1).split(",", -1);
    assertThat(values).hasSameSizeAs(BatchCsv.COLUMNS);
    Map<String, String> byName = new HashMap<>();
    for (int i = 0; i < values.length; i++) {
      byName.put(BatchCsv.COLUMNS[i], values[i]);
    }
    assertThat(byName)
        .containsEntry("round", "2")
        .containsEntry("cell", "007")
        .containsEntry("provider", "hdfs")
        .containsEntry("workload", Workload.WINDOW_AGG.label)
        .containsEntry("keys", "1000")
        .containsEntry("storage", "s3")
        .containsEntry("phase", "steady")
        .containsEntry("batchId", "3")
        .containsEntry("triggerMs", "120")
        .containsEntry("rssMb", "")
        .containsEntry("stateHedges", "");
    // Heap mode: a file per cell.
    assertThat(Files.readAllLines(dir.resolve("batches-round2-cell007.csv")).get(1))
        .contains(",baseline,");
  }
}
