package io.streamstate.core.engine.recovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.commit.ChangelogPublisher;
import io.streamstate.core.engine.commit.EncodedCommit;
import io.streamstate.core.engine.local.LocalDb;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.local.LocalSpace;
import io.streamstate.core.engine.local.OpenDatabases;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotHistory;
import io.streamstate.core.engine.snapshot.SnapshotRestorer;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The lineage walk of a load (l2-l5) on changelogs written by hand to a local storage. */
class LineageLoaderTest {
  private final ProcessResources resources = new ProcessResources("test");

  @AfterEach
  void closeResources() {
    resources.close();
  }

  private static final StoreLayout LAYOUT = new StoreLayout("s/");
  private static final byte[] KEY = "k".getBytes(StandardCharsets.UTF_8);
  private static final RocksDbMemoryBudget BUDGET = new RocksDbMemoryBudget(16L << 20);

  @TempDir Path tmp;

  private Storage storage;
  private ChangelogPublisher changelogs;
  private LocalInstance local;
  private StoreMetrics metrics;
  private LineageLoader loader;

  @BeforeEach
  void setUp() {
    storage = new LocalStorage(tmp.resolve("durable"));
    changelogs = new ChangelogPublisher("s", storage, LAYOUT, null);
    local =
        LocalInstance.create(
            "s",
            BUDGET,
            OpenDatabases.of(resources),
            LocalSpace.unmanaged("s", tmp.resolve("local")));
    metrics = new StoreMetrics();
    loader =
        new LineageLoader(
            "s",
            storage,
            LAYOUT,
            StoreOptions.defaults(),
            SegmentCatalog.of(resources, storage),
            local,
            new SnapshotRestorer(storage, new SnapshotHistory()),
            changelogs,
            null,
            metrics);
  }

  @AfterEach
  void tearDown() {
    local.close();
  }

  /** Publishes commit {@code id} of {@code version} on {@code parent}, setting KEY to value. */
  private void write(long version, long id, long parent, String value) {
    Changelog changelog =
        new Changelog(
            version,
            id,
            parent,
            List.of(),
            List.of(
                new Changelog.FamilyChanges(
                    LocalDb.DEFAULT_FAMILY,
                    List.of(new Changelog.Change(KEY, value.getBytes(StandardCharsets.UTF_8))))));
    changelogs.publish(
        new EncodedCommit(
            version, id, parent, changelog.encodeStored(StoreOptions.defaults().changelogCodec())));
  }

  private String value() {
    return new String(local.db().get(LocalDb.DEFAULT_FAMILY, KEY), StandardCharsets.UTF_8);
  }

  @Test
  void loadsAlongTheLineageOfTheVersionsCommitNotARetryNobodyBuiltOn() {
    write(1, 11, 0, "one");
    write(2, 99, 11, "a retry nobody built on");
    write(2, 22, 11, "two");
    write(3, 33, 22, "three");

    loader.load(3);

    assertThat(local.version()).isEqualTo(3);
    assertThat(local.commitId()).isEqualTo(33);
    assertThat(local.lineage()).containsEntry(2L, 22L).containsEntry(1L, 11L);
    assertThat(value()).isEqualTo("three");
    assertThat(metrics.snapshot().changelogsReplayed()).isEqualTo(3);
  }

  @Test
  void replaysOnlyWhatComesAfterALocalInstanceOnTheLineage() {
    write(1, 11, 0, "one");
    write(2, 22, 11, "two");
    loader.load(2);
    write(3, 33, 22, "three");

    loader.load(3);

    assertThat(value()).isEqualTo("three");
    assertThat(metrics.snapshot().changelogsReplayed()).isEqualTo(3); // 2, then 1 more
  }

  @Test
  void failsNamingTheMissingChangelogTheLineageNeeds() {
    write(2, 22, 11, "two");
    write(3, 33, 22, "three");

    assertThatThrownBy(() -> loader.load(3))
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining("Cannot load version 3 of store s")
        .hasMessageContaining(LAYOUT.changelog(1, 11))
        .hasMessageContaining("is missing");
  }
}
