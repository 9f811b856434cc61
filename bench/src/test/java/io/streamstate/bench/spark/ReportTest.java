package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code results.md} from a hand-written per-batch CSV: the storage request columns ("files",
 * "state files", "meta ops", "state meta ops") per provider, over the counted batches only.
 */
class ReportTest {
  @TempDir Path dir;

  /** One batch's CSV line: identity, a duration, and the given counters. */
  private static Map<String, String> batch(
      String provider, String phase, int batchId, Map<String, Long> counters) {
    Map<String, String> m = new HashMap<>();
    m.put("round", "0");
    m.put("cell", "000");
    m.put("provider", provider);
    m.put("workload", "window-agg");
    m.put("keys", "100000");
    m.put("storage", "s3");
    m.put("phase", phase);
    m.put("batchId", Integer.toString(batchId));
    m.put("triggerMs", "100");
    m.put("addBatchMs", "90");
    m.put("commitMs", "10");
    m.put("stateRows", "1000");
    m.put("inputRows", "20000");
    m.put("heapMb", "500");
    m.put("sinceStartMs", "1000");
    counters.forEach((k, v) -> m.put(k, Long.toString(v)));
    return m;
  }

  /**
   * Counters of one batch: {@code all} requests of each kind but the data write (create, open,
   * rename, delete, mkdirs, status, list), {@code state} of them under state/ ({@code state} may be
   * null: a CSV from before the state columns), and the files written.
   */
  private static Map<String, Long> counters(long[] all, long[] state, long files, long stateFiles) {
    String[] kinds = {"create", "open", "rename", "delete", "mkdirs", "status", "list"};
    Map<String, Long> m = new LinkedHashMap<>();
    for (int i = 0; i < kinds.length; i++) {
      m.put(kinds[i], all[i]);
      if (state != null) {
        m.put(
            "state" + Character.toUpperCase(kinds[i].charAt(0)) + kinds[i].substring(1), state[i]);
      }
    }
    m.put("write", files);
    m.put("filesWritten", files);
    m.put("stateFilesWritten", stateFiles);
    m.put("bytesWritten", 1_000_000L);
    return m;
  }

