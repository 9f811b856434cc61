package io.streamstate.bench.wal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.streaming.util.WriteAheadLog;

/**
 * Issue 20, item 5: streamstate's write-ahead log against Spark's {@code FileBasedWriteAheadLog},
 * side by side in one JVM: write latency (p50, p99) and records per second with 1 and 4 concurrent
 * writers, on local disk, on the simulated HDFS with slow DataNodes, and on S3 (S3A over S3Proxy).
 * Cells run storage by storage, writers by writers, the two logs back to back with their order
 * alternated each round; every cell on a fresh directory. Writes a markdown report.
 *
 * <pre>
 * java ${spark.jvm.flags} -cp &lt;bench classpath&gt; io.streamstate.bench.wal.WalBenchmark \
 *   [--rounds 3] [--records 200] [--record-bytes 8192] [--writers 1,4] \
 *   [--storages local,slow-datanode,s3] [--stall-scale 0.1] [--seed 42] \
 *   [--work target/wal-bench] [--out target/wal-bench/results.md]
 * </pre>
 *
 * ({@code --records} per writer and cell; {@code --stall-scale} scales the simulated slow periods,
 * 1.0 = 5-20 s, as the side-by-side benchmark's short mode does with 0.1.)
 */
public final class WalBenchmark {
  private WalBenchmark() {}

  /** Spark's loggers at WARN (its defaults say INFO, once per log instance). */
  private static void quietSpark() {
    org.apache.logging.log4j.core.config.Configurator.setRootLevel(
        org.apache.logging.log4j.Level.WARN);
  }

  record Cell(String storage, int writers, WalContender contender) {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new LinkedHashMap<>();
    opts.put("rounds", "3");
    opts.put("records", "200");
    opts.put("record-bytes", "8192");
    opts.put("writers", "1,4");
    opts.put("storages", "local,slow-datanode,s3");
    opts.put("stall-scale", "0.1");
    opts.put("seed", "42");
    opts.put("work", "target/wal-bench");
    opts.put("out", "target/wal-bench/results.md");
    for (int i = 0; i < args.length; i += 2) {
      String key = args[i].replaceFirst("^--", "");
      if (!opts.containsKey(key) || i + 1 >= args.length) {
        throw new IllegalArgumentException("Unknown option or no value: " + args[i]);
      }
      opts.put(key, args[i + 1]);
    }
    int rounds = Integer.parseInt(opts.get("rounds"));
    int records = Integer.parseInt(opts.get("records"));
    int recordBytes = Integer.parseInt(opts.get("record-bytes"));
    int[] writerCounts =
        Arrays.stream(opts.get("writers").split(",")).mapToInt(Integer::parseInt).toArray();
    List<String> storages = List.of(opts.get("storages").split(","));
    long seed = Long.parseLong(opts.get("seed"));
    Path work =
        Files.createDirectories(
            Path.of(opts.get("work"))
                .toAbsolutePath()
                .resolve(Long.toString(System.currentTimeMillis())));

    quietSpark();
    Map<String, WalStorage> open = new LinkedHashMap<>();
    Map<Cell, List<WalLoad.Result>> results = new LinkedHashMap<>();
    Map<Cell, String> failures = new LinkedHashMap<>();
    long started = System.nanoTime();
    try {
      for (String s : storages) {
        open.put(s, WalStorage.open(s, work, Double.parseDouble(opts.get("stall-scale"))));
      }
      // Warm-up (not recorded): both logs on every storage, for the JIT, class loading and each
      // storage's client (S3A's first requests), so that no measured cell pays them.
      for (WalStorage storage : open.values()) {
        for (WalContender c : WalContender.values()) {
          WriteAheadLog log =
              c.open(
                  storage.dir("warmup-" + c.label()),
                  storage.hadoop(),
                  storage.label().equals("s3"));
          try {
            WalLoad.run(log, 4, Math.max(10, records / 10), recordBytes, seed);
          } finally {
            log.close();
          }
        }
      }
      quietSpark();
      for (int round = 1; round <= rounds; round++) {
        for (WalStorage storage : open.values()) {
          for (int writers : writerCounts) {
            List<WalContender> order = new ArrayList<>(List.of(WalContender.values()));
            java.util.Collections.rotate(order, round - 1);
            for (WalContender c : order) {
              Cell cell = new Cell(storage.label(), writers, c);
              String name = "r" + round + "-w" + writers + "-" + c.label();
              WriteAheadLog log =
                  c.open(storage.dir(name), storage.hadoop(), storage.label().equals("s3"));
              try {
                WalLoad.Result r = WalLoad.run(log, writers, records, recordBytes, seed + round);
                results.computeIfAbsent(cell, k -> new ArrayList<>()).add(r);
                System.out.printf(
                    "round %d %-13s writers %d %-16s p50 %8.2f ms  p99 %8.2f ms  %9.1f records/s%n",
                    round,
                    storage.label(),
                    writers,
                    c.label(),
                    r.percentileMillis(0.50),
                    r.percentileMillis(0.99),
                    r.recordsPerSecond());
              } catch (Exception e) {
                failures.put(cell, e.toString());
                System.out.printf(
                    "round %d %s writers %d %s FAILED: %s%n",
                    round, storage.label(), writers, c.label(), e);
              } finally {
                log.close();
              }
            }
          }
        }
      }
    } finally {
      for (WalStorage s : open.values()) {
        s.close();
      }
    }
    String report =
        WalReport.markdown(opts, args, results, failures, (System.nanoTime() - started) / 1e9);
    Path out = Path.of(opts.get("out")).toAbsolutePath();
    Files.createDirectories(out.getParent());
    Files.writeString(out, report);
    System.out.println(report);
    System.out.println("Report: " + out);
    System.exit(0);
  }
}
