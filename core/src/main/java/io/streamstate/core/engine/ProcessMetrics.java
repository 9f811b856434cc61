package io.streamstate.core.engine;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.commit.AsyncChangelogPublisher;
import io.streamstate.core.engine.local.OpenDatabases;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The engine's figures for a whole process (an executor JVM), a component of its {@link
 * ProcessResources}: counters summed over every store the process opened, and gauges read from the
 * process's shared objects when asked (the memory budget, pending async uploads, open instances).
 * For metrics systems that poll a process (Spark's, through {@code StreamStateMetricsPlugin}); a
 * store's own figures per commit are {@link StoreMetrics}, which feeds the counters here.
 *
 * <p>Counting is a {@link LongAdder} increment: cheap on the commit path, exact when read, not one
 * atomic cut across metrics while stores are working.
 */
public final class ProcessMetrics {
  /**
   * Whether a metric only grows (a counter, cumulative since the process started) or goes up and
   * down.
   */
  public enum Kind {
    COUNTER,
    GAUGE
  }

  /** Every metric, with its stable name (what metrics systems show) and its meaning. */
  public enum Metric {
    COMMITS(Kind.COUNTER, "commits", "versions committed by the process's stores"),
    COMMIT_TIME_MS(
        Kind.COUNTER, "commitTimeMs", "time spent in commits, ms, summed (durable write included)"),
    WARM_LOADS(Kind.COUNTER, "warmLoads", "loads from the local instance, reading nothing durable"),
    DURABLE_LOADS(
        Kind.COUNTER,
        "durableLoads",
        "loads from durable storage (first batch of a run, a moved partition, a lost local disk)"),
    DURABLE_LOAD_TIME_MS(
        Kind.COUNTER, "durableLoadTimeMs", "time spent in loads from durable storage, ms, summed"),
    CHANGELOGS_REPLAYED(
        Kind.COUNTER, "changelogsReplayed", "changelogs (or segment members) replayed by loads"),
    SNAPSHOTS_WRITTEN(Kind.COUNTER, "snapshotsWritten", "snapshots published"),
    SNAPSHOT_FAILURES(
        Kind.COUNTER,
        "snapshotFailures",
        "snapshots that failed (the state stays durable in changelogs; a later one tries again)"),
    HEDGES_FIRED(
        Kind.COUNTER,
        "hedgesFired",
        "commit writes (changelogs, segments, journal appends) hedged after their deadline"),
    HEDGES_WON(Kind.COUNTER, "hedgesWon", "hedged commit writes whose hedge copy completed first"),
    SNAPSHOT_HEDGES_FIRED(
        Kind.COUNTER,
        "snapshotHedgesFired",
        "snapshot file uploads (SSTs, manifests) hedged after their deadline"),
    SNAPSHOT_HEDGES_WON(
        Kind.COUNTER,
        "snapshotHedgesWon",
        "hedged snapshot file uploads whose hedge copy completed first"),
    SEGMENT_COMMITS(
        Kind.COUNTER, "segmentCommits", "commits published as members of a group commit's segment"),
    SEGMENTS_WRITTEN(
        Kind.COUNTER,
        "segmentsWritten",
        "group commit segments published (journal appends and segment files)"),
    JOURNAL_APPENDS(Kind.COUNTER, "journalAppends", "segments appended to a segment journal"),
    JOURNAL_APPEND_BYTES(
        Kind.COUNTER, "journalAppendBytes", "bytes appended to segment journals (records)"),
    JOURNAL_APPEND_TIME_MS(
        Kind.COUNTER,
        "journalAppendTimeMs",
        "time spent in segment journal appends (append and sync), ms, summed"),
    JOURNALS_CREATED(
        Kind.COUNTER, "journalsCreated", "segment journals created (the first, then one per roll)"),
    JOURNAL_APPENDS_IN_FLIGHT(
        Kind.GAUGE,
        "journalAppendsInFlight",
        "segment journal appends started and not yet synced: commits waiting for the journal"),
    VERSIONS_LOST(
        Kind.COUNTER,
        "versionsLost",
        "versions async durability lost when a store resumed from its newest durable version"),
    ASYNC_UPLOADS_PENDING(
        Kind.GAUGE,
        "asyncUploadsPending",
        "versions committed but not yet durable, summed over the async stores (0 in sync)"),
    ASYNC_UPLOAD_LAG_VERSIONS(
        Kind.GAUGE,
        "asyncUploadLagVersions",
        "the most versions any one async store is ahead of durable storage (0 in sync)"),
    MEMORY_CAP_BYTES(
        Kind.GAUGE,
        "memoryCapBytes",
        "the process's RocksDB memory budget (memoryCapBytes); 0 before the first store opens"),
    MEMORY_USED_BYTES(
        Kind.GAUGE,
        "memoryUsedBytes",
        "bytes the budget's cache holds: blocks and the memtables charged to it"),
    MEMORY_PINNED_BYTES(
        Kind.GAUGE,
        "memoryPinnedBytes",
        "bytes of the cache eviction cannot free now: blocks held by readers (open iterators)"
            + " and other pinned entries (about 1 MiB seen with no store open)"),
    OPEN_INSTANCES(Kind.GAUGE, "openInstances", "RocksDB instances open (one per loaded store)"),
    NATIVE_HEAP_TRIMS(
        Kind.GAUGE,
        "nativeHeapTrims",
        "times the C heap's free memory was given back to the operating system after RocksDB"
            + " freed some (nativeHeapTrimIntervalMs), so far"),
    NATIVE_HEAP_TRIM_TIME_MS(
        Kind.GAUGE,
        "nativeHeapTrimTimeMs",
        "time spent giving the C heap's free memory back, ms, summed (a thread of its own)"),
    HEAP_MIRROR_CAP_BYTES(
        Kind.GAUGE,
        "heapMirrorCapBytes",
        "the JVM heap the process's heap mirrors may hold (heapMirrorBytes); 0 before the first"
            + " store opens or with mirrors off"),
    HEAP_MIRROR_BYTES(
        Kind.GAUGE,
        "heapMirrorBytes",
        "JVM heap held by heap mirrors now: small stores' committed entries, 64 bytes an entry"
            + " over its key and value");

    private final Kind kind;
    private final String metricName;
    private final String description;

    Metric(Kind kind, String metricName, String description) {
      this.kind = kind;
      this.metricName = metricName;
      this.description = description;
    }

    public Kind kind() {
      return kind;
    }

    /** The stable name, camelCase, as metrics systems show it. */
    public String metricName() {
      return metricName;
    }

    public String description() {
      return description;
    }
  }

  /** Counters and the in-flight gauge; the other gauges are read from their owners. */
  private final Map<Metric, LongAdder> counts = new EnumMap<>(Metric.class);

  private final ProcessResources resources;

  private ProcessMetrics(ProcessResources resources) {
    this.resources = resources;
    for (Metric m : Metric.values()) {
      counts.put(m, new LongAdder());
    }
  }

  /** The metrics of {@code resources}'s process. */
  public static ProcessMetrics of(ProcessResources resources) {
    return resources.component(ProcessMetrics.class, () -> new ProcessMetrics(resources));
  }

  /**
   * Metrics of no process, for a store or a test that is not part of one (a {@link StoreMetrics}
   * built alone).
   */
  static ProcessMetrics detached() {
    return new ProcessMetrics(null);
  }

  /**
   * Adds {@code n} to {@code metric}, a counter (not a time) or {@link
   * Metric#JOURNAL_APPENDS_IN_FLIGHT} (+1 when an append starts, -1 when it returns).
   */
  public void add(Metric metric, long n) {
    if (isTime(metric)
        || (metric.kind == Kind.GAUGE && metric != Metric.JOURNAL_APPENDS_IN_FLIGHT)) {
      throw new IllegalArgumentException(metric + " is not a count");
    }
    counts.get(metric).add(n);
  }

  /** Adds a duration to a {@code ...TimeMs} counter: kept in ns, read in ms. */
  public void addNanos(Metric metric, long nanos) {
    if (!isTime(metric)) {
      throw new IllegalArgumentException(metric + " is not a time");
    }
    counts.get(metric).add(nanos);
  }

  private static boolean isTime(Metric metric) {
    return metric == Metric.COMMIT_TIME_MS
        || metric == Metric.DURABLE_LOAD_TIME_MS
        || metric == Metric.JOURNAL_APPEND_TIME_MS;
  }

  /** The metric's value now. */
  public long read(Metric metric) {
    return switch (metric) {
      case COMMIT_TIME_MS, DURABLE_LOAD_TIME_MS, JOURNAL_APPEND_TIME_MS ->
          counts.get(metric).sum() / 1_000_000L; // kept in ns: no rounding per event
      case ASYNC_UPLOADS_PENDING ->
          resources == null ? 0 : AsyncChangelogPublisher.pendingUploads(resources)[0];
      case ASYNC_UPLOAD_LAG_VERSIONS ->
          resources == null ? 0 : AsyncChangelogPublisher.pendingUploads(resources)[1];
      case MEMORY_CAP_BYTES -> budgetFigure(RocksDbMemoryBudget::capBytes);
      case MEMORY_USED_BYTES -> budgetFigure(RocksDbMemoryBudget::usedBytes);
      case MEMORY_PINNED_BYTES -> budgetFigure(RocksDbMemoryBudget::pinnedBytes);
      case OPEN_INSTANCES -> resources == null ? 0 : OpenDatabases.of(resources).count();
      case NATIVE_HEAP_TRIMS -> budgetFigure(b -> b.trimmer().trims());
      case NATIVE_HEAP_TRIM_TIME_MS -> budgetFigure(b -> b.trimmer().trimNanos() / 1_000_000L);
      case HEAP_MIRROR_CAP_BYTES -> budgetFigure(b -> b.heapMirrors().capBytes());
      case HEAP_MIRROR_BYTES -> budgetFigure(b -> b.heapMirrors().usedBytes());
      default -> counts.get(metric).sum();
    };
  }

  /** Every metric's value now, in declaration order. */
  public Map<Metric, Long> readAll() {
    Map<Metric, Long> all = new EnumMap<>(Metric.class);
    for (Metric m : Metric.values()) {
      all.put(m, read(m));
    }
    return all;
  }

  private long budgetFigure(java.util.function.ToLongFunction<RocksDbMemoryBudget> figure) {
    RocksDbMemoryBudget budget =
        resources == null ? null : RocksDbMemoryBudget.sharedIfPresent(resources);
    return budget == null ? 0 : figure.applyAsLong(budget);
  }
}
