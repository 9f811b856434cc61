package io.streamstate.bench.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Which cells a round runs, in which order. Providers are innermost (A B C D E A B C D E ...) and
 * their order is rotated by one each round, so that machine drift hits all alike; the matrix (key
 * sizes, storages, workloads) comes first, then the saturation cells, and before both the warm-up,
 * not recorded.
 */
final class RoundPlan {
  private final BenchSettings settings;

  RoundPlan(BenchSettings settings) {
    this.settings = settings;
  }

  /** The providers in the order of {@code round}: {@code --providers} rotated by {@code round}. */
  List<Provider> providers(int round) {
    List<Provider> providers = settings.providers;
    List<Provider> order = new ArrayList<>();
    for (int p = 0; p < providers.size(); p++) {
      order.add(providers.get((p + round) % providers.size()));
    }
    return order;
  }

  /**
   * The cells of one round, providers innermost in the round's order; then the saturation cells
   * (each workload, local disk, the first key size, {@code --saturation-rows} per batch), providers
   * in the same order.
   */
  List<Cell> cells(int round) {
    List<Provider> order = providers(round);
    List<Cell> cells = new ArrayList<>();
    String kind = settings.heap() ? "heap" : "matrix";
    for (long keys : settings.keySizes) {
      for (String storage : settings.storages) {
        for (Workload w : settings.workloads) {
          for (Provider provider : order) {
            if (runs(provider, w, storage)) {
              cells.add(
                  new Cell(
                      id(cells.size()),
                      kind,
                      provider,
                      w,
                      keys,
                      storage,
                      settings.rowsPerBatch(keys),
                      settings.batches(keys)));
            }
          }
        }
      }
    }
    if (settings.saturationRows > 0) {
      for (Workload w : settings.workloads) {
        for (Provider provider : order) {
          if (w.runsOn(provider)) {
            cells.add(
                new Cell(
                    id(cells.size()),
                    "saturation",
                    provider,
                    w,
                    settings.keySizes.get(0),
                    "local",
                    settings.saturationRows,
                    settings.saturationBatches));
          }
        }
      }
    }
    return cells;
  }

  /**
   * The warm-up of a round, on local disk: each workload once, briefly (code generation), then
   * every provider in the round's order at the matrix's first size for {@code --warmup-batches}
   * batches (JIT of the hot paths at full batch size: with only the brief part, the first cells
   * after it ran 1.5x slower for their whole run).
   */
  List<Cell> warmUp(int round) {
    List<Cell> cells = new ArrayList<>();
    for (Workload w : settings.workloads) {
      cells.add(
          new Cell(
              "warmup-" + w.label,
              "warmup",
              w.runsOn(Provider.HDFS) ? Provider.HDFS : Provider.ROCKSDB,
              w,
              10_000,
              "local",
              2_000,
              3));
    }
    long keys = settings.keySizes.get(0);
    for (Provider provider : providers(round)) {
      cells.add(
          new Cell(
              "warmup-" + provider.label,
              "warmup",
              provider,
              settings.workloads.get(0),
              keys,
              "local",
              settings.rowsPerBatch(keys),
              settings.warmupBatches));
    }
    return cells;
  }

  /**
   * Whether the trimmed matrix (short mode's default, to stay under 10 minutes) runs this
   * combination: the no-durability baseline on local disk only, and on {@code s3} (the slowest
   * storage) the seed job only.
   */
  boolean runs(Provider provider, Workload workload, String storage) {
    if (!workload.runsOn(provider)) {
      return false; // transformWithState: Spark 4.2 runs it on its RocksDB provider only
    }
    if (settings.matrix.equals("full")) {
      return true;
    }
    if (provider.discardsState && !storage.equals("local")) {
      return false;
    }
    return !storage.equals("s3") || workload == Workload.WINDOW_AGG;
  }

  private static String id(int n) {
    return String.format(Locale.ROOT, "%03d", n);
  }
}
