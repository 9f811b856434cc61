package io.streamstate.bench.spark;

import java.nio.file.Paths;

/**
 * Side-by-side benchmark of streamstate's provider and Spark 4.2's built-in providers: same
 * queries, same deterministic input, same (simulated) storage.
 *
 * <pre>
 * SideBySideBenchmark --mode short|full|heap [--out DIR] [--rounds N] [--batches N]
 *                     [--storages local,s3,...] [--workloads window-agg,...]
 *                     [--providers streamstate,hdfs,...] [--keys N[,N]] [--rows-per-batch N]
 *                     [--shuffle-partitions N] [--local-threads N] [--matrix full|trimmed]
 *                     [--saturation-rows N] [--saturation-batches N] [--sink noop|parquet]
 * SideBySideBenchmark --report-only RESULTS_DIR [the run's mode and options]
 * </pre>
 *
 * <p>The process started by the user is the orchestrator ({@link Orchestrator}): it creates {@code
 * DIR/<timestamp>/}, starts one child JVM per round (same class path, same JVM flags, {@code -Xmx}
 * from {@code -Dbench.childXmx}), and when all rounds are done writes {@code results.md} and the
 * charts ({@link Report}). A child ({@link RoundRunner}) runs every cell of its round in one Spark
 * session ({@code local[N]}), each cell on a fresh checkpoint, providers innermost so that they
 * alternate (A B C D E A B C D E ...), the provider order rotated by one each round; then the
 * saturation cells (local disk, large batches, the providers in the same rotated order) ({@link
 * RoundPlan}).
 *
 * <p>Queries write to Spark's {@code noop} sink, or with {@code --sink parquet} to Parquet files
 * through Spark's file sink, in {@code DIR/<timestamp>/sink/<cell>-r<round>/} on the cell's storage
 * (next to its checkpoint, on the same simulated file system).
 *
 * <p>Heap mode ({@code --mode heap}) runs each cell in a JVM of its own (no leftovers of other
 * providers), without warm-up, and after every batch forces a full GC and records the heap used
 * after it and the process's resident set ({@link MemorySampler}).
 *
 * <p>Options, their defaults per mode and the child-JVM protocol: {@link BenchSettings}; each
 * provider label's Spark confs: {@link Provider}; the per-batch CSV: {@link BatchRecorder} and
 * {@link BatchCsv}.
 */
public final class SideBySideBenchmark {
  private SideBySideBenchmark() {}

  public static void main(String[] args) throws Exception {
    BenchSettings settings = BenchSettings.parse(args);
    if (settings.child()) {
      RoundRunner.run(settings);
    } else if (settings.reportOnly != null) {
      // Rewrites results.md and the charts of an earlier (or interrupted) run's folder.
      Report.write(Paths.get(settings.reportOnly), settings, -1);
    } else {
      Orchestrator.run(settings);
    }
  }
}
