package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The hedged writers of one process, a component of its {@link ProcessResources}: one registry for
 * the three kinds of writes this module hedges. Each kind has writers of its own, never shared with
 * another kind: a writer's deadline learns from the latencies of the writes it publishes, and
 * changelogs of kilobytes, Spark's log entries and file-sink outputs of hundreds of megabytes would
 * each make the others' deadlines wrong. Within a kind, one writer per policy (its text names every
 * setting: writers of equal settings are one writer) and, for sink outputs, per size class of file.
 *
 * <p>Internal: public for the adapters' provider (its state commits) and for {@code
 * io.streamstate.spark.shared.checkpoint}.
 */
public final class Hedgers {
  /** What a hedged writer publishes. */
  public enum Kind {
    /** The state stores' commits (changelogs, segments, segment journal appends). */
    STATE_COMMITS,
    /** Spark's log entries, through the checkpoint file manager. */
    SPARK_LOGS,
    /**
     * The changelogs and snapshot zips of Spark's RocksDB provider, through the checkpoint file
     * manager ({@code io.streamstate.spark.shared.checkpoint.RocksDbUploads}).
     */
    SPARK_STATE_FILES,
    /**
     * The file sink's output files, through {@code io.streamstate.spark.HedgedFileCommitProtocol}.
     */
    SINK_OUTPUTS
  }

  private record Key(Kind kind, String policy, int sizeClass) {}

  private final Map<Key, HedgedWriter> writers = new LinkedHashMap<>();

  /** Whose pool the writers' creates run on. */
  private final ProcessResources resources;

  private Hedgers(ProcessResources resources) {
    this.resources = resources;
  }

  /** The registry of {@code resources}. */
  public static Hedgers of(ProcessResources resources) {
    return resources.component(Hedgers.class, () -> new Hedgers(resources));
  }

  /** The writer of {@code kind} with {@code policy}, made on first use. */
  public HedgedWriter writer(Kind kind, HedgePolicy policy) {
    return writer(kind, policy, 0);
  }

  /**
   * The writer of {@code kind} with {@code policy} for files of size class {@code sizeClass}, made
   * on first use with {@code policy} (so each size class has its own budget and deadline).
   */
  public synchronized HedgedWriter writer(Kind kind, HedgePolicy policy, int sizeClass) {
    return writers.computeIfAbsent(
        new Key(kind, policy.toString(), sizeClass), k -> new HedgedWriter(policy, resources));
  }

  /** The counters of every writer of {@code kind}, summed (cumulative). */
  public synchronized HedgeMetrics.Snapshot totals(Kind kind) {
    HedgeMetrics.Snapshot sum = HedgeMetrics.Snapshot.ZERO;
    for (Map.Entry<Key, HedgedWriter> e : writers.entrySet()) {
      if (e.getKey().kind() == kind) {
        sum = sum.plus(e.getValue().policy().metrics().snapshot());
      }
    }
    return sum;
  }
}
