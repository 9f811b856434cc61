package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Small new SSTs travel inside the snapshot manifest, so a small store snapshots as one file; a
 * larger one is a shared file that later snapshots reuse.
 */
class SnapshotInliningTest {
  @TempDir Path tmp;

  @Test
  void aSmallStoreSnapshotsAsOneFileAndRestoresExactly() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable, StoreOptions.defaults(), "a")) {
      commit(store, 1, 5);
      Set<String> before = names(durable);
      assertThat(store.snapshotNow()).isEqualTo(5);
      Set<String> written = new TreeSet<>(names(durable));
      written.removeAll(before);
      assertThat(written).singleElement().asString().startsWith("snapshot/");
      assertThat(store.metrics().snapshot().sstFilesUploaded()).isZero();
    }
    // Only the snapshot is left to restore from: the state must come out of its inline SSTs.
    try (VersionedStore fresh = reopenFromSnapshotsAlone(durable, StoreOptions.defaults());
        StateTransaction tx = fresh.begin(5)) {
      assertState(tx, 5);
    }
  }

  @Test
  void laterSnapshotsOfASmallStoreStayOneFileEach() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable, StoreOptions.defaults(), "a")) {
      for (long v = 5; v <= 15; v += 5) {
        commit(store, v - 4, v);
        Set<String> before = names(durable);
        store.snapshotNow();
        Set<String> written = new TreeSet<>(names(durable));
        written.removeAll(before);
        assertThat(written).as("files of snapshot %d", v).hasSize(1);
      }
      assertThat(ssts(durable)).isEmpty();
    }
    try (VersionedStore fresh = reopenFromSnapshotsAlone(durable, StoreOptions.defaults());
        StateTransaction tx = fresh.begin(15)) {
      assertState(tx, 15);
    }
  }

  @Test
  void anSstAboveTheLimitIsSharedAndReusedWhileNewSmallOnesGoInline() {
    InMemoryStorage durable = new InMemoryStorage();
    StoreOptions options = StoreOptions.defaults().withInlineSstMaxBytes(256 << 10);
    Random random = new Random(7);
    TreeMap<String, String> expected = new TreeMap<>();
    try (VersionedStore store = open(durable, options, "a")) {
      // Version 1: ~2 MB of incompressible values, flushed into one SST above the limit.
      try (StateTransaction tx = store.begin(0)) {
        for (int i = 0; i < 1000; i++) {
          byte[] value = new byte[1024];
          random.nextBytes(value);
          String v = java.util.HexFormat.of().formatHex(value); // LZ4 barely shrinks it
          tx.put("default", EngineFixture.bytes("big" + i), EngineFixture.bytes(v));
          expected.put("big" + i, v);
        }
        tx.commit();
      }
      store.snapshotNow();
      assertThat(ssts(durable)).hasSize(1);
      // Version 2: a few small changes; its SST is small and new, so it goes inline.
      try (StateTransaction tx = store.begin(1)) {
        for (int i = 0; i < 10; i++) {
          tx.put("default", EngineFixture.bytes("small" + i), EngineFixture.bytes("s" + i));
          expected.put("small" + i, "s" + i);
        }
        tx.commit();
      }
      store.snapshotNow();
      assertThat(ssts(durable)).as("the big SST reused, the small one inline").hasSize(1);
      assertThat(store.metrics().snapshot().sstFilesReused()).isEqualTo(1);
      assertThat(store.metrics().snapshot().sstFilesUploaded()).isEqualTo(1);
    }
    try (VersionedStore fresh = reopenFromSnapshotsAlone(durable, options);
        StateTransaction tx = fresh.begin(2)) {
      assertThat(EngineFixture.contents(tx)).isEqualTo(expected);
    }
  }

  @Test
  void withInliningOffEverySstIsASharedFile() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store =
        open(durable, StoreOptions.defaults().withInlineSstMaxBytes(0), "a")) {
      commit(store, 1, 5);
      store.snapshotNow();
      assertThat(ssts(durable)).isNotEmpty();
      assertThat(store.metrics().snapshot().sstFilesUploaded()).isEqualTo(ssts(durable).size());
    }
  }

  @Test
  void theSnapshotCarriesTheLiveKeyFiltersAndARestoreTakesThem() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable, StoreOptions.defaults(), "a")) {
      commit(store, 1, 5);
      store.snapshotNow();
    }
    String snapshot =
        durable.names().stream().filter(n -> n.startsWith("snapshot/")).findFirst().orElseThrow();
    SnapshotManifest manifest =
        StoreFiles.readManifest(durable, StoreLayout.parseSnapshot(snapshot));
    assertThat(manifest.files())
        .filteredOn(e -> e.localName().equals("streamstate-live-keys"))
        .singleElement()
        .matches(e -> !e.isShared() && e.inlineContent().length > 0, "inline, not empty");
    // Restored: the file was written into the new local directory and taken by the instance (it
    // describes the files as checkpointed, so it must not stay behind), and reads are exact.
    try (VersionedStore fresh = reopenFromSnapshotsAlone(durable, StoreOptions.defaults());
        StateTransaction tx = fresh.begin(5)) {
      assertState(tx, 5);
      try (Stream<Path> files = Files.walk(tmp.resolve("b"))) {
        assertThat(files.map(f -> f.getFileName().toString()))
            .contains("CURRENT")
            .doesNotContain("streamstate-live-keys");
      }
    }
  }

  private VersionedStore open(InMemoryStorage durable, StoreOptions options, String local) {
    return VersionedStore.builder("s", durable)
        .localDir(tmp.resolve(local))
        .options(options)
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  /** A new process's store, with the changelogs gone: its state can only come from snapshots. */
  private VersionedStore reopenFromSnapshotsAlone(InMemoryStorage durable, StoreOptions options) {
    durable.names().stream().filter(n -> n.startsWith("changelog/")).forEach(durable::delete);
    return open(durable, options, "b");
  }

  private static void commit(VersionedStore store, long from, long to) {
    for (long v = from; v <= to; v++) {
      try (StateTransaction tx = store.begin(v - 1)) {
        writeVersion(tx, v);
        tx.commit();
      }
    }
  }

  private static Set<String> names(InMemoryStorage durable) {
    return new TreeSet<>(durable.names());
  }

  private static Set<String> ssts(InMemoryStorage durable) {
    Set<String> s = new TreeSet<>();
    for (String n : durable.names()) {
      if (n.startsWith("sst/")) {
        s.add(n);
      }
    }
    return s;
  }
}
