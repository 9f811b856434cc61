package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.testkit.InMemoryStorage;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksDB;

/**
 * Files of every earlier format version still load. {@code format-v1/} holds the durable files of
 * three versions of three stores, written by the release before changelog compression (format
 * version 1): store {@code 0/0/} as changelog files, stores {@code 1/0/} and {@code 1/1/} in
 * segments of a group commit. Each holds {@link EngineFixture#reference} at version 3.
 */
class FormatCompatibilityTest {
  @TempDir Path tmp;

  private Path copyOfFixture() throws IOException, URISyntaxException {
    return copyOfFixture("format-v1");
  }

  private Path copyOfFixture(String name) throws IOException, URISyntaxException {
    Path source = Path.of(getClass().getResource("/" + name).toURI());
    Path target = tmp.resolve("durable-" + name);
    try (Stream<Path> files = Files.walk(source)) {
      for (Path f : files.toList()) {
        Path to = target.resolve(source.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(to);
        } else {
          Files.copy(f, to);
        }
      }
    }
    return target;
  }

  @Test
  void versionOneChangelogsAndSegmentsLoadAndTakeNewCommits() throws Exception {
    Path root = copyOfFixture();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(root)) {
      files = walk.filter(Files::isRegularFile).toList();
    }
    assertThat(files).hasSize(6);
    for (Path f : files) {
      // The fixture must stay what it claims to be: a test that read version-2 files here would
      // pass without proving anything.
      assertThat(Files.readAllBytes(f)[4]).as("format version of %s", f).isEqualTo((byte) 1);
    }
    LocalStorage storage = new LocalStorage(root);
    int instance = 0;
    for (String prefix : List.of("0/0/", "1/0/", "1/1/")) {
      try (VersionedStore store =
          VersionedStore.builder(prefix, storage)
              .prefix(prefix)
              .localDir(tmp.resolve("local" + (++instance)))
              .options(StoreOptions.defaults())
              .memoryBudget(EngineFixture.BUDGET)
              .open()) {
        try (StateTransaction tx = store.begin(3)) {
          assertState(tx, 3);
        }
        // A new commit on top is written in the current version; both load together.
        try (StateTransaction tx = store.begin(3)) {
          writeVersion(tx, 4);
          tx.commit();
        }
      }
      try (VersionedStore fresh =
              VersionedStore.builder(prefix, new LocalStorage(root))
                  .prefix(prefix)
                  .localDir(tmp.resolve("local" + (++instance)))
                  .options(StoreOptions.defaults())
                  .memoryBudget(EngineFixture.BUDGET)
                  .open();
          StateTransaction tx = fresh.begin(4)) {
        assertState(tx, 4);
      }
    }
  }

  @Test
  void aStoreLoadsAcrossCommitsWrittenWithEveryCodec() {
    InMemoryStorage durable = new InMemoryStorage();
    Changelog.Codec[] codecs = Changelog.Codec.values(); // none, deflate, lz4
    long[] bytesPerCodec = new long[codecs.length];
    int instance = 0;
    for (long v = 1; v <= 2L * codecs.length; v++) {
      // Change the codec from one process to the next, as a configuration change would.
      Changelog.Codec codec = codecs[(int) (v % codecs.length)];
      try (VersionedStore store =
              VersionedStore.builder("s", durable)
                  .prefix("0/0/")
                  .localDir(tmp.resolve("l" + (++instance)))
                  .options(StoreOptions.defaults().withChangelogCodec(codec))
                  .memoryBudget(EngineFixture.BUDGET)
                  .open();
          StateTransaction tx = store.begin(v - 1)) {
        assertState(tx, v - 1);
        // Deletes of absent, row-like (mostly zero) keys: compressible bytes, no change of state.
        for (int i = 0; i < 2000; i++) {
          tx.delete("default", EngineFixture.bytes(String.format("row-%060d", v * 10_000 + i)));
        }
        writeVersion(tx, v);
        long before = totalBytes(durable);
        tx.commit();
        bytesPerCodec[codec.ordinal()] += totalBytes(durable) - before;
      }
    }
    long last = 2L * codecs.length;
    try (VersionedStore fresh =
            VersionedStore.builder("s", durable)
                .prefix("0/0/")
                .localDir(tmp.resolve("l" + (++instance)))
                .options(StoreOptions.defaults())
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(last)) {
      assertState(tx, last);
    }
    // The same changes took far fewer bytes compressed than stored as encoded.
    long none = bytesPerCodec[Changelog.Codec.NONE.ordinal()];
    assertThat(bytesPerCodec[Changelog.Codec.DEFLATE.ordinal()]).isLessThan(none / 3);
    assertThat(bytesPerCodec[Changelog.Codec.LZ4.ordinal()]).isLessThan(none / 2);
  }

  /**
   * {@code snapshot-v1/} holds store {@code 0/0/} as the release before hedged snapshot uploads
   * left it (no hedge names): a snapshot of version 3 (a manifest and one shared SST, under its
   * content-addressed name) and the changelogs of versions 4 and 5, those of 1 to 3 deleted as
   * retention would. Version 5 loads from that snapshot; a new hedged snapshot stands on its SST.
   */
  @Test
  void snapshotsWrittenBeforeHedgedUploadsLoadAndLaterHedgedSnapshotsReuseTheirSsts()
      throws Exception {
    // The fixture's SSTs are in RocksDB 9's default format 6, written before SST format 5 was
    // pinned: RocksDB 8 (Spark 3.5's, the testkit's second run) cannot read them, by design.
    Assumptions.assumeTrue(
        RocksDB.rocksdbVersion().getMajor() >= 9,
        "snapshot-v1's SSTs (format 6) need RocksDB 9 (docs/spark-lines.md)");
    Path root = copyOfFixture("snapshot-v1");
    List<String> names;
    try (Stream<Path> walk = Files.walk(root)) {
      names =
          walk.filter(Files::isRegularFile)
              .map(f -> root.relativize(f).toString().replace('\\', '/'))
              .sorted()
              .toList();
    }
    assertThat(names).hasSize(4).noneMatch(n -> n.contains("-h."));
    assertThat(names).filteredOn(n -> n.startsWith("0/0/sst/")).singleElement();
    String oldSst = names.stream().filter(n -> n.startsWith("0/0/sst/")).findFirst().get();
    StoreOptions options = StoreOptions.defaults().withInlineSstMaxBytes(0);
    ExecutorService pool = Executors.newCachedThreadPool();
    HedgedWriter hedger =
        new HedgedWriter(
            HedgePolicy.builder()
                .floor(Duration.ZERO)
                .initialDeadline(Duration.ZERO)
                .budgetFraction(1)
                .budgetBurst(1000)
                .build(),
            pool);
    try (VersionedStore store =
        VersionedStore.builder("s", new LocalStorage(root))
            .prefix("0/0/")
            .localDir(tmp.resolve("s1"))
            .options(options)
            .memoryBudget(EngineFixture.BUDGET)
            .hedger(hedger)
            .open()) {
      try (StateTransaction tx = store.begin(5)) {
        assertState(tx, 5);
      }
      assertThat(store.metrics().snapshot().changelogsReplayed())
          .as("4 and 5 on snapshot 3")
          .isEqualTo(2);
      try (StateTransaction tx = store.begin(5)) {
        writeVersion(tx, 6);
        tx.commit();
      }
      assertThat(store.snapshotNow()).isEqualTo(6);
    } finally {
      pool.shutdown();
    }
    // A hedge's losing copy may still be writing: every copy is read below, so let them finish.
    assertThat(pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES)).isTrue();
    LocalStorage storage = new LocalStorage(root);
    List<String> manifests =
        storage.list("0/0/snapshot/").stream()
            .map(f -> f.name())
            .filter(n -> StoreLayout.parseSnapshot(n).version() == 6)
            .toList();
    assertThat(manifests).isNotEmpty();
    for (String m : manifests) {
      SnapshotManifest manifest =
          SnapshotManifest.decode(
              FramedFile.readPayload(storage, m, FileKind.SNAPSHOT_MANIFEST), m);
      assertThat(manifest.sharedNames()).as("snapshot 6 reuses the old SST").contains(oldSst);
    }
    // Only snapshots remain to load version 6 from (changelogs of 4 to 6 deleted).
    storage.list("0/0/changelog/").forEach(f -> storage.delete(f.name()));
    try (VersionedStore fresh =
            VersionedStore.builder("f", storage)
                .prefix("0/0/")
                .localDir(tmp.resolve("s2"))
                .options(options)
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(6)) {
      assertState(tx, 6);
      assertThat(fresh.metrics().snapshot().changelogsReplayed()).isZero();
    }
  }

  private static long totalBytes(InMemoryStorage storage) {
    return storage.names().stream().mapToLong(n -> storage.bytes(n).length).sum();
  }
}
