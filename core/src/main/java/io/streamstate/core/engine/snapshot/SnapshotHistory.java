package io.streamstate.core.engine.snapshot;

import java.util.concurrent.ConcurrentSkipListSet;

/**
 * The snapshots one store instance wrote or restored: the newest (what maintenance measures the
 * snapshot interval from, and what a forced snapshot is answered with) and the versions of the
 * others, which tell retention when its base may have moved (r1).
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotHistory {
  /** Written under the store's lock; read without it. */
  private volatile long last = -1;

  private final ConcurrentSkipListSet<Long> seen = new ConcurrentSkipListSet<>();

  /** The newest snapshot this instance wrote or restored, or -1. */
  public long last() {
    return last;
  }

  /** Written under the store's lock; read without it. */
  private volatile long lastPublished = -1;

  /** The newest snapshot this instance published (wrote, not restored), or -1. */
  public long lastPublished() {
    return lastPublished;
  }

  /** A snapshot of {@code version} was restored; called under the store's lock. */
  public void restored(long version) {
    add(version);
  }

  /** A snapshot of {@code version} was published by this instance; under the store's lock. */
  public void published(long version) {
    add(version);
    lastPublished = Math.max(lastPublished, version);
  }

  private void add(long version) {
    last = Math.max(last, version);
    seen.add(version);
  }

  /** Whether a snapshot was written or restored above {@code base} and at or below {@code top}. */
  public boolean anyAbove(long base, long top) {
    return !seen.subSet(base, false, top, true).isEmpty();
  }

  /** Forgets the snapshots below {@code base} (retention's base moved there). */
  public void forgetBelow(long base) {
    seen.headSet(base).clear();
  }
}
