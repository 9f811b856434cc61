package io.streamstate.core.hedge;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of one {@link HedgePolicy}, cumulative since it was created and shared by every store
 * that publishes through it. Read with {@link #snapshot()}; the Spark adapter exports them.
 */
public final class HedgeMetrics {
  final LongAdder writes = new LongAdder();
  final LongAdder hedgesFired = new LongAdder();
  final LongAdder hedgesAfterFailure = new LongAdder();
  final LongAdder hedgesWon = new LongAdder();
  final LongAdder hedgesSkippedForBudget = new LongAdder();
  final LongAdder losersCleaned = new LongAdder();
  final LongAdder cleanupFailures = new LongAdder();
  final LongAdder losersLeft = new LongAdder();
  final LongAdder hedgesFromReserve = new LongAdder();

  HedgeMetrics() {}

  /**
   * An immutable reading of all counters.
   *
   * @param writes publishes started (hedged or not)
   * @param hedgesFired alternate copies started, for a primary past its deadline or failed
   * @param hedgesAfterFailure of {@code hedgesFired}, those started because the primary failed
   *     before its deadline (the hedge served as the retry)
   * @param hedgesWon publishes whose alternate copy completed first
   * @param hedgesSkippedForBudget hedges that were due but not started because the budget was spent
   * @param losersCleaned losing copies that completed after the winner and were deleted
   * @param cleanupFailures deletes of losing copies that failed (the file is left for retention)
   * @param losersLeft losing copies whose create ended with an unknown outcome, left in place
   *     (never cleaned up on an unknown outcome; a torn or duplicate file for retention)
   * @param hedgesFromReserve of {@code hedgesFired}, those of writes stalled past {@link
   *     HedgePolicy#stalledAfter()} whose hedge the budget had refused, started with a reserve
   *     token (each also counted in {@code hedgesSkippedForBudget})
   */
  public record Snapshot(
      long writes,
      long hedgesFired,
      long hedgesAfterFailure,
      long hedgesWon,
      long hedgesSkippedForBudget,
      long losersCleaned,
      long cleanupFailures,
      long losersLeft,
      long hedgesFromReserve) {

    /** A reading without reserve hedges. */
    public Snapshot(
        long writes,
        long hedgesFired,
        long hedgesAfterFailure,
        long hedgesWon,
        long hedgesSkippedForBudget,
        long losersCleaned,
        long cleanupFailures,
        long losersLeft) {
      this(
          writes,
          hedgesFired,
          hedgesAfterFailure,
          hedgesWon,
          hedgesSkippedForBudget,
          losersCleaned,
          cleanupFailures,
          losersLeft,
          0);
    }

    /** No counts: the start of a sum. */
    public static final Snapshot ZERO = new Snapshot(0, 0, 0, 0, 0, 0, 0, 0);

    /** The sum of these counts and {@code other}'s (several writers' counters together). */
    public Snapshot plus(Snapshot other) {
      return new Snapshot(
          writes + other.writes,
          hedgesFired + other.hedgesFired,
          hedgesAfterFailure + other.hedgesAfterFailure,
          hedgesWon + other.hedgesWon,
          hedgesSkippedForBudget + other.hedgesSkippedForBudget,
          losersCleaned + other.losersCleaned,
          cleanupFailures + other.cleanupFailures,
          losersLeft + other.losersLeft,
          hedgesFromReserve + other.hedgesFromReserve);
    }

    /** The counts since {@code earlier}, a snapshot of the same metrics taken before this one. */
    public Snapshot since(Snapshot earlier) {
      return new Snapshot(
          writes - earlier.writes,
          hedgesFired - earlier.hedgesFired,
          hedgesAfterFailure - earlier.hedgesAfterFailure,
          hedgesWon - earlier.hedgesWon,
          hedgesSkippedForBudget - earlier.hedgesSkippedForBudget,
          losersCleaned - earlier.losersCleaned,
          cleanupFailures - earlier.cleanupFailures,
          losersLeft - earlier.losersLeft,
          hedgesFromReserve - earlier.hedgesFromReserve);
    }
  }

  /** Reads all counters (each exact; not one atomic cut across them while writes are running). */
  public Snapshot snapshot() {
    return new Snapshot(
        writes.sum(),
        hedgesFired.sum(),
        hedgesAfterFailure.sum(),
        hedgesWon.sum(),
        hedgesSkippedForBudget.sum(),
        losersCleaned.sum(),
        cleanupFailures.sum(),
        losersLeft.sum(),
        hedgesFromReserve.sum());
  }
}
