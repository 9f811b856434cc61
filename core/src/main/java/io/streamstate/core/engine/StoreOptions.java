package io.streamstate.core.engine;

/**
 * Tuning of one store. Every field has a default ({@link #defaults()}); the Spark adapter maps its
 * configuration keys onto these.
 *
 * @param minVersionsToRetain retention keeps what loading any of the newest this many versions
 *     needs (Spark's {@code minBatchesToRetain}, default 100)
 * @param snapshotInterval maintenance snapshots a store once it is this many versions past its last
 *     snapshot (default 10)
 * @param tornFileGraceMillis a file that does not verify and is older than this is taken to be the
 *     leftover of a crashed writer and may be removed; younger, it may still be being written
 *     (default 120 s). Also the minimum age of an unreferenced SST before retention deletes it.
 */
public record StoreOptions(
    int minVersionsToRetain, int snapshotInterval, long tornFileGraceMillis) {
  public StoreOptions {
    if (minVersionsToRetain < 1) {
      throw new IllegalArgumentException(
          "minVersionsToRetain must be >= 1: " + minVersionsToRetain);
    }
    if (snapshotInterval < 1) {
      throw new IllegalArgumentException("snapshotInterval must be >= 1: " + snapshotInterval);
    }
    if (tornFileGraceMillis < 0) {
      throw new IllegalArgumentException(
          "tornFileGraceMillis must be >= 0: " + tornFileGraceMillis);
    }
  }

  public static StoreOptions defaults() {
    return new StoreOptions(100, 10, 120_000);
  }

  public StoreOptions withMinVersionsToRetain(int value) {
    return new StoreOptions(value, snapshotInterval, tornFileGraceMillis);
  }

  public StoreOptions withSnapshotInterval(int value) {
    return new StoreOptions(minVersionsToRetain, value, tornFileGraceMillis);
  }

  public StoreOptions withTornFileGraceMillis(long value) {
    return new StoreOptions(minVersionsToRetain, snapshotInterval, value);
  }
}
