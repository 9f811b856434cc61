package io.streamstate.core.engine.recovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The check of a load without loading (what the CLI's {@code verify} and {@code inspect} use),
 * against real loads of the same files: whenever the check says a version loads, a fresh store
 * loads it, and whenever it names a failure, the load fails naming the same file.
 */
class LineageCheckTest {
  private static final StoreLayout LAYOUT = new StoreLayout("0/1/");
  private static final RocksDbMemoryBudget BUDGET = new RocksDbMemoryBudget(16L << 20);

  private final ProcessResources resources = new ProcessResources("test");

  @TempDir Path tmp;

  private Path durable;
  private Storage storage;
  private int stores;

  @BeforeEach
  void setUp() {
    durable = tmp.resolve("durable");
    storage = new LocalStorage(durable);
  }

  @AfterEach
  void closeResources() {
    resources.close();
  }

  private VersionedStore newStore() {
    return VersionedStore.builder("s", storage)
        .prefix(LAYOUT.prefix())
        .localDir(tmp.resolve("local-" + stores++))
        .memoryBudget(BUDGET)
        .resources(resources)
        // Every SST shared, so that snapshots have SST files to check and to damage.
        .options(StoreOptions.defaults().withSnapshotInterval(1000).withInlineSstMaxBytes(0))
        .open();
  }

  /** Commits versions 1..n, one key each, snapshotting the versions in {@code snapshotsAt}. */
  private void commit(int n, long... snapshotsAt) {
    try (VersionedStore store = newStore()) {
      for (int v = 1; v <= n; v++) {
        StateTransaction tx = store.begin(v - 1);
        tx.put("default", ("k" + v).getBytes(StandardCharsets.UTF_8), new byte[] {(byte) v});
        tx.commit();
        for (long s : snapshotsAt) {
          if (s == v) {
            store.snapshotNow();
          }
        }
      }
    }
  }

  private LineageCheck.Result check(long version, LineageCheck.SnapshotChecks checks) {
    return new LineageCheck("s", storage, LAYOUT, SegmentCatalog.of(resources, storage), checks)
        .check(version);
  }

  /** A fresh store's load of {@code version}: null if it loads, else its failure. */
  private StreamStateException load(long version) {
    try (VersionedStore store = newStore()) {
      store.begin(version).abort();
      return null;
    } catch (StreamStateException e) {
      return e;
    }
  }

  private List<String> names(String dir) {
    return storage.list(LAYOUT.prefix() + dir).stream().map(FileInfo::name).toList();
  }

  private void flipByte(String name, int fromEnd) throws IOException {
    Path file = durable.resolve(name);
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - fromEnd] ^= 0x5a;
    Files.write(file, bytes);
  }

  @Test
  void aLineageOfChangelogsAloneStandsOnTheEmptyState() {
    commit(4);

    LineageCheck.Result result = check(4, LineageCheck.SnapshotChecks.FULL);

    assertThat(result.loadable()).isTrue();
    assertThat(result.baseVersion()).isZero();
    assertThat(result.oldestLoadable()).isZero();
    assertThat(result.lineage())
        .extracting(LineageCheck.Commit::version)
        .containsExactly(4L, 3L, 2L, 1L);
    assertThat(result.lineage().get(3).parentId()).isZero();
    assertThat(result.onLineage(2, result.lineage().get(2).commitId())).isTrue();
    assertThat(load(4)).isNull();
  }

  @Test
  void theBaseIsTheNewestUsableSnapshotAndTheOldestLoadableTheOldest() {
    commit(6, 2, 4);

    LineageCheck.Result result = check(6, LineageCheck.SnapshotChecks.FULL);

    assertThat(result.loadable()).isTrue();
    assertThat(result.baseVersion()).isEqualTo(4);
    assertThat(result.base().version()).isEqualTo(4);
    assertThat(result.oldestLoadable()).isZero(); // the changelogs still reach the empty state
  }

  @Test
  void aCorruptSstMakesItsSnapshotUnusableAndTheLoadWalksOnAsTheCheckSays() throws IOException {
    commit(6, 4);
    String sst =
        storage.list(LAYOUT.sstDir()).stream().map(FileInfo::name).findFirst().orElseThrow();
    flipByte(sst, 30);

    // Listed with its right length, the SST passes the cheaper check; read, it does not.
    assertThat(check(6, LineageCheck.SnapshotChecks.MANIFESTS).baseVersion()).isEqualTo(4);

    LineageCheck.Result full = check(6, LineageCheck.SnapshotChecks.FULL);
    assertThat(full.loadable()).isTrue();
    assertThat(full.baseVersion()).isZero();
    assertThat(full.skipped()).anyMatch(m -> m.contains(sst));
    assertThat(load(6)).isNull();
  }

  @Test
  void aMissingChangelogBelowTheBaseStillLoadsAndLimitsTheOldestLoadable() throws IOException {
    commit(6, 3);
    String two =
        names("changelog/").stream()
            .filter(n -> n.contains("00000000000000000002-"))
            .findFirst()
            .orElseThrow();
    storage.delete(two);

    LineageCheck.Result result = check(6, LineageCheck.SnapshotChecks.MANIFESTS);

    assertThat(result.loadable()).isTrue();
    assertThat(result.baseVersion()).isEqualTo(3);
    assertThat(result.oldestLoadable()).isEqualTo(3);
    assertThat(load(6)).isNull();
    assertThat(load(2)).isInstanceOf(MissingFileException.class);
  }

  @Test
  void aCorruptChangelogTheLineageNeedsFailsTheCheckAndTheLoadNamingIt() throws IOException {
    commit(5, 2);
    String four =
        names("changelog/").stream()
            .filter(n -> n.contains("00000000000000000004-"))
            .findFirst()
            .orElseThrow();
    flipByte(four, 10);

    LineageCheck.Result result = check(5, LineageCheck.SnapshotChecks.FULL);

    assertThat(result.loadable()).isFalse();
    assertThat(result.failure()).isInstanceOf(CorruptFileException.class);
    assertThat(result.failure().getMessage())
        .contains("Cannot load version 5 of store s")
        .contains(four);
    assertThat(load(5)).isInstanceOf(CorruptFileException.class).hasMessageContaining(four);
    // Version 3 stands on snapshot 2 without reading version 4.
    assertThat(check(3, LineageCheck.SnapshotChecks.FULL).loadable()).isTrue();
    assertThat(load(3)).isNull();
  }

  @Test
  void aTornChangelogOfTheVersionIsSkippedWhenAnotherCommitOfItVerifies() throws IOException {
    commit(3);
    String three =
        names("changelog/").stream()
            .filter(n -> n.contains("00000000000000000003-"))
            .findFirst()
            .orElseThrow();
    // A second, torn commit of version 3 (a writer that died), newer than the good one.
    String torn = LAYOUT.changelog(3, 0x0123456789abcdefL);
    Files.write(durable.resolve(torn), new byte[] {1, 2, 3});
    Files.setLastModifiedTime(
        durable.resolve(torn),
        java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 60_000));

    LineageCheck.Result result = check(3, LineageCheck.SnapshotChecks.FULL);

    assertThat(result.loadable()).isTrue();
    assertThat(result.lineage().get(0).file()).isEqualTo(three);
    assertThat(result.skipped()).anyMatch(m -> m.contains(torn));
    assertThat(load(3)).isNull();
  }

  @Test
  void anExactCommitIsFollowedAndAnUnknownOneFailsNamingIt() {
    commit(3);
    long three = check(3, LineageCheck.SnapshotChecks.FULL).lineage().get(0).commitId();

    LineageCheck.Result exact =
        new LineageCheck(
                "s",
                storage,
                LAYOUT,
                SegmentCatalog.of(resources, storage),
                LineageCheck.SnapshotChecks.FULL)
            .check(3, java.util.OptionalLong.of(three));
    LineageCheck.Result unknown =
        new LineageCheck(
                "s",
                storage,
                LAYOUT,
                SegmentCatalog.of(resources, storage),
                LineageCheck.SnapshotChecks.FULL)
            .check(3, java.util.OptionalLong.of(0x42L));

    assertThat(exact.loadable()).isTrue();
    assertThat(exact.lineage().get(0).commitId()).isEqualTo(three);
    assertThat(unknown.loadable()).isFalse();
    assertThat(unknown.failure())
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining("0000000000000042");
  }

  @Test
  void noCommitOfTheVersionFailsAsTheLoadDoes() {
    commit(2);

    LineageCheck.Result result = check(5, LineageCheck.SnapshotChecks.FULL);

    assertThat(result.loadable()).isFalse();
    assertThat(result.failure()).isInstanceOf(MissingFileException.class);
    assertThat(load(5)).isInstanceOf(MissingFileException.class);
    assertThatThrownBy(() -> check(-1, LineageCheck.SnapshotChecks.FULL))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
