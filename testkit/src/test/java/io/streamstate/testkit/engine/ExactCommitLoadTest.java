package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static io.streamstate.testkit.engine.EngineFixture.contents;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading a version by commit id (Spark's checkpoint format v2: the commit log names, per
 * partition, the commit the next batch builds on): exactly that commit's lineage is loaded, whether
 * it is the version's newest commit or not, whether the local instance holds another commit of the
 * version or not, and from a snapshot when its changelog is gone; an id no commit has fails, naming
 * it and the commits that exist.
 */
class ExactCommitLoadTest {
  @TempDir Path tmp;
  private final long[] clock = {1_000};
  private InMemoryStorage storage;
  private int instances;

  @BeforeEach
  void setUp() {
    storage = new InMemoryStorage(() -> clock[0]);
  }

  private VersionedStore open() {
    return VersionedStore.builder("op=0/part=0", storage)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  /** Commits {@code key=value} on commit {@code base} of {@code version}; returns the new id. */
  private long commit(VersionedStore store, long version, long base, String key, String value) {
    clock[0] += 1_000;
    try (StateTransaction tx = store.begin(version, OptionalLong.of(base))) {
      assertThat(tx.baseCommitId()).isEqualTo(base);
      tx.put("default", bytes(key), bytes(value));
      assertThat(tx.commit()).isEqualTo(version + 1);
      return tx.committedId();
    }
  }

  private static Map<String, String> load(VersionedStore store, long version, long id) {
    try (StateTransaction tx = store.begin(version, OptionalLong.of(id))) {
      assertThat(tx.baseCommitId()).isEqualTo(id);
      return contents(tx);
    }
  }

  @Test
  void theNamedCommitIsLoadedWhateverIsNewestAndWhateverTheLocalInstanceHolds() {
    try (VersionedStore first = open();
        VersionedStore rerun = open()) {
      long a = commit(first, 0, 0, "k", "a");
      long a2 = commit(first, 1, a, "n", "2");
      // A re-run of batch 1 (another task attempt) commits version 1 again, later: in format v1
      // the newest commit is loaded; the driver kept the first one in its commit log.
      long b = commit(rerun, 0, 0, "k", "b");
      assertThat(b).isNotEqualTo(a);

      try (VersionedStore reader = open()) {
        assertThat(load(reader, 1, a)).containsExactly(Map.entry("k", "a"));
        assertThat(load(reader, 1, b)).containsExactly(Map.entry("k", "b"));
        assertThat(load(reader, 2, a2)).containsExactly(Map.entry("k", "a"), Map.entry("n", "2"));
        try (StateTransaction tx = reader.begin(1)) {
          assertThat(contents(tx)).containsExactly(Map.entry("k", "b")); // v1: the newest
        }
      }
      // The re-run's instance holds commit b of version 1: asked for a, it loads a from storage.
      long durableBefore = rerun.metrics().snapshot().durableLoads();
      assertThat(load(rerun, 1, a)).containsExactly(Map.entry("k", "a"));
      assertThat(rerun.metrics().snapshot().durableLoads()).isEqualTo(durableBefore + 1);
      // Holding a now, asked for a again: warm.
      long warmBefore = rerun.metrics().snapshot().warmLoads();
      assertThat(load(rerun, 1, a)).containsExactly(Map.entry("k", "a"));
      assertThat(rerun.metrics().snapshot().warmLoads()).isEqualTo(warmBefore + 1);
      // And building on b, named, gives a version 2 with b's state, not a's.
      long b2 = commit(rerun, 1, b, "n", "3");
      try (VersionedStore reader = open()) {
        assertThat(load(reader, 2, b2)).containsExactly(Map.entry("k", "b"), Map.entry("n", "3"));
        assertThat(load(reader, 2, a2)).containsExactly(Map.entry("k", "a"), Map.entry("n", "2"));
      }
    }
  }

  @Test
  void theChangeFeedAndSnapshotReplayFollowTheNamedCommitsLineage() {
    try (VersionedStore first = open();
        VersionedStore rerun = open()) {
      long a = commit(first, 0, 0, "k", "a");
      assertThat(first.snapshotNow()).isEqualTo(1);
      long a2 = commit(first, 1, a, "n", "2");
      long b = commit(rerun, 0, 0, "k", "b"); // newer, not on a2's lineage
      try (VersionedStore reader = open()) {
        assertThat(commitIds(reader, 1, 1, OptionalLong.empty())).containsExactly(b);
        assertThat(commitIds(reader, 1, 1, OptionalLong.of(a))).containsExactly(a);
        assertThat(commitIds(reader, 1, 2, OptionalLong.of(a2))).containsExactly(a, a2);
        try (StateTransaction tx = reader.beginFromSnapshot(1, 2, OptionalLong.of(a2))) {
          assertThat(contents(tx)).containsExactly(Map.entry("k", "a"), Map.entry("n", "2"));
          assertThat(tx.baseCommitId()).isEqualTo(a2);
        }
      }
    }
  }

  private static java.util.List<Long> commitIds(
      VersionedStore store, long start, long end, OptionalLong endCommit) {
    java.util.List<Long> ids = new java.util.ArrayList<>();
    try (var changes = store.readChanges(start, end, endCommit)) {
      while (changes.hasNext()) {
        ids.add(changes.next().commitId());
      }
    }
    return ids;
  }

  @Test
  void aSnapshotOfTheNamedCommitServesWhenItsChangelogIsGone() {
    long a;
    StoreLayout layout;
    try (VersionedStore first = open()) {
      a = commit(first, 0, 0, "k", "a");
      assertThat(first.snapshotNow()).isEqualTo(1);
      layout = first.layout();
    }
    try (VersionedStore rerun = open()) {
      commit(rerun, 0, 0, "k", "b");
    }
    assertThat(storage.delete(layout.changelog(1, a))).isTrue();
    try (VersionedStore reader = open()) {
      assertThat(load(reader, 1, a)).containsExactly(Map.entry("k", "a"));
    }
  }

  @Test
  void anIdNoCommitHasFailsNamingItAndTheCommitsThatExist() {
    long a;
    try (VersionedStore first = open()) {
      a = commit(first, 0, 0, "k", "a");
    }
    long unknown = a ^ 0x5a5a5a5aL;
    try (VersionedStore reader = open()) {
      assertThatThrownBy(() -> reader.begin(1, OptionalLong.of(unknown)))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("commit " + StoreLayout.formatId(unknown) + " of version 1")
          .hasMessageContaining("its other commits: " + StoreLayout.formatId(a));
      assertThatThrownBy(() -> reader.begin(0, OptionalLong.of(unknown)))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("version 0 is the empty state");
      // The failed loads left the store usable.
      assertThat(load(reader, 1, a)).containsExactly(Map.entry("k", "a"));
    }
  }
}