  private void writeCsv(String name, String[] columns, List<Map<String, String>> rows)
      throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(String.join(",", columns));
    for (Map<String, String> r : rows) {
      lines.add(String.join(",", Arrays.stream(columns).map(c -> r.getOrDefault(c, "")).toList()));
    }
    Files.write(dir.resolve(name), lines);
  }

  /** The main table of results.md: provider label -> column name -> cell. */
  private Map<String, Map<String, String>> table() throws IOException {
    return table("--mode", "short");
  }

  /** The main table of results.md written with the run's options {@code args}. */
  private Map<String, Map<String, String>> table(String... args) throws IOException {
    Report.write(dir, BenchSettings.parse(args), 1);
    List<String> md = Files.readAllLines(dir.resolve("results.md"));
    int h = 0;
    while (!md.get(h).startsWith("| workload | keys | storage | provider |")) {
      h++;
    }
    List<String> header = cells(md.get(h));
    Map<String, Map<String, String>> byProvider = new LinkedHashMap<>();
    for (int i = h + 2; i < md.size() && md.get(i).startsWith("|"); i++) {
      List<String> cells = cells(md.get(i));
      assertThat(cells).hasSameSizeAs(header);
      Map<String, String> row = new LinkedHashMap<>();
      for (int c = 0; c < header.size(); c++) {
        row.put(header.get(c), cells.get(c));
      }
      byProvider.put(row.get("provider").replace("*", ""), row);
    }
    return byProvider;
  }

  private static List<String> cells(String line) {
    String inner = line.substring(1, line.length() - 1);
    return Arrays.stream(inner.split("\\|", -1)).map(String::trim).toList();
  }

  @Test
  void stateMetaOpsIsTheMeanOverCountedBatchesOfTheRequestsUnderState() throws IOException {
    List<Map<String, String>> rows = new ArrayList<>();
    // Batches 0 and 1 are not counted: huge counts there must not show.
    for (int b = 0; b < 2; b++) {
      long[] huge = {1000, 1000, 1000, 1000, 1000, 1000, 1000};
      rows.add(batch("streamstate", "steady", b, counters(huge, huge, 1000, 1000)));
      rows.add(batch("hdfs", "steady", b, counters(huge, huge, 1000, 1000)));
    }
    // streamstate, batch 2: 12 meta ops (create 4, open 1, delete 2, mkdirs 1, status 3, list 1),
    // 9 of them under state/; batch 3: 14 and 7. Means: 13 and 8.
    rows.add(
        batch(
            "streamstate",
            "steady",
            2,
            counters(new long[] {4, 1, 0, 2, 1, 3, 1}, new long[] {3, 1, 0, 2, 1, 1, 1}, 5, 3)));
    rows.add(
        batch(
            "streamstate",
            "steady",
            3,
            counters(new long[] {5, 2, 1, 1, 1, 2, 2}, new long[] {2, 1, 1, 1, 0, 1, 1}, 6, 4)));
    // hdfs: 20 meta ops per batch, 15 under state/ (each kind counted once: a wrong kind list
    // changes the sum).
    for (int b = 2; b < 4; b++) {
      rows.add(
          batch(
              "hdfs",
              "steady",
              b,
              counters(new long[] {6, 1, 4, 2, 3, 2, 2}, new long[] {5, 1, 4, 1, 2, 1, 1}, 8, 6)));
    }
    // A recovery batch is not a steady batch.
    long[] many = {500, 500, 500, 500, 500, 500, 500};
    rows.add(batch("streamstate", "recovery", 4, counters(many, many, 500, 500)));
    writeCsv("batches-round0.csv", BatchCsv.COLUMNS, rows);

    Map<String, Map<String, String>> t = table();

    assertThat(t).containsOnlyKeys("streamstate", "hdfs");
    assertThat(t.get("streamstate"))
        .containsEntry("n", "2")
        .containsEntry("files", "5.50")
        .containsEntry("state files", "3.50")
        .containsEntry("meta ops", "13.0")
        .containsEntry("state meta ops", "8.00");
    assertThat(t.get("hdfs"))
        .containsEntry("files", "8.00")
        .containsEntry("state files", "6.00")
        .containsEntry("meta ops", "20.0")
        .containsEntry("state meta ops", "15.0");
    // The legend names the column.
    assertThat(Files.readString(dir.resolve("results.md")))
        .contains("state meta ops = the part of meta ops on paths under `state/`");
  }

  @Test
  void aCsvWrittenBeforeTheStateColumnsShowsNoStateMetaOps() throws IOException {
    List<String> old = new ArrayList<>(Arrays.asList(BatchCsv.COLUMNS));
    old.removeIf(c -> c.startsWith("state") && !c.equals("stateRows"));
    old.add("stateFilesWritten");
    List<Map<String, String>> rows = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      rows.add(
          batch(
              "streamstate", "steady", b, counters(new long[] {1, 1, 1, 1, 1, 1, 1}, null, 2, 1)));
    }
    writeCsv("batches-round0.csv", old.toArray(new String[0]), rows);

    Map<String, String> ours = table().get("streamstate");

    assertThat(ours)
        .containsEntry("meta ops", "7.00")
        .containsEntry("state files", "1.00")
        .containsEntry("state meta ops", "–");
  }

  /** Steady batches 0..n-1 of {@code provider}, each lasting the given ms. */
  private static List<Map<String, String>> durations(String provider, long... ms) {
    List<Map<String, String>> rows = new ArrayList<>();
    for (int b = 0; b < ms.length; b++) {
      Map<String, String> m = batch(provider, "steady", b, Map.of());
      m.put("triggerMs", Long.toString(ms[b]));
      m.put("storage", "slow-datanode-periods");
      rows.add(m);
    }
    return rows;
  }

  @Test
  void batchesOverFiveSecondsCountsTheCountedSteadyBatchesLongerThan5000Ms() throws IOException {
    List<Map<String, String>> rows = new ArrayList<>();
    // Batches 0 and 1 are not counted; exactly 5,000 ms is not over.
    rows.addAll(durations("streamstate", 9_000, 9_000, 400, 5_000, 5_001, 600, 20_000));
    rows.addAll(durations("hdfs", 300, 300, 300, 300, 300, 300, 300));
    Map<String, String> recovery = batch("hdfs", "recovery", 7, Map.of());
    recovery.put("triggerMs", "30000");
    recovery.put("storage", "slow-datanode-periods");
    rows.add(recovery);
    writeCsv("batches-round0.csv", BatchCsv.COLUMNS, rows);

    Map<String, Map<String, String>> t = table();

    assertThat(t.get("streamstate")).containsEntry("n", "5").containsEntry("batches > 5 s", "2");
    assertThat(t.get("hdfs")).containsEntry("batches > 5 s", "0");
  }

  @Test
  void withoutStreamstateInTheRunOursIsTheFirstOfOurVariantsNamedInProviders() throws IOException {
    List<Map<String, String>> rows = new ArrayList<>();
    rows.addAll(durations("streamstate-tailfree", 0, 0, 400, 400, 400, 800));
    rows.addAll(durations("streamstate-tailfree-nohedge", 0, 0, 380, 380, 380, 9_000));
    rows.addAll(durations("hdfs", 0, 0, 300, 300, 300, 16_000));
    rows.addAll(durations("no-durability", 0, 0, 200, 200, 200, 200));
    writeCsv("batches-round0.csv", BatchCsv.COLUMNS, rows);
    String providers =
        "streamstate-tailfree,streamstate-tailfree-nohedge,hdfs,no-durability,streamstate-rflogs";

    Map<String, Map<String, String>> t =
        table("--mode", "full", "--providers", providers, "--sink", "parquet");

    assertThat(t).containsKeys("streamstate-tailfree", "streamstate-tailfree-nohedge", "hdfs");
    assertThat(t.get("streamstate-tailfree"))
        .containsEntry("p50 ×ours", "1.00")
        .containsEntry("p99 ×ours", "1.00");
    assertThat(t.get("streamstate-tailfree-nohedge"))
        .containsEntry("p50 ×ours", "0.95")
        .containsEntry("p99 ×ours", "11.25")
        .containsEntry("batches > 5 s", "1");
    assertThat(t.get("hdfs"))
        .containsEntry("p50 ×ours", "0.75")
        .containsEntry("p99 ×ours", "20.00");
    String md = Files.readString(dir.resolve("results.md"));
    assertThat(md).contains("| **streamstate-tailfree** |").contains("`parquet` sink");
    // Named first, the other variant is ours; the baseline never is.
    assertThat(
            table(
                    "--providers",
                    "no-durability,streamstate-tailfree-nohedge,streamstate-tailfree,hdfs")
                .get("streamstate-tailfree"))
        .containsEntry("p50 ×ours", "1.05");
    assertThat(Report.reference(List.of("hdfs", "no-durability"), List.of("no-durability")))
        .isNull();
    assertThat(
            Report.reference(
                List.of("streamstate-tailfree", "streamstate"), List.of("streamstate-tailfree")))
        .isEqualTo("streamstate");
  }

  @Test
  void sinkColumnsAreTheMeansOfTheRequestsUnderTheSinkDirectory() throws IOException {
    List<Map<String, String>> rows = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      Map<String, Long> c =
          counters(new long[] {6, 1, 0, 1, 1, 3, 2}, new long[] {1, 0, 0, 0, 0, 1, 1}, 7, 1);
      // Sink: 4 creates, a status and a list per batch; 4 files (3 part files and the log entry).
      for (String kind : new String[] {"Open", "Rename", "Delete", "Mkdirs", "AddBlock"}) {
        c.put("sink" + kind, 0L);
      }
      c.put("sinkCreate", 4L);
      c.put("sinkStatus", 1L);
      c.put("sinkList", 1L);
      c.put("sinkFilesWritten", 4L);
      c.put("slowNodeWaits", b % 2 == 0 ? 0L : 3L);
      rows.add(batch("hdfs", "steady", b, c));
    }
    writeCsv("batches-round0.csv", BatchCsv.COLUMNS, rows);

    assertThat(table().get("hdfs"))
        .containsEntry("files", "7.00")
        .containsEntry("state files", "1.00")
        .containsEntry("sink files", "4.00")
        .containsEntry("meta ops", "14.0")
        .containsEntry("state meta ops", "3.00")
        .containsEntry("sink meta ops", "6.00")
        .containsEntry("DN waits", "1.50");
  }

  @Test
  void localDiskHasNoRequestCounts() throws IOException {
    List<Map<String, String>> rows = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      Map<String, String> m = batch("streamstate", "steady", b, Map.of());
      m.put("storage", "local");
      rows.add(m);
    }
    writeCsv("batches-round0.csv", BatchCsv.COLUMNS, rows);

    assertThat(table().get("streamstate"))
        .containsEntry("files", "–")
        .containsEntry("meta ops", "–")
        .containsEntry("state meta ops", "–")
        .containsEntry("sink meta ops", "–")
        .containsEntry("sink files", "–");
  }
}
