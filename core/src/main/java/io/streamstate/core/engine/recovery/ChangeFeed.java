package io.streamstate.core.engine.recovery;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.recovery.DurableListing.Candidate;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the changes of a range of versions of one store, as its changelogs hold them
 * (docs/protocol.md, "Change feed"): the changelogs of one lineage, the one a load of the range's
 * last version follows (l2: its newest commit whose changelog verifies; l3: back by parent ids), in
 * version order. Other commits of a version (a retried task's, a re-run's that a later commit did
 * not build on) are never read, and a changelog the lineage needs that is missing or does not
 * verify fails the read, naming it (I5).
 *
 * <p>Reads durable files only: never the local instance, which may hold another lineage.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class ChangeFeed {
  private static final Logger LOG = LoggerFactory.getLogger(ChangeFeed.class);

  /** Changelogs a walk keeps in memory; beyond this they are read again when iterated. */
  private static final long MAX_HELD_CHANGELOG_BYTES = 64L << 20;

  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final SegmentCatalog catalog;

  public ChangeFeed(String storeName, Storage storage, StoreLayout layout, SegmentCatalog catalog) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.catalog = catalog;
  }

  /**
   * The changelogs of versions {@code startVersion} to {@code endVersion} (both included) on the
   * lineage of {@code endVersion}, oldest first: each is the change from its version - 1 to its
   * version, puts and deletes per column family in key order (a changelog holds one change per key
   * and version: the last one the transaction made).
   *
   * @throws IllegalArgumentException {@code startVersion < 1} or {@code endVersion < startVersion}
   * @throws MissingFileException a changelog of the range is absent (never committed, or deleted by
   *     retention, which keeps only the base snapshot of older versions)
   * @throws CorruptFileException a changelog of the range does not verify
   */
  public CloseableIterator<Changelog> read(long startVersion, long endVersion) {
    return read(startVersion, endVersion, OptionalLong.empty());
  }

  /**
   * As {@link #read(long, long)}, on the lineage of commit {@code endCommit} of {@code endVersion}
   * when present (checkpoint format v2), else of its newest valid commit.
   */
  public CloseableIterator<Changelog> read(
      long startVersion, long endVersion, OptionalLong endCommit) {
    if (startVersion < 1 || endVersion < startVersion) {
      throw new IllegalArgumentException(
          "Cannot read the changes of versions "
              + startVersion
              + " to "
              + endVersion
              + " of store "
              + storeName
              + ": the range must start at 1 or later and not end before it starts");
    }
    return walk(DurableListing.list(storage, layout, catalog), startVersion, endVersion, endCommit)
        .iterator();
  }

  /** One commit on the lineage read; {@code changelog} is null once dropped from memory. */
  static final class Step {
    final Candidate source;
    Changelog changelog;

    Step(Candidate source, Changelog changelog) {
      this.source = source;
      this.changelog = changelog;
    }

    long commitId() {
      return source.commitId();
    }
  }

  /** The changelogs of a range of versions on one lineage, oldest first. */
  final class Lineage {
    private final List<Step> steps;
    private final long parentOfFirst;

    private Lineage(List<Step> steps, long parentOfFirst) {
      this.steps = steps;
      this.parentOfFirst = parentOfFirst;
    }

    /** The commit id of the version before the range: the lineage's commit there. */
    long parentOfFirst() {
      return parentOfFirst;
    }

    /** The changelogs, oldest first; one dropped from memory is read again, and checked. */
    CloseableIterator<Changelog> iterator() {
      return new CloseableIterator<>() {
        private int next;

        @Override
        public boolean hasNext() {
          return next < steps.size();
        }

        @Override
        public Changelog next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          Step step = steps.get(next++);
          return step.changelog != null ? step.changelog : reread(step);
        }

        @Override
        public void close() {
          next = steps.size();
        }
      };
    }
  }

  /**
   * Walks the lineage of {@code to}'s commit {@code endCommit} (when present, else its newest valid
   * commit) back to {@code from} (l2, l3), reading each changelog once: its parent id names the
   * commit of the version before.
   */
  Lineage walk(DurableListing listing, long from, long to, OptionalLong endCommit) {
    List<String> skipped = new ArrayList<>();
    Step top = topOf(listing, to, endCommit, skipped);
    if (top == null) {
      throw noChangelogOf(to, listing, skipped);
    }
    WalkBack back = walkBack(listing, top, from, rangeContext(from, to), skipped);
    if (back.stop() != null) {
      throw back.stop();
    }
    List<Step> steps = new ArrayList<>(back.steps());
    Collections.reverse(steps);
    return new Lineage(steps, back.expected());
  }

  /**
   * How far a walk back along one lineage got: the commits read, newest first; the commit id of the
   * version below the oldest of them ({@code expected}); and, if the walk ended before {@code
   * from}, the version whose commit it could not read ({@code stoppedAt}) and why ({@code stop}:
   * the changelog is missing, or no copy of it verifies), naming the file.
   */
  record WalkBack(List<Step> steps, long expected, long stoppedAt, StreamStateException stop) {}

  /**
   * l3: from {@code top}, follows parent ids down to version {@code from}, reading each commit's
   * copies (the primary, then a hedge copy) through the listing; stops at the first version whose
   * commit is missing or does not verify instead of throwing. The one walk of a lineage over
   * durable files: the change feed throws where it stops, {@link LineageCheck} looks for a base
   * above that.
   *
   * @param context what the caller does, for messages ("Cannot read the changes of ...")
   */
  WalkBack walkBack(
      DurableListing listing, Step top, long from, String context, List<String> skipped) {
    List<Step> steps = new ArrayList<>();
    steps.add(top);
    long heldBytes = top.changelog.changeCount() * 64L;
    long expected = top.changelog.parentId();
    for (long v = top.source.version() - 1; v >= from; v--) {
      List<Candidate> copies = listing.copiesOf(v, expected);
      if (copies.isEmpty()) {
        String missing = FramedFile.location(storage, layout.changelog(v, expected));
        return new WalkBack(
            steps,
            expected,
            v,
            new MissingFileException(
                failure(
                    context,
                    "changelog "
                        + missing
                        + " is missing (version "
                        + (v + 1)
                        + " on the lineage builds on it)",
                    skipped),
                missing));
      }
      Step step;
      try {
        step = readCopies(copies, context, skipped);
      } catch (CorruptFileException e) {
        return new WalkBack(steps, expected, v, e);
      }
      expected = step.changelog.parentId();
      heldBytes += step.changelog.changeCount() * 64L;
      if (heldBytes > MAX_HELD_CHANGELOG_BYTES) {
        step.changelog = null; // read again when iterated
      }
      steps.add(step);
    }
    return new WalkBack(steps, expected, from - 1, null);
  }

  /** Commit {@code commit} of {@code version} when present, else its newest valid one; or null. */
  Step topOf(DurableListing listing, long version, OptionalLong commit, List<String> skipped) {
    if (commit.isEmpty()) {
      return newestValidCommit(listing, version, skipped);
    }
    List<Candidate> copies = listing.copiesOf(version, commit.getAsLong());
    return copies.isEmpty() ? null : readCopies(copies, rangeContext(version, version), skipped);
  }

  /**
   * l2: the newest commit of {@code version} whose changelog verifies (by modification time, then
   * name, as a load picks it), or null.
   */
  Step newestValidCommit(DurableListing listing, long version, List<String> skipped) {
    List<Candidate> found = new ArrayList<>(listing.candidates(version));
    found.sort(
        Comparator.comparingLong(Candidate::mtime).thenComparing(Candidate::file).reversed());
    for (Candidate c : found) {
      try {
        return new Step(c, readCommit(c));
      } catch (CorruptFileException | MissingFileException e) {
        skipped.add(e.getMessage());
        LOG.warn(
            "Store {}: skipping changelog that does not verify: {}", storeName, e.getMessage());
      }
    }
    return null;
  }

  /** The commit {@code copies} hold (one commit id: the primary, then a hedge copy). */
  Step readCopies(List<Candidate> copies, String context, List<String> skipped) {
    List<String> failures = new ArrayList<>();
    for (Candidate copy : copies) {
      try {
        return new Step(copy, readCommit(copy));
      } catch (CorruptFileException | MissingFileException e) {
        failures.add(e.getMessage());
      }
    }
    throw new CorruptFileException(failure(context, String.join("; ", failures), skipped));
  }

  private Changelog readCommit(Candidate c) {
    if (c.inSegment()) {
      return catalog.member(c.file(), layout.prefix(), c.commitId());
    }
    return StoreFiles.readChangelog(storage, StoreLayout.parseChangelog(c.file()));
  }

  private Changelog reread(Step step) {
    try {
      return readCommit(step.source);
    } catch (CorruptFileException | MissingFileException e) {
      throw new CorruptFileException(
          "Cannot read the changes of store "
              + storeName
              + ": changelog changed while reading: "
              + e.getMessage(),
          e);
    }
  }

  StreamStateException noChangelogOf(long version, DurableListing listing, List<String> skip) {
    if (!skip.isEmpty()) {
      return new CorruptFileException(
          "Cannot read version "
              + version
              + " of store "
              + storeName
              + ": no changelog of it verifies. Skipped as unusable: "
              + String.join("; ", skip));
    }
    Long newest = listing.newestVersion();
    String dir = FramedFile.location(storage, layout.changelogDir());
    return new MissingFileException(
        "Cannot read version "
            + version
            + " of store "
            + storeName
            + ": no changelog of it in "
            + dir
            + " or in segments under "
            + FramedFile.location(storage, SegmentCatalog.SEGMENT_DIR)
            + (newest == null
                ? " (they hold none of this store)"
                : " (the newest version of this store there is "
                    + newest
                    + "; retention keeps only the base snapshot of older versions)"),
        dir);
  }

  /** How messages of a read of versions {@code from} to {@code to} start. */
  private String rangeContext(long from, long to) {
    return "Cannot read the changes of versions " + from + " to " + to + " of store " + storeName;
  }

  private static String failure(String context, String detail, List<String> skipped) {
    return context
        + ": "
        + detail
        + "."
        + (skipped.isEmpty() ? "" : " Skipped as unusable: " + String.join("; ", skipped));
  }
}
