package io.streamstate.core.engine.snapshot;

import io.streamstate.core.ProcessResources;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;

/**
 * Restores a snapshot as a store's local instance (docs/protocol.md, "Load and recovery", l3):
 * reads and verifies its manifest, copies each shared SST into a new local directory verifying its
 * frame and length, writes the inline files, and opens RocksDB on them. Which snapshot to restore
 * is the load's choice.
 *
 * <p>The SSTs of one restore are copied side by side on the process's download pool ({@link
 * #downloads}): on an object store each copy is a GET whose latency and per-stream bandwidth add up
 * when copied one after another (a 10M-key store's 41 MB in 11 files took about a second from the
 * bench's simulated S3, issue 21 section 33), and a restart's first batch waits for its loads.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotRestorer {
  /** Threads of the process-wide pool that copies restores' SSTs (Flink's transfer default). */
  static final int DOWNLOAD_THREADS = 4;

  private final Storage storage;
  private final SnapshotHistory history;
  private final Executor downloads;

  /** A restorer that copies in the calling thread, one file after another (tools, tests). */
  public SnapshotRestorer(Storage storage, SnapshotHistory history) {
    this(storage, history, Runnable::run);
  }

  /**
   * @param history told of every snapshot restored
   * @param downloads where one restore's SST copies run side by side ({@link #downloads}); the
   *     restore returns or fails only once every copy it started has ended
   */
  public SnapshotRestorer(Storage storage, SnapshotHistory history, Executor downloads) {
    this.storage = storage;
    this.history = history;
    this.downloads = downloads;
  }

  /**
   * The pool that copies the SSTs of restores: {@value #DOWNLOAD_THREADS} daemon threads for the
   * whole process (ending after a minute idle), copies queued beyond that. The copies wait on
   * storage far more than they use a core (each verifies its frame's checksum as it streams).
   */
  public static Executor downloads(ProcessResources resources) {
    return resources.boundedPool("snapshot-download", DOWNLOAD_THREADS);
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

  /**
   * Copies the manifest's files into {@code dir}, the SSTs side by side on {@link #downloads};
   * returns local to shared name of its SSTs. Returns or throws only once every copy has ended, so
   * that a failed restore's caller deletes a directory nothing writes into any more; the failure
   * thrown is that of the first file in the manifest's order that failed.
   */
  private Map<String, String> copyFiles(SnapshotManifest manifest, Path dir, LocalSpace space) {
    Map<String, String> restored = new HashMap<>();
    List<CompletableFuture<Void>> copies = new ArrayList<>();
    try {
      Files.createDirectories(dir);
      // Room for every file before any copy starts: copies running side by side do not count
      // against the disk until they have written.
      long needed = 0;
      for (SnapshotManifest.Entry e : manifest.files()) {
        needed += e.length();
        space.checkRoomFor(dir.resolve(e.localName()), needed);
      }
      for (SnapshotManifest.Entry e : manifest.files()) {
        Path target = dir.resolve(e.localName());
        if (e.isShared()) {
          copies.add(CompletableFuture.runAsync(() -> copySst(manifest, e, target), downloads));
          restored.put(e.localName(), e.sharedName());
        } else {
          Files.write(target, e.inlineContent());
        }
      }
    } catch (IOException e) {
      awaitAll(copies);
      throw new StreamStateException("Cannot restore snapshot into " + dir + ": " + e, e);
    } catch (RuntimeException e) {
      awaitAll(copies);
      throw e;
    }
    RuntimeException failed = awaitAll(copies);
    if (failed != null) {
      throw failed;
    }
    return restored;
  }

  private void copySst(SnapshotManifest manifest, SnapshotManifest.Entry e, Path target) {
    FramedFile.copyPayload(storage, e.sharedName(), FileKind.SST, target);
    long length;
    try {
      length = Files.size(target);
    } catch (IOException io) {
      throw new StreamStateException("Cannot read the size of " + target + ": " + io, io);
    }
    checkLength(manifest, e, length);
  }

  /** Waits for every copy; returns the first one's failure in their order, or null. */
  private static RuntimeException awaitAll(List<CompletableFuture<Void>> copies) {
    RuntimeException first = null;
    for (CompletableFuture<Void> copy : copies) {
      try {
        copy.join();
      } catch (CompletionException e) {
        if (first == null) {
          first =
              e.getCause() instanceof RuntimeException cause
                  ? cause
                  : new StreamStateException("A snapshot copy failed: " + e.getCause(), e);
        }
      }
    }
    return first;
  }
}
