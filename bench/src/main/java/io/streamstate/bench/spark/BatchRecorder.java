package io.streamstate.bench.spark;

import io.streamstate.core.hedge.HedgeMetrics;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * Records a row per progress of the query being measured, under the {@link BatchCsv}'s column
 * names: Spark's durations, state rows, heap, the simulated storage's counters and the JVM's hedges
 * ({@link HedgeColumns}) since the previous batch and, when asked (heap mode), a {@link
 * MemorySampler} sample. Registered once per session; {@link #start} names the query whose progress
 * counts.
 */
final class BatchRecorder extends StreamingQueryListener {
  private volatile Recording current;

  /**
   * Records the progress of the query named {@code name} from now on, up to {@code batches}
   * batches; with the counters of the simulated storage's {@code authority} (null: none) and, if
   * {@code sampleMemory}, memory samples.
   */
  Recording start(String name, int batches, String authority, boolean sampleMemory) {
    Recording rec =
        new Recording(name, batches, authority, Instant.now().toEpochMilli(), sampleMemory);
    current = rec;
    return rec;
  }

  /** Records nothing more (until the next {@link #start}). */
  void stop() {
    current = null;
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {}

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    StreamingQueryProgress p = event.progress();
    Recording rec = current;
    if (rec == null || !rec.name.equals(p.name())) {
      return;
    }
    Map<String, Long> d = p.durationMs();
    Map<String, Object> row = new HashMap<>();
    row.put("batchId", p.batchId());
    row.put("triggerMs", d.getOrDefault("triggerExecution", 0L));
    row.put("addBatchMs", d.getOrDefault("addBatch", 0L));
    // Spark's own log writes, timed by Spark: offsets/N before the batch, commits/N after it.
    row.put("walCommitMs", d.getOrDefault("walCommit", 0L));
    row.put("commitOffsetsMs", d.getOrDefault("commitOffsets", 0L));
    long commit = 0;
    long stateRows = 0;
    for (StateOperatorProgress op : p.stateOperators()) {
      commit += op.commitTimeMs();
      stateRows += op.numRowsTotal();
    }
    row.put("commitMs", commit);
    row.put("stateRows", stateRows);
    row.put("inputRows", p.numInputRows());
    Runtime rt = Runtime.getRuntime();
    row.put("heapMb", (rt.totalMemory() - rt.freeMemory()) >> 20);
    long end = Instant.parse(p.timestamp()).toEpochMilli() + d.getOrDefault("triggerExecution", 0L);
    row.put("sinceStartMs", end - rec.startEpochMs);
    long left = rec.done.getCount();
    if (rec.sampleMemory && left > 0 && (left <= 3 || p.batchId() % 3 == 0)) {
      // The last three batches (the report's figures) and every third before them (the chart).
      // On the listener thread, so the next batch is already running: its working memory is in
      // the figure, the same for every provider.
      row.putAll(MemorySampler.sample());
    }
    rec.add(row);
    rec.done.countDown();
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {}

  /** One query's progress rows. */
  static final class Recording {
    private final String name;
    private final CountDownLatch done;
    private final String authority;
    private final long startEpochMs;
    private final boolean sampleMemory;
    private final List<Map<String, Object>> rows = new ArrayList<>();
    private Map<String, Long> lastCounters;
    private HedgeMetrics.Snapshot[] lastHedges;

    private Recording(
        String name, int batches, String authority, long startEpochMs, boolean sampleMemory) {
      this.name = name;
      this.done = new CountDownLatch(batches);
      this.authority = authority;
      this.startEpochMs = startEpochMs;
      this.sampleMemory = sampleMemory;
      this.lastCounters =
          authority == null ? null : SimulatedFileSystem.counters(authority).snapshot();
      this.lastHedges = HedgeColumns.now();
    }

    /** Waits up to {@code ms} for all the batches asked for; whether they are all in. */
    boolean await(long ms) throws InterruptedException {
      return done.await(ms, TimeUnit.MILLISECONDS);
    }

    /** The rows recorded so far. */
    synchronized List<Map<String, Object>> rows() {
      return new ArrayList<>(rows);
    }

    /**
     * Adds the storage counters' increase and this JVM's hedges since the previous batch to {@code
     * row}, and keeps it unless all the batches asked for are in.
     */
    private synchronized void add(Map<String, Object> row) {
      if (authority != null) {
        Map<String, Long> now = SimulatedFileSystem.counters(authority).snapshot();
        for (String k : BatchCsv.COUNTERS) {
          row.put(k, now.getOrDefault(k, 0L) - lastCounters.getOrDefault(k, 0L));
        }
        lastCounters = now;
      }
      lastHedges = HedgeColumns.record(row, lastHedges);
      if (done.getCount() > 0) {
        rows.add(row);
      }
    }
  }
}
