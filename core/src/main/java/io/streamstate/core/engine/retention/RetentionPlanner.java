package io.streamstate.core.engine.retention;

import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.storage.FileInfo;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * What retention may delete, decided in one place (I6, I7; docs/protocol.md, "Retention" r1-r5, and
 * the segment sweep, g4): which version is the oldest that must stay loadable, which snapshot is
 * the base that loading it stands on, and which files no retained version needs. Pure functions of
 * listings: per-store retention ({@link StoreRetention}) and the segment sweep ({@link
 * SegmentSweep}) list and read, this decides.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class RetentionPlanner {
  /** Snapshots newest first: by version, then by name (of one commit, the primary first). */
  static final Comparator<StoreLayout.SnapshotName> NEWEST_FIRST =
      Comparator.comparingLong(StoreLayout.SnapshotName::version)
          .thenComparing(StoreLayout.SnapshotName::name)
          .reversed();

  private RetentionPlanner() {}

  /**
   * r1: the oldest of the newest {@code minVersionsToRetain} versions, when {@code newest} is the
   * newest; -1 if that is version 1 or older (nothing may go yet).
   */
  public static long oldestToKeep(long newest, int minVersionsToRetain) {
    long oldest = newest - minVersionsToRetain + 1;
    return oldest <= 1 ? -1 : oldest;
  }

  /** Snapshot intervals of lineage kept beyond the versions to retain: the base lies among them. */
  private static final long LINEAGE_SNAPSHOT_INTERVALS = 4;

  /** Lineage entries kept beyond those, for slack. */
  private static final long LINEAGE_SLACK_VERSIONS = 16;

  /**
   * How many lineage entries (version to commit id) a store keeps in memory: retention only needs
   * the ids of versions near its base, and forgetting older ones only makes it keep more.
   */
  public static long lineageToKeep(StoreOptions options) {
    return options.minVersionsToRetain()
        + LINEAGE_SNAPSHOT_INTERVALS * options.snapshotInterval()
        + LINEAGE_SLACK_VERSIONS;
  }

  /**
   * r2: the base, the newest usable snapshot at or below {@code oldestToKeep} whose commit is the
   * lineage's commit of its version (a snapshot of another commit of that version, a retry's, would
   * not lead to the newer versions' changelogs). Loading any version from {@code oldestToKeep} on
   * stands on it or on a newer snapshot.
   *
   * @param newestFirst snapshot names in {@link #NEWEST_FIRST} order
   * @param lineage version to commit id of the lineage that must stay loadable
   * @param usable whether a snapshot can be restored; asked of candidates only, newest first, until
   *     one is
   * @return the base's index in {@code newestFirst}, or -1 if there is none (every changelog is
   *     still needed)
   */
  static int base(
      List<StoreLayout.SnapshotName> newestFirst,
      long oldestToKeep,
      Map<Long, Long> lineage,
      Predicate<StoreLayout.SnapshotName> usable) {
    for (int i = 0; i < newestFirst.size(); i++) {
      StoreLayout.SnapshotName s = newestFirst.get(i);
      Long onLineage = lineage.get(s.version());
      if (s.version() <= oldestToKeep
          && onLineage != null
          && onLineage == s.commitId()
          && usable.test(s)) {
        return i;
      }
    }
    return -1;
  }

  /** The base's version for the sweep, or -1: as {@link #base}, from snapshots in any order. */
  static long baseVersion(
      Collection<StoreLayout.SnapshotName> snapshots,
      long oldestToKeep,
      Map<Long, Long> lineage,
      Predicate<StoreLayout.SnapshotName> usable) {
    List<StoreLayout.SnapshotName> newestFirst = newestFirst(snapshots);
    int base = base(newestFirst, oldestToKeep, lineage, usable);
    return base < 0 ? -1 : newestFirst.get(base).version();
  }

  static List<StoreLayout.SnapshotName> newestFirst(Collection<StoreLayout.SnapshotName> names) {
    List<StoreLayout.SnapshotName> sorted = new ArrayList<>(names);
    sorted.sort(NEWEST_FIRST);
    return sorted;
  }

  /**
   * What one store's retention deletes of its snapshots and changelogs (r2-r4), and what the
   * snapshots it keeps reference.
   *
   * @param base the base snapshot
   * @param toDelete r3: the snapshots listed after the base (older ones, and the base's siblings
   *     that sort after it: the other copy of its commit, other commits of its version); r4: the
   *     changelogs at or below the base's version, of every commit, hedge copies included
   * @param referenced the shared SSTs the retained snapshots (the base and those listed before it)
   *     reference; r5 keeps them
   */
  public record StorePlan(
      StoreLayout.SnapshotName base, List<String> toDelete, Set<String> referenced) {}

  /**
   * r2-r4 of one store.
   *
   * @param changelogs the store's changelogs, as listed
   * @param snapshots the store's snapshot manifests, as listed
   * @param oldestToKeep from {@link #oldestToKeep}
   * @param lineage the lineage of the store's newest version (version to commit id)
   * @param sharedSsts the shared SSTs a snapshot's manifest names, or null if it is unusable (it
   *     does not verify, or holds another version or commit than its name says)
   * @return the plan, or null if there is no base (nothing may be deleted)
   */
  public static StorePlan planStore(
      List<StoreFiles.ListedChangelog> changelogs,
      Collection<StoreLayout.SnapshotName> snapshots,
      long oldestToKeep,
      Map<Long, Long> lineage,
      Function<StoreLayout.SnapshotName, Set<String>> sharedSsts) {
    List<StoreLayout.SnapshotName> newestFirst = newestFirst(snapshots);
    int base = base(newestFirst, oldestToKeep, lineage, s -> sharedSsts.apply(s) != null);
    if (base < 0) {
      return null;
    }
    Set<String> referenced = new HashSet<>();
    for (StoreLayout.SnapshotName s : newestFirst.subList(0, base + 1)) {
      Set<String> names = sharedSsts.apply(s);
      if (names != null) {
        referenced.addAll(names);
      }
    }
    List<String> toDelete = new ArrayList<>();
    for (StoreLayout.SnapshotName s : newestFirst.subList(base + 1, newestFirst.size())) {
      toDelete.add(s.name());
    }
    long baseVersion = newestFirst.get(base).version();
    for (StoreFiles.ListedChangelog f : changelogs) {
      if (f.name().version() <= baseVersion) {
        toDelete.add(f.name().name());
      }
    }
    return new StorePlan(newestFirst.get(base), toDelete, referenced);
  }

  /**
   * r5: the SSTs (content-addressed names and hedge copies alike) no retained snapshot references,
   * once older than the grace period (I8: a snapshot in flight, here or elsewhere, may have
   * uploaded them and not yet published its manifest).
   */
  public static List<String> unreferencedSsts(
      List<FileInfo> ssts, Set<String> referenced, long nowMillis, long graceMillis) {
    List<String> unreferenced = new ArrayList<>();
    for (FileInfo f : ssts) {
      if (!referenced.contains(f.name()) && f.isSurelyOlderThan(nowMillis, graceMillis)) {
        unreferenced.add(f.name());
      }
    }
    return unreferenced;
  }
}
