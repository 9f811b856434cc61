package io.streamstate.bench.dstream;

import java.util.List;
import java.util.Locale;

/** The results table of {@link MapWithStateBenchmark}: measured batches pooled over rounds. */
final class BenchReport {
  private BenchReport() {}

  /** Nearest-rank percentile of sorted values. */
  static double percentile(double[] sorted, double p) {
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  private record Stats(
      int n,
      double p50,
      double p90,
      double p99,
      double procP50,
      double mbPerBatch,
      double recoveryMs,
      double startToFirstMs,
      double stateMb,
      String checks) {}

  private static Stats stats(
      List<CellRunner.BatchRow> batches,
      List<CellRunner.RecoveryRow> recoveries,
      Implementation impl,
      long keys) {
    List<CellRunner.BatchRow> rows =
        batches.stream()
            .filter(b -> b.cell().implementation() == impl && b.cell().keys() == keys)
            .filter(b -> b.phase().equals("measured"))
            .toList();
    double[] wall = rows.stream().mapToDouble(CellRunner.BatchRow::wallMs).sorted().toArray();
    double[] proc = rows.stream().mapToDouble(CellRunner.BatchRow::processingMs).sorted().toArray();
    double bytes = rows.stream().mapToLong(CellRunner.BatchRow::bytesWritten).sum();
    List<CellRunner.RecoveryRow> recs =
        recoveries.stream()
            .filter(r -> r.cell().implementation() == impl && r.cell().keys() == keys)
            .toList();
    double[] total = recs.stream().mapToDouble(CellRunner.RecoveryRow::totalMs).sorted().toArray();
    double[] first =
        recs.stream().mapToDouble(CellRunner.RecoveryRow::startToFirstMs).sorted().toArray();
    double[] state = recs.stream().mapToDouble(r -> r.stateBytes() / 1e6).sorted().toArray();
    String checks =
        String.join(" ", recs.stream().map(CellRunner.RecoveryRow::check).distinct().toList());
    if (wall.length == 0) {
      return null;
    }
    return new Stats(
        wall.length,
        percentile(wall, 50),
        percentile(wall, 90),
        percentile(wall, 99),
        percentile(proc, 50),
        bytes / 1e6 / wall.length,
        total.length == 0 ? Double.NaN : percentile(total, 50),
        first.length == 0 ? Double.NaN : percentile(first, 50),
        state.length == 0 ? Double.NaN : percentile(state, 50),
        checks);
  }

  static String markdown(
      List<CellRunner.BatchRow> batches,
      List<CellRunner.RecoveryRow> recoveries,
      long[] keyCounts,
      int rounds,
      double fraction,
      int partitions,
      String[] args) {
    StringBuilder md = new StringBuilder();
    md.append("# MapWithStateBenchmark results\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "Args: `%s`. %d round(s), %.0f%% of the keys updated per batch, %d state partitions,"
                + " local[2], spark.serializer %s. Measured batches pooled over rounds; recovery ="
                + " median over rounds.\n\n",
            String.join(" ", args),
            rounds,
            fraction * 100,
            partitions,
            batches.isEmpty() ? "?" : batches.get(0).cell().serializerClass()));
    md.append(
        "| keys | impl | n | p50 ms | p90 ms | p99 ms | processingDelay p50 ms | MB written/batch"
            + " | state dir MB at stop | recovery s (context+start→1st batch) | start→1st batch s |"
            + " check |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (long keys : keyCounts) {
      Stats ours = stats(batches, recoveries, Implementation.OURS, keys);
      Stats spark = stats(batches, recoveries, Implementation.SPARK, keys);
      for (Implementation impl : Implementation.values()) {
        Stats s = impl == Implementation.OURS ? ours : spark;
        if (s == null) {
          continue;
        }
        md.append(
            String.format(
                Locale.ROOT,
                "| %,d | %s | %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.1f | %.2f | %.2f | %s |\n",
                keys,
                impl.label(),
                s.n(),
                s.p50(),
                s.p90(),
                s.p99(),
                s.procP50(),
                s.mbPerBatch(),
                s.stateMb(),
                s.recoveryMs() / 1000,
                s.startToFirstMs() / 1000,
                s.checks()));
      }
      if (ours != null && spark != null) {
        md.append(
            String.format(
                Locale.ROOT,
                "| %,d | **ours/spark** | | **%.2f** | **%.2f** | **%.2f** | | **%.2f** | **%.2f** |"
                    + " **%.2f** | **%.2f** | |\n",
                keys,
                ours.p50() / spark.p50(),
                ours.p90() / spark.p90(),
                ours.p99() / spark.p99(),
                ours.mbPerBatch() / spark.mbPerBatch(),
                ours.stateMb() / spark.stateMb(),
                ours.recoveryMs() / spark.recoveryMs(),
                ours.startToFirstMs() / spark.startToFirstMs()));
      }
    }
    md.append("\nPer round (p50 / p99 ms of measured batches, recovery s):\n\n");
    md.append(
        "| round | keys | impl | p50 ms | p99 ms | MB/batch | recovery s |\n|---|---|---|---|---|---|---|\n");
    for (CellRunner.RecoveryRow r : recoveries) {
      double[] wall =
          batches.stream()
              .filter(b -> b.cell().equals(r.cell()) && b.phase().equals("measured"))
              .mapToDouble(CellRunner.BatchRow::wallMs)
              .sorted()
              .toArray();
      double mb =
          batches.stream()
                  .filter(b -> b.cell().equals(r.cell()) && b.phase().equals("measured"))
                  .mapToLong(CellRunner.BatchRow::bytesWritten)
                  .sum()
              / 1e6
              / Math.max(1, wall.length);
      md.append(
          String.format(
              Locale.ROOT,
              "| %d | %,d | %s | %.0f | %.0f | %.2f | %.2f |\n",
              r.cell().round(),
              r.cell().keys(),
              r.cell().implementation().label(),
              wall.length == 0 ? Double.NaN : percentile(wall, 50),
              wall.length == 0 ? Double.NaN : percentile(wall, 99),
              mb,
              r.totalMs() / 1000));
    }
    return md.toString();
  }
}
