package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A load whose version's commit has a snapshot of its own (l2): it stands on that snapshot without
 * reading the commit's changelog (a restart after the snapshot of the last batch: each store's
 * largest read saved), by the newest commit or by the id asked for; and when that snapshot is
 * unusable, it reads the changelogs after all and loads the same state.
 */
class SnapshotOfTheLoadedCommitTest {
  private static final StoreLayout LAYOUT = new StoreLayout("p/");
  private static final long VERSION = 4;

  @TempDir Path tmp;
  private InMemoryStorage durable;
  private FaultInjectingStorage storage;
  private int instances;
  private long commitId;

  private VersionedStore open() {
    return VersionedStore.builder("s", storage)
        .prefix(LAYOUT.prefix())
        .localDir(tmp.resolve("l" + (++instances)))
        .options(StoreOptions.defaults().withSnapshotInterval(1000))
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  @BeforeEach
  void commitVersionsAndSnapshotTheLast() {
    durable = new InMemoryStorage();
    storage = FaultInjectingStorage.builder(durable, 7).build();
    try (VersionedStore store = open()) {
      for (long v = 1; v <= VERSION; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
          commitId = tx.committedId();
        }
      }
      assertThat(store.snapshotNow()).isEqualTo(VERSION);
    }
  }

  /** Loads {@code VERSION} (by {@code id} if given) on a new instance; returns the names opened. */
  private List<String> loadAndRecordOpens(OptionalLong id) {
    int before = storage.calls().size();
    try (VersionedStore store = open();
        StateTransaction tx = store.begin(VERSION, id)) {
      assertThat(tx.baseCommitId()).isEqualTo(commitId);
      assertState(tx, VERSION);
      tx.abort();
    }
    return storage.calls().subList(before, storage.calls().size()).stream()
        .filter(c -> c.kind() == CallKind.OPEN)
        .map(FaultInjectingStorage.Call::name)
        .toList();
  }

  @Test
  void theNewestCommitsSnapshotIsLoadedWithoutReadingItsChangelog() {
    List<String> opened = loadAndRecordOpens(OptionalLong.empty());
    assertThat(opened).contains(LAYOUT.snapshot(VERSION, commitId));
    assertThat(opened).noneMatch(n -> n.startsWith(LAYOUT.changelogDir()));
  }

  @Test
  void theSnapshotOfTheCommitAskedForIsLoadedWithoutReadingItsChangelog() {
    List<String> opened = loadAndRecordOpens(OptionalLong.of(commitId));
    assertThat(opened).contains(LAYOUT.snapshot(VERSION, commitId));
    assertThat(opened).noneMatch(n -> n.startsWith(LAYOUT.changelogDir()));
  }

  @Test
  void anUnusableSnapshotOfThatCommitIsPassedOverForItsChangelogs() {
    String manifest = LAYOUT.snapshot(VERSION, commitId);
    assertThat(durable.list(LAYOUT.snapshotDir()))
        .extracting(FileInfo::name)
        .containsExactly(manifest);
    durable.delete(manifest);
    durable.create(
        manifest, ContentWriter.ofBytes("not a manifest".getBytes(StandardCharsets.UTF_8)));

    for (OptionalLong id : List.of(OptionalLong.empty(), OptionalLong.of(commitId))) {
      List<String> opened = loadAndRecordOpens(id);
      assertThat(opened).as("by %s", id).contains(manifest);
      for (long v = 1; v <= VERSION; v++) {
        long version = v;
        assertThat(opened)
            .as("by %s, version %d replayed", id, v)
            .anyMatch(n -> n.startsWith(LAYOUT.changelogsOf(version)));
      }
    }
  }
}
