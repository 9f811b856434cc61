package io.streamstate.core.engine.retention;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StoreFiles.ListedChangelog;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreLayout.SnapshotName;
import io.streamstate.core.storage.FileInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The retention planner on hand-built listings, and against a plain-Java model of what must stay:
 * after its deletions, every one of the newest {@code minVersionsToRetain} versions still loads
 * along the lineage (a usable snapshot whose SSTs all remain, then the lineage's changelogs), and
 * what it keeps beyond that is only what has no base to stand on.
 */
class RetentionPlannerTest {
  private static final StoreLayout LAYOUT = new StoreLayout("s/");
  private static final long GRACE = 1_000;
  private static final long NOW = 1_000_000;

  @Test
  void theOldestVersionToKeepIsNoneUntilMoreThanMinVersionsExist() {
    assertThat(RetentionPlanner.oldestToKeep(10, 10)).isEqualTo(-1);
    assertThat(RetentionPlanner.oldestToKeep(11, 10)).isEqualTo(2);
    assertThat(RetentionPlanner.oldestToKeep(5, 1)).isEqualTo(5);
    assertThat(RetentionPlanner.oldestToKeep(-1, 1)).isEqualTo(-1);
  }

  @Test
  void theBaseIsTheNewestUsableSnapshotOfTheLineageAtOrBelowTheOldestToKeep() {
    Map<Long, Long> lineage = lineage(20);
    List<SnapshotName> snapshots =
        List.of(
            snapshot(5, lineage.get(5L), false),
            snapshot(10, 999, false), // another commit of version 10: not on the lineage
            snapshot(12, lineage.get(12L), false), // unusable
            snapshot(15, lineage.get(15L), false)); // above the oldest to keep
    Set<String> unusable = Set.of(snapshots.get(2).name());
    long base =
        RetentionPlanner.baseVersion(snapshots, 13, lineage, s -> !unusable.contains(s.name()));
    assertThat(base).isEqualTo(5);
    assertThat(RetentionPlanner.baseVersion(snapshots, 4, lineage, s -> true)).isEqualTo(-1);
  }

  @Test
  void aPlanDeletesOlderSnapshotsAndChangelogsAtOrBelowTheBaseAndKeepsWhatRetainedOnesReference() {
    Map<Long, Long> lineage = lineage(12);
    List<ListedChangelog> changelogs = new ArrayList<>();
    for (long v = 1; v <= 12; v++) {
      changelogs.add(changelog(v, lineage.get(v), false));
    }
    changelogs.add(changelog(4, 77, false)); // a retry nobody built on
    SnapshotName old = snapshot(2, lineage.get(2L), false);
    SnapshotName base = snapshot(4, lineage.get(4L), false);
    SnapshotName baseHedge = snapshot(4, lineage.get(4L), true);
    SnapshotName newer = snapshot(8, lineage.get(8L), false);
    Map<SnapshotName, Set<String>> refs =
        Map.of(
            old,
            Set.of("sst/a"),
            base,
            Set.of("sst/b"),
            baseHedge,
            Set.of("sst/b"),
            newer,
            Set.of("sst/c"));

    RetentionPlanner.StorePlan plan =
        RetentionPlanner.planStore(
            changelogs, List.of(newer, old, baseHedge, base), 5, lineage, refs::get);

    assertThat(plan.base()).isEqualTo(base);
    List<String> expected = new ArrayList<>(List.of(baseHedge.name(), old.name()));
    for (ListedChangelog c : changelogs) {
      if (c.name().version() <= 4) {
        expected.add(c.name().name());
      }
    }
    assertThat(plan.toDelete()).containsExactlyElementsOf(expected);
    assertThat(plan.referenced()).containsExactlyInAnyOrder("sst/b", "sst/c");
    List<FileInfo> ssts =
        List.of(
            // unreferenced, old enough even if its time was truncated to the second
            new FileInfo("sst/a", 1, NOW - GRACE - (FileInfo.TIMESTAMP_GRANULARITY_MILLIS - 1)),
            new FileInfo("sst/b", 1, NOW - GRACE - FileInfo.TIMESTAMP_GRANULARITY_MILLIS),
            new FileInfo("sst/d", 1, NOW - GRACE)); // may be up to 999 ms younger: in its grace
    assertThat(RetentionPlanner.unreferencedSsts(ssts, plan.referenced(), NOW, GRACE))
        .containsExactly("sst/a");
  }

  @Test
  void aTimeTruncatedToTheSecondNeverMakesAnSstLookOlderThanItIs() {
    long written = 1_700_000_000_900L; // 100 ms before NOW below
    long listed = written - written % 1000; // as S3 lists it: 900 ms earlier
    long now = written + 100;
    List<FileInfo> ssts = List.of(new FileInfo("sst/young", 1, listed));

    // Listed 1,000 ms ago, written 100 ms ago: not past a 1,000 ms grace period.
    assertThat(RetentionPlanner.unreferencedSsts(ssts, java.util.Set.of(), now, 1_000)).isEmpty();
    // Once surely past it, whatever its real time within the second, it goes.
    assertThat(
            RetentionPlanner.unreferencedSsts(
                ssts, java.util.Set.of(), listed + 999 + 1_000, 1_000))
        .containsExactly("sst/young");
    // No grace period: at once.
    assertThat(RetentionPlanner.unreferencedSsts(ssts, java.util.Set.of(), now, 0))
        .containsExactly("sst/young");
  }

  @Test
  void withoutABaseNothingIsDeleted() {
    Map<Long, Long> lineage = lineage(12);
    SnapshotName unusable = snapshot(4, lineage.get(4L), false);
    assertThat(
            RetentionPlanner.planStore(
                List.of(changelog(1, lineage.get(1L), false)),
                List.of(unusable, snapshot(4, 5, false), snapshot(9, lineage.get(9L), false)),
                5,
                lineage,
                s -> s.equals(unusable) ? null : Set.<String>of()))
        .isNull();
  }

  @Test
  void randomHistoriesKeepEveryRetainedVersionLoadable() {
    for (long seed = 0; seed < 500; seed++) {
      checkAgainstModel(new Random(seed), seed);
    }
  }

  /** One random store history, planned, checked against the model of what loading needs. */
  private static void checkAgainstModel(Random random, long seed) {
    int newest = 2 + random.nextInt(40);
    int minVersions = 1 + random.nextInt(newest + 2);
    long oldest = RetentionPlanner.oldestToKeep(newest, minVersions);
    if (oldest < 0) {
      return; // retention stops at r1
    }
    Map<Long, Long> lineage = lineage(newest);
    // An earlier retention may have left the lineage's changelogs only above a snapshot of it.
    long earlierBase = random.nextInt(4) == 0 ? random.nextInt((int) oldest + 1) : 0;
    List<ListedChangelog> changelogs = new ArrayList<>();
    for (long v = earlierBase + 1; v <= newest; v++) {
      changelogs.add(changelog(v, lineage.get(v), false));
      if (random.nextInt(5) == 0) {
        changelogs.add(changelog(v, lineage.get(v), true));
      }
      if (random.nextInt(6) == 0) {
        changelogs.add(changelog(v, 1_000_000 + v, random.nextBoolean())); // a retry's
      }
    }
    Map<SnapshotName, Set<String>> manifests = new HashMap<>(); // usable ones only
    List<SnapshotName> snapshots = new ArrayList<>();
    List<FileInfo> ssts = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      ssts.add(new FileInfo("s/sst/" + i + ".sst", 1, NOW - GRACE + random.nextInt(3) - 1));
    }
    if (earlierBase > 0) {
      SnapshotName s = snapshot(earlierBase, lineage.get(earlierBase), false);
      snapshots.add(s);
      manifests.put(s, randomSsts(random, ssts));
    }
    for (long v = earlierBase + 1; v <= newest; v++) {
      if (random.nextInt(3) != 0) {
        continue;
      }
      boolean onLineage = random.nextInt(4) != 0;
      SnapshotName s = snapshot(v, onLineage ? lineage.get(v) : 2_000_000 + v, false);
      snapshots.add(s);
      if (random.nextInt(5) != 0) {
        manifests.put(s, randomSsts(random, ssts));
      }
      if (random.nextInt(4) == 0) {
        SnapshotName hedge = snapshot(v, s.commitId(), true);
        snapshots.add(hedge);
        if (random.nextBoolean()) {
          manifests.put(hedge, manifests.getOrDefault(s, randomSsts(random, ssts)));
        }
      }
    }
    RetentionPlanner.StorePlan plan =
        RetentionPlanner.planStore(changelogs, snapshots, oldest, lineage, manifests::get);

    // The model's base: the newest usable snapshot of the lineage at or below the oldest to keep.
    long modelBase = -1;
    for (SnapshotName s : snapshots) {
      if (s.version() <= oldest
          && s.commitId() == lineage.get(s.version())
          && manifests.containsKey(s)) {
        modelBase = Math.max(modelBase, s.version());
      }
    }
    String context = "seed " + seed + ", newest " + newest + ", min " + minVersions;
    if (modelBase < 0) {
      assertThat(plan).as(context).isNull();
      return;
    }
    assertThat(plan).as(context).isNotNull();
    assertThat(plan.base().version()).as(context).isEqualTo(modelBase);

    Set<String> deleted = new HashSet<>(plan.toDelete());
    deleted.addAll(RetentionPlanner.unreferencedSsts(ssts, plan.referenced(), NOW, GRACE));
    Set<String> remaining = new HashSet<>();
    changelogs.forEach(c -> remaining.add(c.name().name()));
    snapshots.forEach(s -> remaining.add(s.name()));
    ssts.forEach(f -> remaining.add(f.name()));
    assertThat(remaining).as(context).containsAll(deleted);
    remaining.removeAll(deleted);

    // Safety: every retained version loads along the lineage from what remains.
    for (long v = oldest; v <= newest; v++) {
      assertThat(loads(v, lineage, changelogs, snapshots, manifests, remaining))
          .as(context + ": version " + v + " loads after retention deleted " + deleted)
          .isTrue();
    }
    // What goes: every snapshot below the base, every changelog at or below it.
    for (SnapshotName s : snapshots) {
      if (s.version() < modelBase) {
        assertThat(deleted).as(context).contains(s.name());
      }
    }
    for (ListedChangelog c : changelogs) {
      assertThat(deleted.contains(c.name().name()))
          .as(context + ": " + c.name().name())
          .isEqualTo(c.name().version() <= modelBase);
    }
    // An SST goes only if no remaining usable snapshot at or above the base references it.
    for (SnapshotName s : snapshots) {
      if (remaining.contains(s.name()) && manifests.containsKey(s)) {
        for (String sst : manifests.get(s)) {
          assertThat(deleted)
              .as(context + ": " + s.name() + " references " + sst)
              .doesNotContain(sst);
        }
      }
    }
  }

  /** Whether {@code version} loads from {@code remaining}, as a load walks its lineage. */
  private static boolean loads(
      long version,
      Map<Long, Long> lineage,
      List<ListedChangelog> changelogs,
      List<SnapshotName> snapshots,
      Map<SnapshotName, Set<String>> manifests,
      Set<String> remaining) {
    for (long v = version; v > 0; v--) {
      long id = lineage.get(v);
      for (SnapshotName s : snapshots) {
        if (s.version() == v
            && s.commitId() == id
            && remaining.contains(s.name())
            && manifests.containsKey(s)
            && remaining.containsAll(manifests.get(s))) {
          return true; // a base: restore it, replay what was walked
        }
      }
      boolean changelogRemains = false;
      for (ListedChangelog c : changelogs) {
        if (c.name().version() == v
            && c.name().commitId() == id
            && remaining.contains(c.name().name())) {
          changelogRemains = true;
        }
      }
      if (!changelogRemains) {
        return false;
      }
    }
    return true; // walked back to the empty state
  }

  private static Set<String> randomSsts(Random random, List<FileInfo> ssts) {
    Set<String> names = new HashSet<>();
    for (FileInfo f : ssts) {
      if (random.nextInt(4) == 0) {
        names.add(f.name());
      }
    }
    return names;
  }

  private static Map<Long, Long> lineage(long newest) {
    Map<Long, Long> lineage = new TreeMap<>();
    lineage.put(0L, 0L);
    for (long v = 1; v <= newest; v++) {
      lineage.put(v, 100 + v);
    }
    return lineage;
  }

  private static ListedChangelog changelog(long version, long commitId, boolean hedge) {
    String name =
        hedge ? LAYOUT.hedgeChangelog(version, commitId) : LAYOUT.changelog(version, commitId);
    return new ListedChangelog(new StoreLayout.ChangelogName(name, version, commitId, hedge), 0);
  }

  private static SnapshotName snapshot(long version, long commitId, boolean hedge) {
    String name =
        hedge ? LAYOUT.hedgeSnapshot(version, commitId) : LAYOUT.snapshot(version, commitId);
    return new SnapshotName(name, version, commitId, hedge);
  }
}
