package io.streamstate.bench.spark;

import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.spark.shared.HedgeCounters;
import java.util.Map;

/**
 * The per-batch CSV's hedging columns: for each kind of hedged write of this JVM (state commits,
 * Spark's logs, file-sink outputs), the hedges fired, those paid by the reserve for stalled writes,
 * and those the budget refused, since the previous batch. JVM-wide counters: a batch's row also
 * holds what a neighbouring batch's late writes did, and all runs of a round share the JVM.
 */
final class HedgeColumns {
  private static final String[] KINDS = {"state", "log", "sink"};

  static final String[] NAMES = {
    "stateHedges", "stateHedgesReserve", "stateHedgesSkipped",
    "logHedges", "logHedgesReserve", "logHedgesSkipped",
    "sinkHedges", "sinkHedgesReserve", "sinkHedgesSkipped"
  };

  private HedgeColumns() {}

  /** The counters now, one per kind. */
  static HedgeMetrics.Snapshot[] now() {
    return new HedgeMetrics.Snapshot[] {
      HedgeCounters.stateCommits(), HedgeCounters.sparkLogs(), HedgeCounters.sinkOutputs()
    };
  }

  /** Puts the counts since {@code last} into {@code row}; returns the counters now. */
  static HedgeMetrics.Snapshot[] record(Map<String, Object> row, HedgeMetrics.Snapshot[] last) {
    HedgeMetrics.Snapshot[] now = now();
    for (int i = 0; i < KINDS.length; i++) {
      HedgeMetrics.Snapshot d = now[i].since(last[i]);
      row.put(KINDS[i] + "Hedges", d.hedgesFired());
      row.put(KINDS[i] + "HedgesReserve", d.hedgesFromReserve());
      row.put(KINDS[i] + "HedgesSkipped", d.hedgesSkippedForBudget());
    }
    return now;
  }
}
