package io.streamstate.core.engine;

import io.streamstate.core.format.Changelog;
import java.util.Objects;

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
 * @param asyncMaxLagVersions 0 (the default) for {@code sync} durability: a commit returns once its
 *     changelog is durable. N &gt; 0 for {@code async}: a commit returns once applied locally, its
 *     upload follows in the background, and a commit waits while N uploads are pending; losing the
 *     process loses at most the N newest versions, and the next load resumes from the newest
 *     durable one, logging and counting the versions lost
 * @param inlineSstMaxBytes a snapshot carries a new SST (in no earlier snapshot) of at most this
 *     many bytes inside its manifest instead of as a shared file of its own, newest first, while
 *     the manifest carries at most twice this; so a small store snapshots as one file, and what a
 *     snapshot copies inline stays bounded. 0 makes every SST a shared file (default 2 MiB)
 * @param changelogCodec how commits store their changes in changelogs and segments (default {@link
 *     Changelog.Codec#LZ4}, through lz4-java, which Spark and Hadoop 3.3+ ship; {@link
 *     Changelog.Codec#DEFLATE} needs nothing but the JDK); readers need no setting, each payload
 *     names its codec
 * @param replayDebtPercent a commit after which a load would replay more changes (those committed
 *     since the last snapshot) than this percent of the store's keys starts a snapshot in the
 *     background, so that a restart's replay stays bounded by the state's size rather than by the
 *     snapshot interval; 0 turns it off (default 50)
 * @param replayDebtMinChanges ... and more than this many changes (default 1,000,000): a snapshot
 *     costs about a write of the whole state, so a store of a few hundred thousand keys whose every
 *     batch changes most of them would otherwise snapshot every few batches (a saturated window
 *     aggregation lost a fifth of its rows/s to it: issue 21 bench, section 35); a million changes
 *     replay in about a second, as ten versions of 100,000 changes do under the snapshot interval
 */
public record StoreOptions(
    int minVersionsToRetain,
    int snapshotInterval,
    long tornFileGraceMillis,
    int asyncMaxLagVersions,
    long inlineSstMaxBytes,
    Changelog.Codec changelogCodec,
    int replayDebtPercent,
    long replayDebtMinChanges) {
  public static final long DEFAULT_INLINE_SST_MAX_BYTES = 2L << 20;
  public static final int DEFAULT_REPLAY_DEBT_PERCENT = 50;
  public static final long DEFAULT_REPLAY_DEBT_MIN_CHANGES = 1_000_000;

  public StoreOptions {
    Objects.requireNonNull(changelogCodec, "changelogCodec");
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
    if (asyncMaxLagVersions < 0) {
      throw new IllegalArgumentException(
          "asyncMaxLagVersions must be >= 0 (0 = sync): " + asyncMaxLagVersions);
    }
    if (inlineSstMaxBytes < 0 || inlineSstMaxBytes > (256L << 20)) {
      throw new IllegalArgumentException(
          "inlineSstMaxBytes must be between 0 and 256 MiB: " + inlineSstMaxBytes);
    }
    if (replayDebtPercent < 0) {
      throw new IllegalArgumentException(
          "replayDebtPercent must be >= 0 (0 = off): " + replayDebtPercent);
    }
    if (replayDebtMinChanges < 0) {
      throw new IllegalArgumentException(
          "replayDebtMinChanges must be >= 0: " + replayDebtMinChanges);
    }
  }

  public static StoreOptions defaults() {
    return new StoreOptions(
        100,
        10,
        120_000,
        0,
        DEFAULT_INLINE_SST_MAX_BYTES,
        Changelog.Codec.LZ4,
        DEFAULT_REPLAY_DEBT_PERCENT,
        DEFAULT_REPLAY_DEBT_MIN_CHANGES);
  }

  public boolean isAsync() {
    return asyncMaxLagVersions > 0;
  }

  public StoreOptions withMinVersionsToRetain(int value) {
    return new StoreOptions(
        value,
        snapshotInterval,
        tornFileGraceMillis,
        asyncMaxLagVersions,
        inlineSstMaxBytes,
        changelogCodec,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  public StoreOptions withSnapshotInterval(int value) {
    return new StoreOptions(
        minVersionsToRetain,
        value,
        tornFileGraceMillis,
        asyncMaxLagVersions,
        inlineSstMaxBytes,
        changelogCodec,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  public StoreOptions withTornFileGraceMillis(long value) {
    return new StoreOptions(
        minVersionsToRetain,
        snapshotInterval,
        value,
        asyncMaxLagVersions,
        inlineSstMaxBytes,
        changelogCodec,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  /** {@code async} durability with at most {@code value} versions not yet durable; 0 = sync. */
  public StoreOptions withAsyncMaxLagVersions(int value) {
    return new StoreOptions(
        minVersionsToRetain,
        snapshotInterval,
        tornFileGraceMillis,
        value,
        inlineSstMaxBytes,
        changelogCodec,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  /** Inline SSTs of at most {@code value} bytes in snapshot manifests; 0 shares every SST. */
  public StoreOptions withInlineSstMaxBytes(long value) {
    return new StoreOptions(
        minVersionsToRetain,
        snapshotInterval,
        tornFileGraceMillis,
        asyncMaxLagVersions,
        value,
        changelogCodec,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  /** How commits store their changes; {@link Changelog.Codec#NONE} spends no CPU on it. */
  public StoreOptions withChangelogCodec(Changelog.Codec value) {
    return new StoreOptions(
        minVersionsToRetain,
        snapshotInterval,
        tornFileGraceMillis,
        asyncMaxLagVersions,
        inlineSstMaxBytes,
        value,
        replayDebtPercent,
        replayDebtMinChanges);
  }

  /** Replay-debt snapshots at {@code percent} of the store's keys, above {@code minChanges}. */
  public StoreOptions withReplayDebt(int percent, long minChanges) {
    return new StoreOptions(
        minVersionsToRetain,
        snapshotInterval,
        tornFileGraceMillis,
        asyncMaxLagVersions,
        inlineSstMaxBytes,
        changelogCodec,
        percent,
        minChanges);
  }
}
