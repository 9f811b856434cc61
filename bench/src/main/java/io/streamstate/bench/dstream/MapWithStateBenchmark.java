package io.streamstate.bench.dstream;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Our incremental {@code mapWithState} against Spark's with checkpointing, side by side in one JVM
 * (issue 20): a running sum per key, each batch updating a seeded random fraction of the keys after
 * warm-up batches that load every key. Per implementation and key count: batch time p50/p90/p99,
 * bytes written to the state (or checkpoint) directory per batch, and recovery time.
 *
 * <p>Rounds run every key count with the two implementations alternating, their order rotated each
 * round, so that both see the same machine noise. Before the first round an unrecorded warm-up cell
 * of each implementation (JIT). Results: {@code batches.csv}, {@code recoveries.csv} and {@code
 * results.md} in {@code --out}/{@code yyyyMMdd-HHmmss}/.
 *
 * <pre>
 * --rounds N             rounds (3)
 * --keys N[,N]           key counts (100000,1000000)
 * --fraction F           fraction of the keys updated per batch (0.1)
 * --batches N            measured batches per run below 1M keys (24)
 * --large-batches N      measured batches per run at 1M keys and more (12)
 * --unmeasured N         batches after the load, not measured (2)
 * --partitions N         state partitions (4)
 * --warmup-keys N        keys of the unrecorded warm-up cells (100000; 0 = none)
 * --out DIR              results root (bench/target/mapwithstate)
 * --keep-dirs true       keep each run's state and checkpoint directory (false)
 * --serializer java|kryo spark.serializer of both implementations (java: Spark's default)
 * </pre>
 */
public final class MapWithStateBenchmark {
  private static final long BATCH_MS = 1000;

  /** Keys per load batch: the warm-up loads the key space in batches of at most this many keys. */
  private static final long KEYS_PER_LOAD_BATCH = 250_000;

  private MapWithStateBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rounds = 3;
    long[] keyCounts = {100_000, 1_000_000};
    double fraction = 0.1;
    int batches = 24;
    int largeBatches = 12;
    int unmeasured = 2;
    int partitions = 4;
    long warmupKeys = 100_000;
    boolean keepDirs = false;
    String serializer = "java";
    Path out = Paths.get("bench/target/mapwithstate");
    for (int i = 0; i < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--rounds" -> rounds = Integer.parseInt(v);
        case "--keys" ->
            keyCounts = Arrays.stream(v.split(",")).mapToLong(Long::parseLong).toArray();
        case "--fraction" -> fraction = Double.parseDouble(v);
        case "--batches" -> batches = Integer.parseInt(v);
        case "--large-batches" -> largeBatches = Integer.parseInt(v);
        case "--unmeasured" -> unmeasured = Integer.parseInt(v);
        case "--partitions" -> partitions = Integer.parseInt(v);
        case "--warmup-keys" -> warmupKeys = Long.parseLong(v);
        case "--out" -> out = Paths.get(v);
        case "--keep-dirs" -> keepDirs = Boolean.parseBoolean(v);
        case "--serializer" -> serializer = v;
        default -> throw new IllegalArgumentException("Unknown option " + args[i]);
      }
    }
    Path results =
        out.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(results);
    System.out.println("Results in " + results.toAbsolutePath());

    List<CellRunner.BatchRow> batchRows = new ArrayList<>();
    List<CellRunner.RecoveryRow> recoveryRows = new ArrayList<>();
    Implementation[] impls = Implementation.values();
    if (warmupKeys > 0) {
      for (Implementation impl : impls) {
        System.out.println("warm-up (not recorded): " + impl.label());
        CellRunner runner = new CellRunner();
        runner.run(
            cell(impl, 0, warmupKeys, unmeasured, 6, fraction, partitions, serializer, results));
        deleteTree(results.resolve(cellName(impl, 0, warmupKeys)));
      }
    }
    for (int round = 1; round <= rounds; round++) {
      for (long keys : keyCounts) {
        int measured = keys >= 1_000_000 ? largeBatches : batches;
        for (int i = 0; i < impls.length; i++) {
          Implementation impl = impls[(i + round - 1) % impls.length]; // rotated each round
          System.out.printf("round %d, %,d keys: %s%n", round, keys, impl.label());
          CellRunner runner = new CellRunner();
          Implementation.Cell cell =
              cell(
                  impl,
                  round,
                  keys,
                  unmeasured,
                  measured,
                  fraction,
                  partitions,
                  serializer,
                  results);
          runner.run(cell);
          batchRows.addAll(runner.batches);
          recoveryRows.add(runner.recovery);
          if (!keepDirs) {
            deleteTree(cell.dir()); // 1M-key checkpoints are large; the CSVs keep what counts
          }
          writeCsvs(results, batchRows, recoveryRows);
        }
      }
    }
    String report =
        BenchReport.markdown(
            batchRows, recoveryRows, keyCounts, rounds, fraction, partitions, args);
    Files.writeString(results.resolve("results.md"), report);
    System.out.println(report);
    System.exit(0); // Spark's non-daemon threads
  }

  private static Implementation.Cell cell(
      Implementation impl,
      int round,
      long keys,
      int unmeasured,
      int measured,
      double fraction,
      int partitions,
      String serializer,
      Path results) {
    int loadBatches = (int) Math.max(1, (keys + KEYS_PER_LOAD_BATCH - 1) / KEYS_PER_LOAD_BATCH);
    return new Implementation.Cell(
        impl,
        round,
        keys,
        loadBatches,
        unmeasured,
        measured,
        fraction,
        BATCH_MS,
        partitions,
        switch (serializer) {
          case "java" -> "org.apache.spark.serializer.JavaSerializer";
          case "kryo" -> "org.apache.spark.serializer.KryoSerializer";
          default ->
              throw new IllegalArgumentException("--serializer java|kryo, not " + serializer);
        },
        results.resolve(cellName(impl, round, keys)).toAbsolutePath());
  }

  private static String cellName(Implementation impl, int round, long keys) {
    return "run-" + impl.label() + "-r" + round + "-" + keys;
  }

  private static void writeCsvs(
      Path results, List<CellRunner.BatchRow> batches, List<CellRunner.RecoveryRow> recoveries)
      throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(results.resolve("batches.csv")))) {
      w.println("impl,round,keys,ordinal,phase,wallMs,processingDelayMs,bytesWritten");
      for (CellRunner.BatchRow b : batches) {
        w.printf(
            Locale.ROOT,
            "%s,%d,%d,%d,%s,%.1f,%d,%d%n",
            b.cell().implementation().label(),
            b.cell().round(),
            b.cell().keys(),
            b.ordinal(),
            b.phase(),
            b.wallMs(),
            b.processingMs(),
            b.bytesWritten());
      }
    }
    try (PrintWriter w =
        new PrintWriter(Files.newBufferedWriter(results.resolve("recoveries.csv")))) {
      w.println("impl,round,keys,contextMs,startToFirstBatchMs,totalMs,stateBytesAtStop,check");
      for (CellRunner.RecoveryRow r : recoveries) {
        w.printf(
            Locale.ROOT,
            "%s,%d,%d,%.1f,%.1f,%.1f,%d,%s%n",
            r.cell().implementation().label(),
            r.cell().round(),
            r.cell().keys(),
            r.contextMs(),
            r.startToFirstMs(),
            r.totalMs(),
            r.stateBytes(),
            r.check());
      }
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
