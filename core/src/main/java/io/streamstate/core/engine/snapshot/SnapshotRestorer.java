package io.streamstate.core.engine.snapshot;

import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.local.LocalSpace;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Restores a snapshot as a store's local instance (docs/protocol.md, "Load and recovery", l3):
 * reads and verifies its manifest, copies each shared SST into a new local directory verifying its
 * frame and length, writes the inline files, and opens RocksDB on them. Which snapshot to restore
 * is the load's choice.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotRestorer {
  private final Storage storage;
  private final SnapshotHistory history;

  /**
   * @param history told of every snapshot restored
   */
  public SnapshotRestorer(Storage storage, SnapshotHistory history) {
    this.storage = storage;
    this.history = history;
  }

  /**
   * Restores snapshot {@code name} into {@code local}, which holds no instance. Its SSTs become the
   * instance's confirmed set: a later snapshot reuses them.
   *
   * @return the manifest restored
   * @throws CorruptFileException the manifest or an SST does not verify (the snapshot is unusable;
   *     no instance is opened)
   * @throws MissingFileException the manifest or an SST is gone
   */
  public SnapshotManifest restore(StoreLayout.SnapshotName name, LocalInstance local) {
    SnapshotManifest manifest = StoreFiles.readManifest(storage, name);
    Path dir = local.newDbDir();
    try {
      Map<String, String> restored = copyFiles(manifest, dir, local.space());
      local.openRestored(dir, manifest.version(), manifest.commitId(), restored);
    } catch (RuntimeException e) {
      // No instance was opened on them: the copies go now, or a disk that filled during the
      // restore would stay full for the retry (and an unusable snapshot's would stay too).
      LocalInstance.deleteRecursively(dir);
      RuntimeException diskFull =
          local.space().diskFullOrNull("restoring snapshot " + manifest.version(), e);
      throw diskFull != null ? diskFull : e;
    }
    history.restored(manifest.version());
    return manifest;
  }

  /**
   * Checks that snapshot {@code name} could be restored, without restoring it: its manifest
   * verifies and holds what its name says, and every shared SST it names exists, verifies and holds
   * the length the manifest lists; the checks {@link #restore} makes while it copies. For tools
   * that check a checkpoint without loading it (the streamstate CLI's {@code verify}, through
   * {@code engine.recovery.LineageCheck}).
   *
   * @return the manifest
   * @throws CorruptFileException the manifest or an SST does not verify (the snapshot is unusable)
   * @throws MissingFileException the manifest or an SST is gone
   */
  public SnapshotManifest verify(StoreLayout.SnapshotName name) {
    SnapshotManifest manifest = StoreFiles.readManifest(storage, name);
    for (SnapshotManifest.Entry e : manifest.files()) {
      if (e.isShared()) {
        checkLength(
            manifest, e, FramedFile.verifiedPayloadLength(storage, e.sharedName(), FileKind.SST));
      }
    }
    return manifest;
  }

  /** An SST whose payload has another length than its manifest lists is corrupt. */
  private void checkLength(SnapshotManifest manifest, SnapshotManifest.Entry e, long length) {
    if (length != e.length()) {
      throw new CorruptFileException(
          FramedFile.location(storage, e.sharedName())
              + " is corrupt: it holds "
              + length
              + " bytes but snapshot "
              + manifest.version()
              + " lists "
              + e.length());
    }
  }

  /** Copies the manifest's files into {@code dir}; returns local to shared name of its SSTs. */
  private Map<String, String> copyFiles(SnapshotManifest manifest, Path dir, LocalSpace space) {
    Map<String, String> restored = new HashMap<>();
    try {
      Files.createDirectories(dir);
      for (SnapshotManifest.Entry e : manifest.files()) {
        Path target = dir.resolve(e.localName());
        space.checkRoomFor(target, e.length());
        if (e.isShared()) {
          FramedFile.copyPayload(storage, e.sharedName(), FileKind.SST, target);
          checkLength(manifest, e, Files.size(target));
          restored.put(e.localName(), e.sharedName());
        } else {
          Files.write(target, e.inlineContent());
        }
      }
    } catch (IOException e) {
      throw new StreamStateException("Cannot restore snapshot into " + dir + ": " + e, e);
    }
    return restored;
  }
}
