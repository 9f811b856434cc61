package io.streamstate.bench.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.DoubleStream;
import java.util.stream.Stream;

/**
 * Reads the per-batch CSV files of a results folder; writes {@code results.md} and, through {@link
 * ReportCharts}, the PNG charts.
 */
final class Report {
  /** Batches before this id are warm-up (first batch, codegen, state filling) and not counted. */
  static final int FIRST_MEASURED_BATCH = 2;

  /** The "batches > 5 s" column counts batches longer than this (ms). */
  static final double LONG_BATCH_MS = 5_000;

  private static final String OURS = "streamstate";

  private Report() {}

  record Row(Map<String, String> v) {
    String s(String k) {
      return v.getOrDefault(k, "");
    }

    double d(String k) {
      String x = v.get(k);
      return x == null || x.isEmpty() ? Double.NaN : Double.parseDouble(x);
    }
  }

  static void write(Path dir, BenchSettings settings, long seconds) throws IOException {
    List<Row> rows = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.getFileName().toString().startsWith("batches-")).toList()) {
        List<String> lines = Files.readAllLines(f);
        if (lines.isEmpty()) {
          continue;
        }
        String[] header = lines.get(0).split(",", -1);
        for (String line : lines.subList(1, lines.size())) {
          String[] cols = line.split(",", -1);
          Map<String, String> m = new LinkedHashMap<>();
          for (int i = 0; i < header.length && i < cols.length; i++) {
            m.put(header[i], cols[i]);
          }
          rows.add(new Row(m));
        }
      }
    }
    // group key: workload | keys | storage  ->  provider -> rows (matrix and heap cells)
    Map<String, Map<String, List<Row>>> groups = new TreeMap<>();
    for (Row r : rows) {
      if (r.s("phase").equals("saturation")) {
        continue;
      }
      String g = r.s("workload") + "|" + r.s("keys") + "|" + r.s("storage");
      groups
          .computeIfAbsent(g, k -> new TreeMap<>(Report::providerOrder))
          .computeIfAbsent(r.s("provider"), k -> new ArrayList<>())
          .add(r);
    }
    Path charts = dir.resolve("charts");
    Files.createDirectories(charts);
    List<String> order = settings.providers.stream().map(p -> p.label).toList();
    StringBuilder md = new StringBuilder();
    md.append(
        "# Side-by-side benchmark: streamstate vs Spark "
            + org.apache.spark.package$.MODULE$.SPARK_VERSION()
            + " built-in state store providers\n\n");
    StringBuilder sizes = new StringBuilder();
    for (long keys : settings.keySizes) {
      sizes.append(
          String.format(
              Locale.ROOT,
              "%s%s keys at %d rows per batch, %d steady batches",
              sizes.length() == 0 ? "" : "; ",
              humanKeys(Long.toString(keys)),
              settings.rowsPerBatch(keys),
              settings.batches(keys)));
    }
    md.append(
        String.format(
            Locale.ROOT,
            "Mode **%s**: %d round(s); %s per run (batches %d+ counted); %s matrix; %d shuffle"
                + " partitions, local[%d], `%s` sink, simulated stalls scaled by %.1f. Total run"
                + " time %s (%s).%n%n",
            settings.mode,
            settings.rounds,
            sizes,
            FIRST_MEASURED_BATCH,
            settings.matrix,
            settings.shufflePartitions,
            settings.localThreads,
            settings.sink,
            settings.stallScale,
            seconds < 0 ? "not recorded (report rewritten)" : seconds + " s",
            System.getProperty("os.name")
                + ", "
                + Runtime.getRuntime().availableProcessors()
                + " cores"));
    if (settings.heap()) {
      heapSection(md, groups, settings, order, dir);
    }
    md.append(
        "Batch duration = `triggerExecution` (ms). ×ours = this provider's figure divided by"
            + " ours in the same group (>1: ours is faster); ours (in bold) is `streamstate` if"
            + " the group has it, else the first of our variants named in `--providers`."
            + " batches > 5 s = counted batches longer than 5,000 ms. commit = state"
            + " `commitTimeMs` summed over partitions and operators (phases differ per provider)."
            + " Per batch, simulated storages only (`–` on local): files = durable files written"
            + " (all: state files, the sink's files and Spark's offset and commit logs), state"
            + " files = those under the checkpoint's `state/` directory, sink files = those of"
            + " the file sink (`--sink parquet`: `part-` files and its `_spark_metadata` log),"
            + " state syncs = `hsync`s of files kept open"
            + " under `state/` (segment journal appends: durable writes that create no file),"
            + " meta ops = storage metadata operations"
            + " (create, open, rename, delete, mkdirs, status, list, block allocations of open"
            + " files: every request but the data write and sync), state meta ops = the part of"
            + " meta ops on paths under `state/` (the provider's own, plus Spark's state schema"
            + " and operator metadata files there), sink meta ops = the part on the sink's"
            + " directory; the rest is Spark's offset, commit and metadata logs, the same for"
            + " every provider. DN waits = data writes and syncs that waited for a slow DataNode"
            + " of their pipeline (slow-datanode-periods). MB = MB written. heap = JVM heap"
            + " used after the batch (MB, p50, whole JVM). recovery = ms from start() of the"
            + " restarted query to the end of its first batch (median over rounds). rows/s ="
            + " input rows / sum of batch durations (trigger back to back).\n\n");
    md.append(
        "| workload | keys | storage | provider | n | p50 | p95 | p99 | max | p50 ×ours | p99"
            + " ×ours | batches > 5 s | commit p50 | addBatch p50 | files | state files | sink"
            + " files | state syncs | meta ops | state meta ops | sink meta ops | DN waits | MB |"
            + " heap | state rows | recovery | rows/s |\n");
    md.append(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
            + "---|---|---|---|---|---|\n");
    for (Map.Entry<String, Map<String, List<Row>>> g : groups.entrySet()) {
      String[] key = g.getKey().split("\\|");
      Map<String, double[]> durations = new LinkedHashMap<>();
      Map<String, List<Row>> steadyByProvider = new LinkedHashMap<>();
      for (Map.Entry<String, List<Row>> p : g.getValue().entrySet()) {
        List<Row> steady =
            p.getValue().stream()
                .filter(r -> r.s("phase").equals("steady"))
                .filter(r -> r.d("batchId") >= FIRST_MEASURED_BATCH)
                .toList();
        steadyByProvider.put(p.getKey(), steady);
        durations.put(p.getKey(), sorted(steady.stream().mapToDouble(r -> r.d("triggerMs"))));
      }
      String reference = reference(g.getValue().keySet(), order);
      double[] ours = durations.get(reference);
      for (Map.Entry<String, List<Row>> p : g.getValue().entrySet()) {
        String provider = p.getKey();
        List<Row> steady = steadyByProvider.get(provider);
        double[] t = durations.get(provider);
        List<Row> recovery =
            p.getValue().stream().filter(r -> r.s("phase").equals("recovery")).toList();
        double metadataOps = mean(steady.stream().mapToDouble(r -> metaOps(r, null)));
        double stateMetadataOps =
            mean(steady.stream().mapToDouble(r -> metaOps(r, SimulatedCounters.Area.STATE)));
        double sinkMetadataOps =
            mean(steady.stream().mapToDouble(r -> metaOps(r, SimulatedCounters.Area.SINK)));
        double rowsIn = steady.stream().mapToDouble(r -> r.d("inputRows")).sum();
        double msTotal = steady.stream().mapToDouble(r -> r.d("triggerMs")).sum();
        md.append(
            String.join(
                    " | ",
                    "| " + key[0],
                    humanKeys(key[1]),
                    key[2],
                    provider.equals(reference) ? "**" + provider + "**" : provider,
                    Integer.toString(t.length),
                    ms(pct(t, 50)),
                    ms(pct(t, 95)),
                    ms(pct(t, 99)),
                    ms(pct(t, 100)),
                    ratio(pct(t, 50), ours == null ? Double.NaN : pct(ours, 50)),
                    ratio(pct(t, 99), ours == null ? Double.NaN : pct(ours, 99)),
                    Long.toString(Arrays.stream(t).filter(x -> x > LONG_BATCH_MS).count()),
                    ms(pct(sorted(steady.stream().mapToDouble(r -> r.d("commitMs"))), 50)),
                    ms(pct(sorted(steady.stream().mapToDouble(r -> r.d("addBatchMs"))), 50)),
                    num(mean(steady.stream().mapToDouble(r -> r.d("filesWritten")))),
                    num(mean(steady.stream().mapToDouble(r -> r.d("stateFilesWritten")))),
                    num(mean(steady.stream().mapToDouble(r -> r.d("sinkFilesWritten")))),
                    num(mean(steady.stream().mapToDouble(r -> r.d("stateSync")))),
                    num(metadataOps),
                    num(stateMetadataOps),
                    num(sinkMetadataOps),
                    num(mean(steady.stream().mapToDouble(r -> r.d("slowNodeWaits")))),
                    num(mean(steady.stream().mapToDouble(r -> r.d("bytesWritten"))) / 1e6),
                    ms(pct(sorted(steady.stream().mapToDouble(r -> r.d("heapMb"))), 50)),
                    ms(pct(sorted(steady.stream().mapToDouble(r -> r.d("stateRows"))), 100)),
                    recovery.isEmpty()
                        ? "–"
                        : ms(
                            pct(
                                sorted(recovery.stream().mapToDouble(r -> r.d("sinceStartMs"))),
                                50)),
                    msTotal > 0 ? ms(rowsIn * 1000 / msTotal) : "–")
                + " |\n");
      }
      String base = (key[0] + "-" + humanKeys(key[1]) + "-" + key[2]).replace('/', '_');
      ReportCharts.cdf(
          charts.resolve("cdf-" + base + ".png"),
          g.getKey().replace('|', ' '),
          durations,
          reference);
      ReportCharts.time(
          charts.resolve("timeline-" + base + ".png"),
          "Batch duration over time: " + g.getKey().replace('|', ' '),
          g.getValue(),
          "triggerMs",
          "batch duration (ms)",
          reference);
    }
    saturationSection(md, rows, order);
    md.append(
        "\nCharts: `charts/cdf-<workload>-<keys>-<storage>.png` (batch duration CDF per provider,"
            + " log x) and `charts/timeline-<...>.png` (batch duration per batch id, every round,"
            + " steady phase incl. warm-up). Raw data: `batches-round<N>.csv`, `runs.csv`.\n");
    Files.writeString(dir.resolve("results.md"), md.toString());
  }

  /**
   * Ours in a group of providers: {@code streamstate} if the group has it, else the first of our
   * variants in {@code order} (the {@code --providers} order) that it has, else the first of ours
   * it has in the providers' declared order; null if it has none of ours. The no-durability
   * baseline is never ours.
   */
  static String reference(Collection<String> labels, List<String> order) {
    if (labels.contains(OURS)) {
      return OURS;
    }
    List<String> candidates = new ArrayList<>(order);
    for (Provider p : Provider.values()) {
      candidates.add(p.label);
    }
    for (String label : candidates) {
      if (labels.contains(label) && isOurs(label)) {
        return label;
      }
    }
    return null;
  }

  private static boolean isOurs(String label) {
    for (Provider p : Provider.values()) {
      if (p.label.equals(label)) {
        return p.ours();
      }
    }
    return false;
  }

  /**
   * The "meta ops" of a batch: its storage requests of every kind but the data write and sync
   * (create, open, rename, delete, mkdirs, status, list, addBlock); with an {@code area} ({@code
   * STATE} or {@code SINK}), only those on paths under {@code state/} or {@code sink/} (the CSV's
   * {@code stateCreate}, {@code sinkOpen}, ... columns); null: all. NaN when the batch has no such
   * counts (local disk, or a CSV written before those columns existed).
   */
  static double metaOps(Row r, SimulatedCounters.Area area) {
    double sum = 0;
    for (LatencyModel.Op op : LatencyModel.Op.values()) {
      if (op != LatencyModel.Op.WRITE && op != LatencyModel.Op.SYNC) {
        double n = r.d(area == null ? op.counterName() : SimulatedCounters.areaKey(area, op));
        // Block allocations of open files were counted from the segment journal on: none before.
        sum += op == LatencyModel.Op.ADD_BLOCK && Double.isNaN(n) ? 0 : n;
      }
    }
    return sum;
  }

  /**
   * Throughput at saturation: per workload and provider, input rows over the sum of batch durations
   * of the counted saturation batches (large fixed batches, trigger back to back), all rounds
   * pooled.
   */
  private static void saturationSection(StringBuilder md, List<Row> rows, List<String> order) {
    Map<String, Map<String, List<Row>>> byWorkload = new TreeMap<>();
    for (Row r : rows) {
      if (r.s("phase").equals("saturation") && r.d("batchId") >= FIRST_MEASURED_BATCH) {
        byWorkload
            .computeIfAbsent(r.s("workload"), k -> new TreeMap<>(Report::providerOrder))
            .computeIfAbsent(r.s("provider"), k -> new ArrayList<>())
            .add(r);
      }
    }
    if (byWorkload.isEmpty()) {
      return;
    }
    md.append("\n## Throughput at saturation\n");
    for (Map<String, List<Row>> byProvider : byWorkload.values()) {
      saturationTable(md, byProvider, order);
    }
  }

  private static void saturationTable(
      StringBuilder md, Map<String, List<Row>> byProvider, List<String> order) {
    Map<String, Double> rate = new LinkedHashMap<>();
    for (Map.Entry<String, List<Row>> e : byProvider.entrySet()) {
      double in = e.getValue().stream().mapToDouble(r -> r.d("inputRows")).sum();
      double ms = e.getValue().stream().mapToDouble(r -> r.d("triggerMs")).sum();
      rate.put(e.getKey(), ms > 0 ? in * 1000 / ms : Double.NaN);
    }
    Row any = byProvider.values().iterator().next().get(0);
    md.append(
        String.format(
            Locale.ROOT,
            "%n%s, %s keys, local disk: fixed batches of %s input rows, trigger back to back,"
                + " batches %d+ counted, every round pooled. rows/s = input rows / sum of batch"
                + " durations; ÷ours = this provider's rows/s divided by ours (in bold; <1: fewer"
                + " rows/s than ours).%n%n",
            any.s("workload"),
            humanKeys(any.s("keys")),
            any.s("inputRows"),
            FIRST_MEASURED_BATCH));
    md.append(
        "| provider | n | batch p50 | batch max | commit p50 | state rows | rows/s | ÷ours |\n");
    md.append("|---|---|---|---|---|---|---|---|\n");
    String reference = reference(byProvider.keySet(), order);
    Double ours = reference == null ? null : rate.get(reference);
    for (Map.Entry<String, List<Row>> e : byProvider.entrySet()) {
      double[] t = sorted(e.getValue().stream().mapToDouble(r -> r.d("triggerMs")));
      md.append(
          String.join(
                  " | ",
                  "| " + (e.getKey().equals(reference) ? "**" + e.getKey() + "**" : e.getKey()),
                  Integer.toString(t.length),
                  ms(pct(t, 50)),
                  ms(pct(t, 100)),
                  ms(pct(sorted(e.getValue().stream().mapToDouble(r -> r.d("commitMs"))), 50)),
                  ms(pct(sorted(e.getValue().stream().mapToDouble(r -> r.d("stateRows"))), 100)),
                  ms(rate.get(e.getKey())),
                  ratio(rate.get(e.getKey()), ours == null ? Double.NaN : ours))
              + " |\n");
    }
  }

  /**
   * Heap mode: per provider, the heap used after a full GC and the resident set, before the query
   * (baseline) and after each of the last three batches (the state is full by then).
   */
  private static void heapSection(
      StringBuilder md,
      Map<String, Map<String, List<Row>>> groups,
      BenchSettings settings,
      List<String> order,
      Path dir) {
    md.append("## Memory at the large state size\n\n");
    md.append(
        "Each provider in a JVM of its own (-Xmx "
            + BenchSettings.childXmx()
            + "). heap = heap used after a forced full GC (`System.gc()`, MemoryMXBean), MB;"
            + " RSS = the process's resident set (`VmRSS`: heap, RocksDB's native memory,"
            + " everything), MB. baseline = before the query started (Spark session up). The"
            + " samples after a batch are taken on the listener thread while the next batch"
            + " runs, so they include one batch's working memory (the same input for every"
            + " provider). last 3 = median (max) of the samples after the last three batches."
            + " heap ×ours = this provider's last-3 median minus baseline, divided by"
            + " ours (in bold; >1: ours holds less). RSS max = the largest sample of the steady"
            + " batches. recovery = ms from start() of the restarted query to the end of its"
            + " first batch, after every store of the stopped run was closed (Spark's"
            + " `StateStore.stop`): each store loads from durable storage into a new local"
            + " directory.\n\n");
    md.append(
        "| workload | keys | provider | state rows | heap baseline | heap last 3 | heap Δ |"
            + " heap ×ours | RSS baseline | RSS last 3 | RSS Δ | RSS max | batch p50 |"
            + " recovery |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Map.Entry<String, Map<String, List<Row>>> g : groups.entrySet()) {
      String[] key = g.getKey().split("\\|");
      int batches = settings.batches(Long.parseLong(key[1]));
      String reference = reference(g.getValue().keySet(), order);
      Map<String, double[]> deltas = new LinkedHashMap<>();
      List<String[]> lines = new ArrayList<>();
      for (Map.Entry<String, List<Row>> p : g.getValue().entrySet()) {
        List<Row> base =
            p.getValue().stream().filter(r -> r.s("phase").equals("baseline")).toList();
        List<Row> last =
            p.getValue().stream()
                .filter(r -> r.s("phase").equals("steady"))
                .filter(r -> r.d("batchId") >= batches - 3)
                .filter(r -> !Double.isNaN(r.d("heapAfterGcMb")))
                .toList();
        double heapBase = pct(sorted(base.stream().mapToDouble(r -> r.d("heapAfterGcMb"))), 50);
        double rssBase = pct(sorted(base.stream().mapToDouble(r -> r.d("rssMb"))), 50);
        double[] heap = sorted(last.stream().mapToDouble(r -> r.d("heapAfterGcMb")));
        double[] rss = sorted(last.stream().mapToDouble(r -> r.d("rssMb")));
        double[] t =
            sorted(
                p.getValue().stream()
                    .filter(r -> r.s("phase").equals("steady"))
                    .filter(r -> r.d("batchId") >= FIRST_MEASURED_BATCH)
                    .mapToDouble(r -> r.d("triggerMs")));
        double heapDelta = pct(heap, 50) - heapBase;
        deltas.put(p.getKey(), new double[] {heapDelta});
        List<Row> recovery =
            p.getValue().stream().filter(r -> r.s("phase").equals("recovery")).toList();
        double[] steadyRss =
            sorted(
                p.getValue().stream()
                    .filter(r -> r.s("phase").equals("steady"))
                    .mapToDouble(r -> r.d("rssMb")));
        lines.add(
            new String[] {
              key[0],
              humanKeys(key[1]),
              p.getKey().equals(reference) ? "**" + p.getKey() + "**" : p.getKey(),
              ms(pct(sorted(p.getValue().stream().mapToDouble(r -> r.d("stateRows"))), 100)),
              ms(heapBase),
              ms(pct(heap, 50)) + " (" + ms(pct(heap, 100)) + ")",
              ms(heapDelta),
              p.getKey(),
              ms(rssBase),
              ms(pct(rss, 50)) + " (" + ms(pct(rss, 100)) + ")",
              ms(pct(rss, 50) - rssBase),
              ms(pct(steadyRss, 100)),
              ms(pct(t, 50)),
              recovery.isEmpty() ? "–" : ms(recovery.get(0).d("sinceStartMs"))
            });
      }
      double[] ours = deltas.get(reference);
      for (String[] line : lines) {
        line[7] = ratio(deltas.get(line[7])[0], ours == null ? Double.NaN : ours[0]);
        md.append("| ").append(String.join(" | ", line)).append(" |\n");
      }
      String base = (key[0] + "-" + humanKeys(key[1]) + "-" + key[2]).replace('/', '_');
      try {
        timeChart(md, dir, base, g.getKey().replace('|', ' '), g.getValue(), reference);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    md.append("\n");
  }

  /** Heap after GC per batch id and provider, one chart per group. */
  private static void timeChart(
      StringBuilder md,
      Path dir,
      String base,
      String title,
      Map<String, List<Row>> byProvider,
      String reference)
      throws IOException {
    Path charts = dir.resolve("charts");
    Files.createDirectories(charts);
    ReportCharts.time(
        charts.resolve("heap-" + base + ".png"),
        "Heap after full GC: " + title,
        byProvider,
        "heapAfterGcMb",
        "heap used after GC (MB)",
        reference);
    md.append("\nChart: `charts/heap-").append(base).append(".png` (heap after GC per batch).\n");
  }

  private static int providerOrder(String a, String b) {
    return Integer.compare(providerIndex(a), providerIndex(b));
  }

  private static int providerIndex(String label) {
    Provider[] all = Provider.values();
    for (int i = 0; i < all.length; i++) {
      if (all[i].label.equals(label)) {
        return i;
      }
    }
    return all.length;
  }

  private static String humanKeys(String keys) {
    long k = Long.parseLong(keys);
    return k >= 1_000_000 ? k / 1_000_000 + "M" : k / 1000 + "k";
  }

  private static double[] sorted(DoubleStream s) {
    double[] a = s.filter(x -> !Double.isNaN(x)).toArray();
    Arrays.sort(a);
    return a;
  }

  private static double mean(DoubleStream s) {
    return s.filter(x -> !Double.isNaN(x)).average().orElse(Double.NaN);
  }

  /** Nearest-rank percentile of a sorted array (p=100: max). */
  static double pct(double[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  private static String ms(double x) {
    return Double.isNaN(x) ? "–" : String.format(Locale.ROOT, "%.0f", x);
  }

  private static String num(double x) {
    if (Double.isNaN(x)) {
      return "–";
    }
    return String.format(Locale.ROOT, x >= 100 ? "%.0f" : x >= 10 ? "%.1f" : "%.2f", x);
  }

  private static String ratio(double x, double ours) {
    if (Double.isNaN(x) || Double.isNaN(ours) || ours <= 0) {
      return "–";
    }
    return String.format(Locale.ROOT, "%.2f", x / ours);
  }
}
