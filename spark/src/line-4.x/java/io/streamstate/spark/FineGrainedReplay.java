package io.streamstate.spark;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.format.Changelog;
import java.util.Collections;
import java.util.Iterator;
import java.util.OptionalLong;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RecordType$;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;

/**
 * Spark's {@code SupportsFineGrainedReplay} over the engine (what the state data source's {@code
 * snapshotStartBatchId} and {@code readChangeFeed} options need), for {@link StreamStateProvider}:
 *
 * <ul>
 *   <li>{@link #replay}: the state of a version rebuilt from the snapshot of exactly another
 *       ({@code VersionedStore.beginFromSnapshot}); no snapshot of that version on the version's
 *       lineage fails with {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED}, as Spark's RocksDB
 *       provider fails for a snapshot it lacks.
 *   <li>{@link #changes}: each version's changes from its changelog, as Spark's RocksDB provider's
 *       change reader returns them: {@code (put_record, key, value, version - 1)} and {@code
 *       (delete_record, key, null, version - 1)}, version by version. Within a version the order
 *       differs (ours is key order, RocksDB's the order of the calls), and a key changed several
 *       times in one batch appears once, with its last change (a changelog holds one change per
 *       key; RocksDB's holds every call): docs/protocol.md, "Change feed".
 * </ul>
 *
 * With checkpoint ids (checkpoint format v2), both follow the lineage of the commit the end id
 * names, as the provider's loads do.
 */
final class FineGrainedReplay {
  private FineGrainedReplay() {}

  static StateStore replay(
      StreamStateProvider provider,
      long snapshotVersion,
      long endVersion,
      boolean readOnly,
      Option<String> snapshotCheckpointId,
      Option<String> endCheckpointId) {
    provider.checkInitialized();
    // The end id names the lineage; the snapshot's commit is the one on it (the id Spark passes
    // for the snapshot version names that same commit).
    OptionalLong endCommit =
        CheckpointIds.parse(
            endCheckpointId.getOrElse(() -> null),
            StreamStateProviderBase.describe(provider.stateStoreId()),
            endVersion);
    // The same checks, and error classes, as RocksDBStateStoreProvider.replayStateFromSnapshot.
    if (snapshotVersion < 1) {
      throw LoadErrors.unexpectedVersion(snapshotVersion);
    }
    if (endVersion < snapshotVersion) {
      throw LoadErrors.unexpectedVersion(endVersion);
    }
    return (StateStore)
        provider.openLoaded(
            endVersion,
            endCommit,
            readOnly,
            false,
            engine -> engine.beginFromSnapshot(snapshotVersion, endVersion, endCommit));
  }

  static NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> changes(
      StreamStateProvider provider,
      long startVersion,
      long endVersion,
      Option<String> colFamilyName,
      Option<String> endCheckpointId) {
    provider.checkInitialized();
    String family =
        colFamilyName.isDefined() ? colFamilyName.get() : StreamStateProvider.DEFAULT_FAMILY;
    return new ChangeReader(
        provider.readChanges(startVersion, endVersion, endCheckpointId.getOrElse(() -> null)),
        provider.codec(family),
        family);
  }

  /** The changes of one column family, changelog by changelog; rows are fresh, never reused. */
  private static final class ChangeReader
      extends NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> {
    private final CloseableIterator<Changelog> changelogs;
    private final ColumnFamilyCodec codec;
    private final String family;
    private Iterator<Changelog.Change> changes = Collections.emptyIterator();
    private long batchId;

    ChangeReader(CloseableIterator<Changelog> changelogs, ColumnFamilyCodec codec, String family) {
      this.changelogs = changelogs;
      this.codec = codec;
      this.family = family;
    }

    @Override
    public Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> getNext() {
      while (!changes.hasNext()) {
        if (!changelogs.hasNext()) {
          finished_$eq(true);
          return null;
        }
        Changelog changelog = changelogs.next();
        batchId = changelog.version() - 1; // Spark's batch b commits version b + 1
        changes = Collections.emptyIterator();
        for (Changelog.FamilyChanges f : changelog.changes()) {
          if (f.family().equals(family)) {
            changes = f.changes().iterator();
          }
        }
      }
      Changelog.Change change = changes.next();
      UnsafeRow key = codec.decodeKey(change.key());
      if (change.isDelete()) {
        return new Tuple4<>(RecordType$.MODULE$.DELETE_RECORD(), key, null, batchId);
      }
      return new Tuple4<>(
          RecordType$.MODULE$.PUT_RECORD(), key, codec.decodeValue(change.value()), batchId);
    }

    @Override
    public void close() {
      changelogs.close();
    }
  }
}
