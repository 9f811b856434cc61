package io.streamstate.core.engine.snapshot;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CommitIds;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Uploads one local RocksDB checkpoint of a store as a snapshot: the SSTs no confirmed snapshot
 * holds (s2), then the manifest (s3) (docs/protocol.md, "Snapshot"). Only bytes and names: which
 * snapshot to take, when, and what its publication changes are {@link SnapshotScheduler}'s.
 *
 * <p>Every create goes through the {@link HedgedWriter} it is given when that hedges (the store's
 * writer's {@link HedgedWriter#companion companion}: the commits' settings, but latencies and
 * budget of its own), as changelogs do (docs/protocol.md, "Hedged snapshot uploads"):
 *
 * <ul>
 *   <li>An SST's primary name is content-addressed and shared: a taken name is verified and
 *       referenced, and a primary that loses its race is never deleted here (another snapshot, of
 *       this store or of another instance, may reference it); unreferenced, it is retention's once
 *       older than {@code tornFileGraceMillis}. Its hedge goes to an attempt-unique name ({@link
 *       StoreLayout#hedgeSst}), deleted if it loses.
 *   <li>The manifest's hedge goes to {@link StoreLayout#hedgeSnapshot}. A losing primary manifest
 *       is left for retention (it is a complete snapshot, and retention may have chosen it as a
 *       base already); a losing hedge copy is deleted (retention prefers the primary name of a
 *       commit while it verifies).
 * </ul>
 *
 * Without a hedger, or with hedging disabled, each file is one plain create in the calling thread.
 *
 * <p>Names the process's one pool for background snapshot uploads ({@link #background}).
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotUploader {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotUploader.class);
  private static final byte[] NO_BYTES = new byte[0];

  /** Threads of the process-wide pool of background snapshot uploads. */
  static final int BACKGROUND_THREADS = 2;

  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final StoreOptions options;
  private final HedgedWriter hedger;
  private final StoreMetrics metrics;

  public SnapshotUploader(
      String storeName,
      Storage storage,
      StoreLayout layout,
      StoreOptions options,
      HedgedWriter hedger,
      StoreMetrics metrics) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.options = options;
    this.hedger = hedger;
    this.metrics = metrics;
  }

  /**
   * The pool that uploads the snapshots stores take in the background: {@value #BACKGROUND_THREADS}
   * daemon threads for the whole process (ending after a minute idle), tasks queued beyond that.
   * Bounded so that snapshots of many stores never crowd out the executor's tasks; each store has
   * at most one upload queued or running, so the queue is bounded by the number of stores. A task
   * that waits on a stalled create holds one thread until a hedge wins or the create ends.
   */
  public static Executor background(ProcessResources resources) {
    return resources.boundedPool("snapshot-upload", BACKGROUND_THREADS);
  }

  /**
   * A published snapshot.
   *
   * @param name the manifest's name (primary or hedge)
   * @param shared local SST name to durable SST name, for later snapshots to reuse; empty if the
   *     name was taken by another instance's manifest (whose SSTs may differ from ours)
   */
  record Published(String name, Map<String, String> shared) {}

  /**
   * Uploads {@code checkpoint}: s2, then s3. Checks {@code stopped} before each create and returns
   * null, having published no manifest, once it says so (the store closed).
   *
   * @throws StreamStateException the upload failed (nothing references what it uploaded)
   */
  Published upload(LocalCheckpoint checkpoint, BooleanSupplier stopped) {
    Map<String, String> shared = new HashMap<>();
    SnapshotManifest manifest = uploadFiles(checkpoint, shared, stopped);
    // I1: the manifest is created only after every SST it names is durable (or verified there).
    if (manifest == null || stopped.getAsBoolean()) {
      return null;
    }
    byte[] payload = manifest.encode();
    String primary = layout.snapshot(checkpoint.version, checkpoint.commitId);
    ManifestCopy winner;
    if (hedges()) {
      ManifestCopy first = new ManifestCopy(primary, payload, false);
      ManifestCopy hedge =
          new ManifestCopy(
              layout.hedgeSnapshot(checkpoint.version, checkpoint.commitId), payload, true);
      HedgedPublish published = hedger.publish(first, hedge, NO_BYTES);
      countHedge(published, payload.length);
      winner = published.hedgeWon() ? hedge : first;
    } else {
      winner = new ManifestCopy(primary, payload, false);
      winner.write(NO_BYTES);
    }
    if (winner.taken) {
      // Another instance snapshotted this commit of this version: the same state. Its manifest
      // may reference other SSTs than ours, so ours are not confirmed for reuse.
      LOG.info("Store {}: snapshot {} already exists", storeName, checkpoint.version);
      return new Published(winner.name, Map.of());
    }
    metrics.countSnapshotWritten(framedLength(payload.length));
    return new Published(winner.name, shared);
  }

  private boolean hedges() {
    return hedger != null && hedger.policy().isEnabled();
  }

  private void countHedge(HedgedPublish published, long payloadLength) {
    metrics.countSnapshotHedge(published, framedLength(payloadLength));
  }

  private static long framedLength(long payloadLength) {
    return FramedFile.framedLength(payloadLength);
  }

  /** s2: the manifest of the checkpoint, its new shared SSTs uploaded; null once stopped. */
  private SnapshotManifest uploadFiles(
      LocalCheckpoint checkpoint, Map<String, String> shared, BooleanSupplier stopped) {
    List<SnapshotManifest.Entry> entries = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> s = Files.list(checkpoint.dir)) {
      files = s.sorted().toList();
    } catch (IOException e) {
      throw new StreamStateException("Cannot list checkpoint " + checkpoint.dir + ": " + e, e);
    }
    try {
      Set<Path> inline = sstsToInline(files, checkpoint.confirmed);
      for (Path f : files) {
        String localName = f.getFileName().toString();
        long length = Files.size(f);
        if (localName.endsWith(".sst") && !inline.contains(f)) {
          String sharedName = checkpoint.confirmed.get(localName);
          StoreLayout.SstName confirmed =
              sharedName == null ? null : StoreLayout.parseSst(sharedName);
          // I9: reused without upload only if a manifest of this instance confirmed it.
          if (confirmed != null && confirmed.length() == length) {
            metrics.countSstReused();
          } else {
            if (stopped.getAsBoolean()) {
              return null;
            }
            sharedName = uploadSst(checkpoint, f, length);
          }
          shared.put(localName, sharedName);
          entries.add(SnapshotManifest.Entry.shared(localName, length, sharedName));
        } else {
          entries.add(SnapshotManifest.Entry.inline(localName, Files.readAllBytes(f)));
        }
      }
    } catch (IOException e) {
      throw new StreamStateException("Cannot read checkpoint " + checkpoint.dir + ": " + e, e);
    }
    return new SnapshotManifest(checkpoint.version, checkpoint.commitId, entries);
  }

  /**
   * The new SSTs (in no confirmed snapshot) that go inline in the manifest: each of at most {@code
   * inlineSstMaxBytes}, newest first (RocksDB numbers its files in order), while the manifest
   * carries at most twice that. A small store then snapshots as one file, since a create costs more
   * than a few MB of bytes on HDFS and S3; older SSTs, the likelier to live on, are shared once and
   * reused by later snapshots, so what one snapshot copies inline stays bounded.
   */
  private Set<Path> sstsToInline(List<Path> files, Map<String, String> confirmed)
      throws IOException {
    long max = options.inlineSstMaxBytes();
    Set<Path> inline = new HashSet<>();
    long total = 0;
    for (int i = files.size() - 1; i >= 0 && max > 0; i--) {
      Path f = files.get(i);
      String localName = f.getFileName().toString();
      if (!localName.endsWith(".sst") || confirmed.containsKey(localName)) {
        continue;
      }
      long length = Files.size(f);
      if (length <= max && total + length <= 2 * max) {
        inline.add(f);
        total += length;
      }
    }
    return inline;
  }

  /** Uploads one SST (hedged if the store hedges); returns the durable name to reference. */
  private String uploadSst(LocalCheckpoint checkpoint, Path file, long length) throws IOException {
    String hash = sha256(file);
    SharedSstCopy primary = new SharedSstCopy(checkpoint, layout.sst(hash, length), file);
    String name;
    boolean created;
    if (hedges()) {
      HedgeSstCopy hedge =
          new HedgeSstCopy(checkpoint, layout.hedgeSst(hash, length, CommitIds.next()), file);
      HedgedPublish published = hedger.publish(primary, hedge, NO_BYTES);
      countHedge(published, length);
      name = published.name();
      created = published.hedgeWon() || !primary.existed;
    } else {
      name = primary.write(NO_BYTES);
      created = !primary.existed;
    }
    if (created) {
      metrics.countSstUploaded(framedLength(length));
    } else {
      metrics.countSstReused();
    }
    return name;
  }

  /** Runs {@code create} while holding a use of the checkpoint it reads from. */
  private static void readingCheckpoint(LocalCheckpoint checkpoint, Runnable create) {
    if (!checkpoint.retain()) {
      throw new RetryableException(
          "Checkpoint " + checkpoint.dir + " is gone (the snapshot ended); nothing was created");
    }
    try {
      create.run();
    } finally {
      checkpoint.release();
    }
  }

  /**
   * An SST under its content-addressed name. A taken name is the same content unless torn: it is
   * verified and referenced (a torn one older than the grace period is replaced). Never deleted
   * when it loses a hedged race: another snapshot may reference it, and retention removes it once
   * no retained snapshot does and it is older than {@code tornFileGraceMillis}.
   */
  private final class SharedSstCopy implements HedgeCopy {
    private final LocalCheckpoint checkpoint;
    private final String name;
    private final Path file;
    private volatile boolean existed;

    SharedSstCopy(LocalCheckpoint checkpoint, String name, Path file) {
      this.checkpoint = checkpoint;
      this.name = name;
      this.file = file;
    }

    @Override
    public String write(byte[] ignored) {
      readingCheckpoint(checkpoint, this::createOrVerify);
      return name;
    }

    private void createOrVerify() {
      for (int attempt = 0; ; attempt++) {
        try {
          storage.create(name, FramedFile.writer(FileKind.SST, file));
          return;
        } catch (FileAlreadyExistsException e) {
          // Same name, same content, unless it is a torn upload of a crashed writer: verify it.
          try {
            FramedFile.verify(storage, name, FileKind.SST);
            existed = true;
            return;
          } catch (CorruptFileException torn) {
            // I8: only a leftover older than the grace period is replaced.
            if (attempt == 0 && removeIfAbandoned(name)) {
              continue;
            }
            throw torn;
          }
        }
      }
    }

    @Override
    public boolean discard(String written) {
      return false; // shared by name: left for retention
    }

    @Override
    public String describe() {
      return FramedFile.location(storage, name);
    }
  }

  /** An SST under a hedge's attempt-unique name: nobody else writes or references it. */
  private final class HedgeSstCopy implements HedgeCopy {
    private final LocalCheckpoint checkpoint;
    private final String name;
    private final Path file;

    HedgeSstCopy(LocalCheckpoint checkpoint, String name, Path file) {
      this.checkpoint = checkpoint;
      this.name = name;
      this.file = file;
    }

    @Override
    public String write(byte[] ignored) {
      readingCheckpoint(
          checkpoint, () -> storage.create(name, FramedFile.writer(FileKind.SST, file)));
      return name;
    }

    @Override
    public boolean discard(String written) {
      storage.delete(written);
      return true;
    }

    @Override
    public String describe() {
      return FramedFile.location(storage, name);
    }
  }

  /**
   * A manifest under one of its two names. A taken name means another instance published this
   * commit of this version (as good: the same state); it is never deleted here. A losing primary is
   * left for retention too; only a losing hedge copy of ours is deleted.
   */
  private final class ManifestCopy implements HedgeCopy {
    private final String name;
    private final byte[] payload;
    private final boolean deleteIfLost;
    private volatile boolean taken;

    ManifestCopy(String name, byte[] payload, boolean deleteIfLost) {
      this.name = name;
      this.payload = payload;
      this.deleteIfLost = deleteIfLost;
    }

    @Override
    public String write(byte[] ignored) {
      try {
        storage.create(name, FramedFile.writer(FileKind.SNAPSHOT_MANIFEST, payload));
      } catch (FileAlreadyExistsException e) {
        taken = true;
      }
      return name;
    }

    @Override
    public boolean discard(String written) {
      if (taken || !deleteIfLost) {
        return false;
      }
      storage.delete(written);
      return true;
    }

    @Override
    public String describe() {
      return FramedFile.location(storage, name);
    }
  }

  /**
   * Deletes a file that does not verify if it is older than the grace period (the leftover of a
   * crashed writer). Returns whether it was deleted.
   */
  private boolean removeIfAbandoned(String file) {
    long now = System.currentTimeMillis();
    for (FileInfo info : storage.list(file)) {
      if (info.name().equals(file) && info.isSurelyOlderThan(now, options.tornFileGraceMillis())) {
        LOG.warn(
            "Store {}: removing unverifiable file {} left by a crashed writer", storeName, file);
        storage.delete(file);
        metrics.countDeleted(1);
        return true;
      }
    }
    return false;
  }

  private static String sha256(Path file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    byte[] buffer = new byte[64 * 1024];
    try (InputStream in = Files.newInputStream(file)) {
      int n;
      while ((n = in.read(buffer)) > 0) {
        digest.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }
}
