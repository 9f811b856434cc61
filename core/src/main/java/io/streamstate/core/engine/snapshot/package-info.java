/**
 * Snapshots of a store (docs/protocol.md, "Snapshot", and l3 of "Load and recovery"): which are
 * taken and when ({@link SnapshotScheduler}), the upload of a local checkpoint's SSTs and manifest
 * ({@link SnapshotUploader}) and the restore of one as a local instance ({@link SnapshotRestorer}).
 *
 * <p>Internal: public only for the engine's other packages; no API promise to users.
 */
package io.streamstate.core.engine.snapshot;
