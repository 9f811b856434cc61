package io.streamstate.bench.spark;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * The benchmark's options: parsing, validation and the defaults of each mode ({@code short}, {@code
 * full}, {@code heap}; the table in {@code bench/README.md}), and the child-JVM protocol: the
 * orchestrator passes a child its own options ({@link #args}) followed by {@code --child-round N
 * --dir DIR [--child-cell N]} ({@link #childArgs}).
 */
final class BenchSettings {
  /** Child-JVM protocol: the round the child runs. */
  static final String CHILD_ROUND = "--child-round";

  /** Child-JVM protocol: heap mode's one cell of the round that the child runs. */
  static final String CHILD_CELL = "--child-cell";

  /** Child-JVM protocol: the results folder of the run. */
  static final String DIR = "--dir";

  /** The options as given, without the child-JVM protocol's: what a child JVM is passed. */
  final List<String> args = new ArrayList<>();

  String mode = "short";
  String out = "bench/target/results";
  String dir;
  int childRound = -1;
  int childCell = -1;
  String reportOnly;
  int rounds;
  Integer batchesOverride;
  Long rowsPerBatchOverride;
  List<String> storages;
  List<Workload> workloads;
  List<Provider> providers;
  List<Long> keySizes;
  int shufflePartitions = 4;
  int localThreads = 2;
  String matrix;
  long saturationRows = -1;
  int saturationBatches;
  double stallScale;
  int warmupBatches = 8;

  /** {@code noop} (Spark's sink that discards) or {@code parquet} (Spark's file sink). */
  String sink = "noop";

  /** Extra session confs ({@code --conf k=v,k=v}), for every cell: to measure a knob. */
  final Map<String, String> confs = new LinkedHashMap<>();

  static BenchSettings parse(String[] argv) {
    BenchSettings s = new BenchSettings();
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      String v = i + 1 < argv.length ? argv[i + 1] : null;
      if (v == null) {
        throw new IllegalArgumentException("Missing value after " + a);
      }
      switch (a) {
        case "--mode" -> s.mode = v;
        case "--out" -> s.out = v;
        case DIR -> s.dir = v;
        case CHILD_ROUND -> s.childRound = Integer.parseInt(v);
        case CHILD_CELL -> s.childCell = Integer.parseInt(v);
        case "--report-only" -> s.reportOnly = v;
        case "--rounds" -> s.rounds = Integer.parseInt(v);
        case "--batches" -> s.batchesOverride = Integer.parseInt(v);
        case "--rows-per-batch" -> s.rowsPerBatchOverride = Long.parseLong(v);
        case "--storages" -> s.storages = List.of(v.split(","));
        case "--workloads" -> s.workloads = Stream.of(v.split(",")).map(Workload::byLabel).toList();
        case "--providers" -> s.providers = Stream.of(v.split(",")).map(Provider::byLabel).toList();
        case "--keys" -> s.keySizes = Stream.of(v.split(",")).map(Long::parseLong).toList();
        case "--shuffle-partitions" -> s.shufflePartitions = Integer.parseInt(v);
        case "--local-threads" -> s.localThreads = Integer.parseInt(v);
        case "--matrix" -> s.matrix = v;
        case "--saturation-rows" -> s.saturationRows = Long.parseLong(v);
        case "--saturation-batches" -> s.saturationBatches = Integer.parseInt(v);
        case "--warmup-batches" -> s.warmupBatches = Integer.parseInt(v);
        case "--sink" -> s.sink = v;
        case "--conf" -> {
          for (String kv : v.split(",")) {
            int eq = kv.indexOf('=');
            if (eq < 1) {
              throw new IllegalArgumentException("--conf takes key=value[,key=value]: " + kv);
            }
            s.confs.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
          }
        }
        default -> throw new IllegalArgumentException("Unknown argument " + a);
      }
      i++;
      if (!a.equals(CHILD_ROUND) && !a.equals(DIR) && !a.equals(CHILD_CELL)) {
        s.args.add(a);
        s.args.add(v);
      }
    }
    s.applyDefaults();
    s.validate();
    return s;
  }

  /** The defaults of the mode, for every option not given. */
  private void applyDefaults() {
    boolean full = full();
    boolean heap = heap();
    if (rounds == 0) {
      rounds = full ? 3 : 1;
    }
    if (keySizes == null) {
      keySizes =
          full ? List.of(100_000L, 10_000_000L) : heap ? List.of(10_000_000L) : List.of(100_000L);
    }
    if (storages == null) {
      storages = heap ? List.of("local") : List.of("local", "slow-datanode", "busy-namenode", "s3");
    }
    if (workloads == null) {
      // tws on request only (--workloads tws): Spark runs it on its RocksDB provider only.
      workloads =
          heap
              ? List.of(Workload.WINDOW_AGG)
              : Stream.of(Workload.values()).filter(w -> w != Workload.TWS).toList();
    }
    if (providers == null) {
      providers =
          heap
              // 10M keys take about 6 min per provider on 2 quiet cores: the two the issue
              // compares by default, `--providers streamstate,hdfs,rocksdb` adds RocksDB.
              ? List.of(Provider.STREAMSTATE, Provider.HDFS)
              // streamstate-nohedge and streamstate-nogroup are on request only (--providers),
              // for the effect of hedging and of group commit.
              : Stream.of(Provider.values()).filter(p -> !p.onRequestOnly()).toList();
    }
    if (matrix == null) {
      matrix = mode.equals("short") ? "trimmed" : "full";
    }
    if (saturationRows < 0) {
      saturationRows = heap ? 0 : full ? 500_000 : 100_000;
    }
    if (saturationBatches == 0) {
      saturationBatches = full ? 10 : 5;
    }
    stallScale = full ? 1.0 : 0.1;
  }

  private void validate() {
    if (!List.of("short", "full", "heap").contains(mode)) {
      throw new IllegalArgumentException("--mode is short, full or heap, not " + mode);
    }
    if (!matrix.equals("full") && !matrix.equals("trimmed")) {
      throw new IllegalArgumentException("--matrix is full or trimmed, not " + matrix);
    }
    if (!sink.equals("noop") && !sink.equals("parquet")) {
      throw new IllegalArgumentException("--sink is noop or parquet, not " + sink);
    }
    if (shufflePartitions < 1 || localThreads < 1) {
      throw new IllegalArgumentException("--shuffle-partitions and --local-threads must be >= 1");
    }
    for (String storage : storages) {
      if (!storage.equals("local") && !LatencyModel.isKnown(storage)) {
        throw new IllegalArgumentException("Unknown storage " + storage);
      }
    }
  }

  /**
   * The arguments of the child JVM that runs {@code round} (in heap mode only its {@code cell},
   * else -1) into the results folder {@code dir}: these options, then the protocol's.
   */
  List<String> childArgs(int round, Path dir, int cell) {
    List<String> child = new ArrayList<>(args);
    child.add(CHILD_ROUND);
    child.add(Integer.toString(round));
    child.add(DIR);
    child.add(dir.toString());
    if (cell >= 0) {
      child.add(CHILD_CELL);
      child.add(Integer.toString(cell));
    }
    return child;
  }

  /** Whether this JVM is a child that runs one round ({@code --child-round}). */
  boolean child() {
    return childRound >= 0;
  }

  /**
   * Extra flags for each child JVM, {@code -Dbench.childJvmArgs="..."} split at spaces, with {@code
   * {round}} and {@code {cell}} replaced (e.g. a JFR recording per child: {@code
   * -XX:StartFlightRecording=filename=/tmp/r{round}c{cell}.jfr}).
   */
  static List<String> childJvmArgs(int round, int cell) {
    String flags = System.getProperty("bench.childJvmArgs", "").trim();
    List<String> args = new ArrayList<>();
    for (String flag : flags.isEmpty() ? new String[0] : flags.split("\\s+")) {
      args.add(
          flag.replace("{round}", String.valueOf(round)).replace("{cell}", String.valueOf(cell)));
    }
    return args;
  }

  /** The heap of a child JVM: {@code -Dbench.childXmx}, 6g unless set. */
  static String childXmx() {
    return System.getProperty("bench.childXmx", "6g");
  }

  boolean full() {
    return mode.equals("full");
  }

  boolean heap() {
    return mode.equals("heap");
  }

  /** Whether queries write Parquet through Spark's file sink ({@code --sink parquet}). */
  boolean fileSink() {
    return sink.equals("parquet");
  }

  /**
   * Fails if a provider of this run names a class that is not on the class path (the tail-free
   * variants' commit protocol, when this build does not have it).
   */
  void requireClasses() {
    requireClasses(BenchSettings::onClassPath);
  }

  /** {@link #requireClasses()}, with {@code onClassPath} saying which classes there are. */
  void requireClasses(Predicate<String> onClassPath) {
    for (Provider p : providers) {
      for (String c : p.requiredClasses()) {
        if (!onClassPath.test(c)) {
          throw new IllegalArgumentException(
              "Provider "
                  + p.label
                  + " needs "
                  + c
                  + " (set as "
                  + Provider.COMMIT_PROTOCOL
                  + "), which is not on the class path: build a version of the spark module that"
                  + " has it, or leave "
                  + p.label
                  + " out of --providers");
        }
      }
    }
  }

  /** Whether {@code className} can be loaded (without initializing it). */
  static boolean onClassPath(String className) {
    try {
      Class.forName(className, false, BenchSettings.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  int batches(long keys) {
    if (batchesOverride != null) {
      return batchesOverride;
    }
    if (heap()) {
      // The state is full after `keys` input rows (batch 9 at keys/10 rows per batch); the
      // samples after batches 9, 10 and 11 are the figures.
      return 12;
    }
    if (!full()) {
      return 6;
    }
    return keys > 1_000_000 ? 40 : 30;
  }

  long rowsPerBatch(long keys) {
    if (rowsPerBatchOverride != null) {
      return rowsPerBatchOverride;
    }
    if (heap()) {
      return Math.max(1, keys / 10);
    }
    return keys > 1_000_000 ? 500_000 : keys / 5;
  }

  long cellTimeoutMs(Cell cell) {
    if (heap()) {
      return 30 * 60_000L;
    }
    long perBatch = cell.keys() > 1_000_000 || cell.rowsPerBatch() > 200_000 ? 60_000L : 15_000L;
    return perBatch * (cell.batches() + 4);
  }
}
