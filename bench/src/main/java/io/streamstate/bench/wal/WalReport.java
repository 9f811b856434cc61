package io.streamstate.bench.wal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The benchmark's markdown: the machine, the options, one row per storage, writers and log. */
final class WalReport {
  private WalReport() {}

  static String markdown(
      Map<String, String> opts,
      String[] args,
      Map<WalBenchmark.Cell, List<WalLoad.Result>> results,
      Map<WalBenchmark.Cell, String> failures,
      double seconds) {
    StringBuilder md = new StringBuilder();
    md.append("Options: `").append(String.join(" ", args)).append("` (effective: ");
    opts.forEach((k, v) -> md.append("--").append(k).append(' ').append(v).append(' '));
    md.setLength(md.length() - 1);
    md.append(")\n\n");
    md.append("Machine: ").append(machine()).append("\n\n");
    md.append(String.format(Locale.ROOT, "Run time: %.0f s.%n%n", seconds));
    md.append(
        "| storage | writers | log | p50 ms | p99 ms | max ms | records/s (median of rounds) |"
            + " rounds | ours vs Spark: p50, p99, records/s |\n");
    md.append("|---|---|---|---|---|---|---|---|---|\n");
    for (Map.Entry<WalBenchmark.Cell, List<WalLoad.Result>> e : results.entrySet()) {
      WalBenchmark.Cell cell = e.getKey();
      Stats s = Stats.of(e.getValue());
      String ratio = "";
      if (cell.contender() == WalContender.STREAMSTATE) {
        List<WalLoad.Result> spark =
            results.get(new WalBenchmark.Cell(cell.storage(), cell.writers(), WalContender.SPARK));
        if (spark != null) {
          Stats o = Stats.of(spark);
          ratio =
              String.format(
                  Locale.ROOT,
                  "%.2fx, %.2fx, %.2fx",
                  s.p50 / o.p50,
                  s.p99 / o.p99,
                  s.throughput / o.throughput);
        }
      }
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %s | %.2f | %.2f | %.1f | %.0f | %d | %s |%n",
              cell.storage(),
              cell.writers(),
              cell.contender().label(),
              s.p50,
              s.p99,
              s.max,
              s.throughput,
              e.getValue().size(),
              ratio));
    }
    md.append(
        "\n(Latency percentiles over every write of every round; ratios below 1 are ours faster"
            + " for p50/p99, above 1 ours faster for records/s.)\n");
    if (!failures.isEmpty()) {
      md.append("\nFailed cells:\n\n");
      failures.forEach(
          (c, f) ->
              md.append("- ")
                  .append(c.storage())
                  .append(", ")
                  .append(c.writers())
                  .append(" writers, ")
                  .append(c.contender().label())
                  .append(": ")
                  .append(f)
                  .append('\n'));
    }
    return md.toString();
  }

  private record Stats(double p50, double p99, double max, double throughput) {
    static Stats of(List<WalLoad.Result> rounds) {
      long[] all = rounds.stream().flatMapToLong(r -> Arrays.stream(r.latenciesNanos())).toArray();
      WalLoad.Result pooled = new WalLoad.Result(all, 1);
      double[] tput =
          rounds.stream().mapToDouble(WalLoad.Result::recordsPerSecond).sorted().toArray();
      return new Stats(
          pooled.percentileMillis(0.50),
          pooled.percentileMillis(0.99),
          pooled.percentileMillis(1.0),
          tput[tput.length / 2]);
    }
  }

  private static String machine() {
    String cpu = "unknown CPU";
    try {
      cpu =
          Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
              .filter(l -> l.startsWith("model name"))
              .findFirst()
              .map(l -> l.substring(l.indexOf(':') + 1).trim())
              .orElse(cpu);
    } catch (IOException e) {
      // not Linux
    }
    return String.format(
        Locale.ROOT,
        "%s, %d CPUs visible to the JVM, %s %s, Java %s, max heap %d MiB",
        cpu,
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("os.name"),
        System.getProperty("os.version"),
        System.getProperty("java.version"),
        Runtime.getRuntime().maxMemory() >> 20);
  }
}
