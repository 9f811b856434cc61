package io.streamstate.core.engine.recovery;

import io.streamstate.core.engine.CommitIds;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.commit.AsyncChangelogPublisher;
import io.streamstate.core.engine.commit.ChangelogPublisher;
import io.streamstate.core.engine.commit.EncodedCommit;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.recovery.DurableListing.Candidate;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotRestorer;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads a version of one store from its durable files (docs/protocol.md, "Load and recovery",
 * l2-l5): picks the version's newest valid commit, walks back along its lineage (each commit names
 * its parent's commit id) to a base (the local instance when it lies on the lineage, else the
 * newest usable snapshot on it, else the empty state), then replays the lineage's changelogs on the
 * base. In async durability, a version whose commits were never uploaded resumes from the newest
 * durable one within the lag bound (a4).
 *
 * <p>Builds the store's {@link LocalInstance}; called under the store's lock.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class LineageLoader {
  private static final Logger LOG = LoggerFactory.getLogger(LineageLoader.class);

  /**
   * Stored changelog bytes a load keeps in memory while it walks back to its base; beyond this it
   * re-reads them when it replays.
   */
  private static final long MAX_HELD_CHANGELOG_BYTES = 64L << 20;

  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final StoreOptions options;
  private final SegmentCatalog catalog;
  private final LocalInstance local;
  private final SnapshotRestorer restorer;
  private final ChangelogPublisher bridges;
  private final AsyncChangelogPublisher async;
  private final StoreMetrics metrics;

  /** The load under way (loads run under the store's lock), or null. */
  private LoadTrace trace;

  /**
   * @param bridges publishes the empty changelogs that bridge versions an async store lost (a4)
   * @param async the store's async publisher, or null in sync durability
   */
  public LineageLoader(
      String storeName,
      Storage storage,
      StoreLayout layout,
      StoreOptions options,
      SegmentCatalog catalog,
      LocalInstance local,
      SnapshotRestorer restorer,
      ChangelogPublisher bridges,
      AsyncChangelogPublisher async,
      StoreMetrics metrics) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.options = options;
    this.catalog = catalog;
    this.local = local;
    this.restorer = restorer;
    this.bridges = bridges;
    this.async = async;
    this.metrics = metrics;
  }

  /**
   * One commit on the lineage being loaded, verified, its changes not decoded until it is replayed
   * (a walk that ends at a snapshot of the version itself decodes none); {@code stored} is null
   * once dropped.
   */
  private static final class Step {
    final Candidate source;
    final long version;
    final long commitId;
    final long parentId;
    Changelog.Stored stored;

    Step(Candidate source, Changelog.Stored stored) {
      this.source = source;
      this.version = source.version();
      this.commitId = source.commitId();
      this.parentId = stored.parentId();
      this.stored = stored;
    }
  }

  /**
   * Makes the local instance hold {@code version} (l2-l5). No wrong state is ever loaded (I5): a
   * file the lineage needs that is missing or does not verify fails the load, naming it.
   *
   * @throws MissingFileException a file the version needs is absent
   * @throws CorruptFileException a changelog the version needs does not verify
   */
  public void load(long version) {
    load(version, OptionalLong.empty());
  }

  /**
   * Makes the local instance hold commit {@code commitId} of {@code version} exactly, when present
   * (checkpoint format v2: the commit Spark's commit log names), else the version's newest valid
   * commit, as {@link #load(long)} does.
   *
   * @throws MissingFileException the commit, or a file its lineage needs, is absent
   * @throws CorruptFileException a changelog the lineage needs does not verify
   */
  public void load(long version, OptionalLong commitId) {
    if (trace != null) {
      load(version, commitId, true); // a4 resuming from an older version: part of the outer load
      return;
    }
    trace = new LoadTrace(System.nanoTime());
    try {
      load(version, commitId, true);
      if (version == 0) {
        return; // a new store: nothing was read
      }
      // One line per load from durable storage: how users see what a restart or a moved task costs.
      LOG.info(
          "Store {}: loaded version {} (commit {}) from {} + {} changelogs ({} changes, {} bytes of"
              + " keys and values) in {} ms",
          storeName,
          version,
          StoreLayout.formatId(local.commitId()),
          trace.base,
          trace.replayed,
          trace.changes,
          trace.changeBytes,
          (System.nanoTime() - trace.startNanos) / 1_000_000);
    } finally {
      trace = null;
    }
  }

  /** What the load under way did, for its log line. */
  private static final class LoadTrace {
    final long startNanos;
    String base = "the empty state";
    long replayed;
    long changes;
    long changeBytes;

    LoadTrace(long startNanos) {
      this.startNanos = startNanos;
    }
  }

  private void load(long version, OptionalLong exact, boolean mayWaitForOtherUploads) {
    load(version, exact, mayWaitForOtherUploads, true);
  }

  /**
   * As above; with {@code pickBySnapshot}, a commit of {@code version} that has a snapshot of its
   * own is taken without reading its changelog (l2): the load stands on that snapshot, and the
   * snapshot exists only because the commit did. Without, every pick reads and verifies its
   * changelog (the fallback when that snapshot turns out unusable).
   */
  private void load(
      long version, OptionalLong exact, boolean mayWaitForOtherUploads, boolean pickBySnapshot) {
    if (version == 0) {
      if (exact.isPresent() && exact.getAsLong() != 0) {
        throw new MissingFileException(
            lineageFailure(
                0,
                "commit "
                    + StoreLayout.formatId(exact.getAsLong())
                    + " was asked for, but version 0 is the empty state (commit "
                    + StoreLayout.formatId(0)
                    + ")",
                List.of()),
            FramedFile.location(storage, layout.changelogDir()));
      }
      local.openEmpty();
      return;
    }
    DurableListing listing = DurableListing.list(storage, layout, catalog);
    List<Step> steps = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    long heldBytes = 0;
    long v;
    long expected;
    Step top;
    // The base will be a snapshot of the version itself if it has one on the lineage: unless the
    // local instance holds an older version, which the walk then replays forward from.
    boolean snapshotBase = pickBySnapshot && !local.holdsOlderThan(version);
    Candidate pickedBySnapshot = null;
    if (exact.isPresent()) {
      List<Candidate> copies = listing.copiesOf(version, exact.getAsLong());
      if (snapshotBase && hasSnapshotOf(listing, version, exact.getAsLong())) {
        top = null; // the snapshot below; its changelog is read only if the snapshot is unusable
      } else {
        top =
            copies.isEmpty()
                ? readUnlisted(version, exact.getAsLong())
                : readCopies(copies, skipped, version);
      }
      if (top == null && !hasSnapshotOf(listing, version, exact.getAsLong())) {
        if (async != null && listing.candidates(version).isEmpty()) {
          if (mayWaitForOtherUploads && async.awaitOtherInstance()) {
            load(version, exact, false);
            return;
          }
          resumeFromNewestDurable(version, listing, exact);
          return;
        }
        String missing = FramedFile.location(storage, layout.changelog(version, exact.getAsLong()));
        throw new MissingFileException(
            lineageFailure(
                version,
                "commit "
                    + StoreLayout.formatId(exact.getAsLong())
                    + " of version "
                    + version
                    + " (the one asked for) has no changelog ("
                    + missing
                    + ") and no snapshot"
                    + otherCommits(listing, version),
                skipped),
            missing);
      }
    } else {
      Pick pick = newestValidCommit(listing, version, skipped, snapshotBase);
      top = pick.read();
      pickedBySnapshot = pick.bySnapshot();
    }
    if (top != null) {
      // The walk starts at the version itself, so that a snapshot of this very commit is used.
      v = version;
      expected = top.commitId;
    } else if (pickedBySnapshot != null) {
      v = version;
      expected = pickedBySnapshot.commitId();
    } else {
      // No changelog of the version is left (retention keeps the base snapshot alone).
      List<StoreLayout.SnapshotName> snaps = listing.snapshots().getOrDefault(version, List.of());
      if (snaps.isEmpty()) {
        if (async != null && skipped.isEmpty()) {
          if (mayWaitForOtherUploads && async.awaitOtherInstance()) {
            // Another instance in this process was still uploading: it landed; look again.
            load(version, exact, false);
            return;
          }
          resumeFromNewestDurable(version, listing, exact);
          return;
        }
        throw noCommitOf(version, listing, skipped);
      }
      v = version;
      expected = exact.orElse(snaps.get(snaps.size() - 1).commitId());
    }
    // l3: walk back until a base on the lineage: the local instance, a usable snapshot, or empty.
    while (true) {
      if (local.holds(v, expected)) {
        trace.base = "the local instance at version " + v;
        break; // the local instance lies on the lineage: replay forward from it
      }
      if (v == 0) {
        if (expected != 0) {
          throw new CorruptFileException(
              "Cannot load version "
                  + version
                  + " of store "
                  + storeName
                  + ": the changelog of version 1 on its lineage names parent commit "
                  + StoreLayout.formatId(expected)
                  + " instead of the empty state ("
                  + FramedFile.location(storage, steps.get(steps.size() - 1).source.file())
                  + ")");
        }
        local.openEmpty();
        break;
      }
      // While the local instance is older, it is the base to reach: no need for snapshots.
      if (!local.holdsOlderThan(v) && restoreSnapshotOnLineage(listing, v, expected, skipped)) {
        break; // the trace names the snapshot
      }
      if (pickedBySnapshot != null && v == version) {
        // The snapshot of the commit picked by it is unusable: pick again reading changelogs, as
        // if it had none (a commit whose changelog does not verify is then skipped).
        load(version, exact, mayWaitForOtherUploads, false);
        return;
      }
      if (top != null && v == version) {
        steps.add(top);
        expected = top.parentId;
        heldBytes += top.stored.payload().length;
        v--;
        continue;
      }
      List<Candidate> copies = listing.copiesOf(v, expected);
      Step unlisted = copies.isEmpty() ? readUnlisted(v, expected) : null;
      if (unlisted != null) {
        steps.add(unlisted);
        expected = unlisted.parentId;
        heldBytes += unlisted.stored.payload().length;
        v--;
        continue;
      }
      if (copies.isEmpty()) {
        String missing = FramedFile.location(storage, layout.changelog(v, expected));
        throw new MissingFileException(
            lineageFailure(
                version,
                "changelog "
                    + missing
                    + " is missing (version "
                    + (v + 1)
                    + " on the lineage builds on it)",
                skipped),
            missing);
      }
      Step step = readCopies(copies, skipped, version);
      steps.add(step);
      expected = step.parentId;
      heldBytes += step.stored.payload().length;
      if (heldBytes > MAX_HELD_CHANGELOG_BYTES) {
        step.stored = null; // re-read when replayed
      }
      v--;
    }
    // l4: replay the lineage, oldest first.
    for (int i = steps.size() - 1; i >= 0; i--) {
      Step step = steps.get(i);
      Changelog changelog;
      try {
        changelog = (step.stored != null ? step.stored : reread(step, version)).decode();
      } catch (CorruptFileException e) {
        // Its file verified when the walk read it: changes that do not decode are a writer's
        // defect, not a torn file, and fail the load naming the file.
        throw new CorruptFileException(lineageFailure(version, e.getMessage(), List.of()), e);
      }
      local.apply(changelog);
      metrics.countReplayed();
      trace.replayed++;
      trace.changes += changelog.changeCount();
      trace.changeBytes += changelog.changeBytes();
    }
  }

  /**
   * a4: async durability, after losing the process that held the newest versions: loads the newest
   * durable version {@code d} within the lag bound, then publishes empty changelogs for {@code d+1
   * .. version} so that the lineage says plainly what was lost, and counts and logs the loss.
   */
  private void resumeFromNewestDurable(long version, DurableListing listing, OptionalLong exact) {
    long floor = Math.max(0, version - options.asyncMaxLagVersions());
    long durable = -1;
    for (long d = version - 1; d >= floor; d--) {
      if (d == 0 || !listing.candidates(d).isEmpty() || listing.snapshots().containsKey(d)) {
        durable = d;
        break;
      }
    }
    if (durable < 0) {
      throw new MissingFileException(
          lineageFailure(
              version,
              "no durable version within the async lag bound of "
                  + options.asyncMaxLagVersions()
                  + " versions (versions "
                  + floor
                  + " to "
                  + (version - 1)
                  + " have no changelog or snapshot in "
                  + FramedFile.location(storage, layout.changelogDir())
                  + ")",
              List.of()),
          FramedFile.location(storage, layout.changelogDir()));
    }
    load(durable);
    long lost = version - durable;
    LOG.warn(
        "Store {}: versions {} to {} were committed in async durability but never uploaded (their"
            + " process was lost); resuming from version {}: the changes of {} batch(es) are lost",
        storeName,
        durable + 1,
        version,
        durable,
        lost);
    metrics.countVersionsLost(lost);
    for (long v = durable + 1; v <= version; v++) {
      // The bridge of the version asked for takes the commit id asked for, so that the lineage
      // Spark's commit log names (format v2) stays loadable.
      long commitId = v == version && exact.isPresent() ? exact.getAsLong() : CommitIds.next();
      Changelog bridge = new Changelog(v, commitId, local.commitId(), List.of(), List.of());
      metrics.countPublished(
          bridges.publish(
              new EncodedCommit(
                  v, commitId, local.commitId(), bridge.encodeStored(options.changelogCodec()))));
      local.apply(bridge);
    }
  }

  /**
   * l2: the newest commit of {@code version} whose changelog verifies. Commits of one version are
   * alternatives (retries, speculative attempts, re-runs of the batch); the newest is the one a
   * re-run produced last, as with Spark's own providers. One that does not verify is treated as
   * absent (a crashed or still-running writer's file). With {@code bySnapshot}, a commit that has a
   * snapshot of its own is valid without reading its changelog: the snapshot was made from the
   * committed state, and the load stands on it.
   */
  private Pick newestValidCommit(
      DurableListing listing, long version, List<String> skipped, boolean bySnapshot) {
    List<Candidate> found = new ArrayList<>(listing.candidates(version));
    found.sort(
        Comparator.comparingLong(Candidate::mtime).thenComparing(Candidate::file).reversed());
    for (Candidate c : found) {
      if (bySnapshot && hasSnapshotOf(listing, version, c.commitId())) {
        return new Pick(null, c);
      }
      try {
        return new Pick(new Step(c, readCommit(c)), null);
      } catch (CorruptFileException | MissingFileException e) {
        metrics.countInvalidSkipped();
        skipped.add(e.getMessage());
        LOG.warn(
            "Store {}: skipping changelog that does not verify: {}", storeName, e.getMessage());
      }
    }
    return new Pick(null, null);
  }

  /**
   * What l2 picked: a commit whose changelog was read ({@code read}), or one taken by its own
   * snapshot without reading its changelog ({@code bySnapshot}), or neither.
   */
  private record Pick(Step read, Candidate bySnapshot) {}

  private static boolean hasSnapshotOf(DurableListing listing, long version, long commitId) {
    for (StoreLayout.SnapshotName s : listing.snapshots().getOrDefault(version, List.of())) {
      if (s.commitId() == commitId) {
        return true;
      }
    }
    return false;
  }

  /** For messages: the commits of {@code version} that do exist, if any. */
  private static String otherCommits(DurableListing listing, long version) {
    List<String> ids = new ArrayList<>();
    for (Candidate c : listing.candidates(version)) {
      ids.add(StoreLayout.formatId(c.commitId()));
    }
    for (StoreLayout.SnapshotName s : listing.snapshots().getOrDefault(version, List.of())) {
      ids.add(StoreLayout.formatId(s.commitId()) + " (snapshot)");
    }
    return ids.isEmpty()
        ? "; the version has no commit at all"
        : "; its other commits: " + String.join(", ", new java.util.TreeSet<>(ids));
  }

  /** Reads the commit {@code copies} hold (one commit id: the primary, then a hedge copy). */
  private Step readCopies(List<Candidate> copies, List<String> skipped, long version) {
    List<String> failures = new ArrayList<>();
    for (Candidate copy : copies) {
      try {
        return new Step(copy, readCommit(copy));
      } catch (CorruptFileException | MissingFileException e) {
        failures.add(e.getMessage());
      }
    }
    String detail = String.join("; ", failures);
    throw new CorruptFileException(lineageFailure(version, detail, skipped));
  }

  /**
   * Commit {@code commitId} of {@code version}, which the listing did not show, read by its
   * changelog's name (or its hedge copy's); null if neither exists. A commit's id is known before
   * its file is listed: its child names it as parent, or Spark's commit log names it (format v2);
   * and listings may lag behind writes (S3-compatible stores) where reads by name do not. Commits
   * inside segments cannot be found by name: those wait for the listing.
   */
  private Step readUnlisted(long version, long commitId) {
    for (String name :
        List.of(layout.changelog(version, commitId), layout.hedgeChangelog(version, commitId))) {
      Candidate c =
          new Candidate(
              name,
              version,
              commitId,
              name.endsWith(StoreLayout.HEDGE_CHANGELOG_SUFFIX),
              Long.MIN_VALUE,
              false);
      try {
        Step step = new Step(c, readCommit(c));
        LOG.info("Store {}: read {} by name: the listing does not show it yet", storeName, name);
        return step;
      } catch (MissingFileException | CorruptFileException e) {
        // absent (or torn: the listing shows it once it is there, and the walk reports it)
      }
    }
    return null;
  }

  /**
   * Reads one candidate commit, from its changelog file or its segment: verified, its header
   * checked, its changes still encoded.
   */
  private Changelog.Stored readCommit(Candidate c) {
    if (c.inSegment()) {
      return catalog.storedMember(c.file(), layout.prefix(), c.commitId());
    }
    return StoreFiles.readStoredChangelog(storage, StoreLayout.parseChangelog(c.file()));
  }

  private Changelog.Stored reread(Step step, long version) {
    try {
      return readCommit(step.source);
    } catch (CorruptFileException | MissingFileException e) {
      throw new CorruptFileException(
          lineageFailure(version, "changelog changed while loading: " + e.getMessage(), List.of()),
          e);
    }
  }

  /**
   * Restores a snapshot of version {@code v} with commit id {@code id} if one exists and is usable.
   * An unusable one is skipped (logged, listed in later errors): an older snapshot plus changelogs
   * gives the same state.
   */
  private boolean restoreSnapshotOnLineage(
      DurableListing listing, long v, long id, List<String> skipped) {
    for (StoreLayout.SnapshotName s : listing.snapshots().getOrDefault(v, List.of())) {
      if (s.commitId() != id) {
        continue;
      }
      local.discard();
      try {
        SnapshotManifest manifest = restorer.restore(s, local);
        trace.base =
            "snapshot "
                + s.name()
                + " ("
                + manifest.files().size()
                + " files, "
                + manifest.totalLength()
                + " bytes)";
        return true;
      } catch (CorruptFileException | MissingFileException e) {
        LOG.warn(
            "Store {}: snapshot {} is unusable, trying an older one: {}",
            storeName,
            v,
            e.getMessage());
        skipped.add(e.getMessage());
        local.discard();
      }
    }
    return false;
  }

  private String lineageFailure(long version, String detail, List<String> skipped) {
    return "Cannot load version "
        + version
        + " of store "
        + storeName
        + ": "
        + detail
        + "."
        + (skipped.isEmpty() ? "" : " Skipped as unusable: " + String.join("; ", skipped));
  }

  /**
   * l5: no commit of {@code version} to load: corrupt if its only changelogs do not verify, else
   * missing.
   */
  private StreamStateException noCommitOf(
      long version, DurableListing listing, List<String> skipped) {
    if (!skipped.isEmpty()) {
      return new CorruptFileException(
          lineageFailure(version, "no changelog of version " + version + " verifies", skipped));
    }
    Long newest = listing.newestVersion();
    String unreadable =
        listing.unreadableSegments().isEmpty()
            ? ""
            : "; unreadable segments (whose stores are unknown): "
                + String.join("; ", listing.unreadableSegments());
    return new MissingFileException(
        lineageFailure(
            version,
            "no valid changelog of version "
                + version
                + " in "
                + FramedFile.location(storage, layout.changelogDir())
                + " or in segments under "
                + FramedFile.location(storage, SegmentCatalog.SEGMENT_DIR)
                + (newest == null
                    ? " (they hold none of this store)"
                    : " (the newest version of this store there is " + newest + ")")
                + unreadable,
            skipped),
        FramedFile.location(storage, layout.changelogDir()));
  }
}
