package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Torn, truncated and bit-flipped changelogs, manifests and SST files, and missing ones: each is
 * detected on load. Either recovery takes another path that gives the exact state (an older
 * snapshot plus changelogs), or it fails with an error naming the file. A wrong value is never
 * returned.
 */
class CorruptionDetectionTest {
  /** Ways to damage a file. */
  enum Damage {
    TORN(b -> Arrays.copyOf(b, b.length / 2)),
    TRUNCATED_BY_ONE(b -> Arrays.copyOf(b, b.length - 1)),
    BIT_FLIPPED_IN_PAYLOAD(
        b -> {
          byte[] c = b.clone();
          c[8 + (c.length - 24) / 2] ^= 0x10;
          return c;
        }),
    EMPTY(b -> new byte[0]),
    MISSING(null);

    final UnaryOperator<byte[]> change;

    Damage(UnaryOperator<byte[]> change) {
      this.change = change;
    }
  }

  @TempDir Path tmp;
  private static final RocksDbMemoryBudget budget = EngineFixture.BUDGET;
  private int instances;

  /** Versions 1..10, snapshots at 4 and 8 (interval 4), every changelog retained. */
  private InMemoryStorage build(StoreOptions options) {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable, options)) {
      for (long v = 1; v <= 10; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
        store.maintain();
      }
    }
    return durable;
  }

  private VersionedStore open(InMemoryStorage durable, StoreOptions options) {
    return VersionedStore.builder("op=0/part=1", durable)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(options)
        .memoryBudget(budget)
        .open();
  }

  private static final StoreOptions KEEP_ALL =
      StoreOptions.defaults()
          .withSnapshotInterval(4)
          .withMinVersionsToRetain(1000)
          .withInlineSstMaxBytes(0); // damaged SSTs need SST files

  private static void damage(InMemoryStorage durable, String name, Damage d) {
    assertThat(durable.names()).contains(name);
    if (d == Damage.MISSING) {
      durable.delete(name);
    } else {
      durable.overwriteForTest(name, d.change.apply(durable.bytes(name)));
    }
  }

  private static Class<? extends Exception> expectedError(Damage d) {
    return d == Damage.MISSING ? MissingFileException.class : CorruptFileException.class;
  }

  /** The one file of {@code dir} ("changelog/" or "snapshot/") for version {@code v}. */
  private static String fileOf(InMemoryStorage durable, String dir, long v) {
    List<String> names =
        durable.names().stream()
            .filter(n -> n.startsWith(dir + String.format("%020d", v) + "-"))
            .toList();
    assertThat(names).hasSize(1);
    return names.get(0);
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedNewestChangelogFailsNamingIt(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    String name = fileOf(durable, "changelog/", 10);
    damage(durable, name, d);
    try (VersionedStore store = open(durable, KEEP_ALL)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(expectedError(d))
          .hasMessageContaining(
              d == Damage.MISSING ? "no valid changelog of version 10 in memory://" : name)
          .hasMessageContaining("Cannot load version 10 of store op=0/part=1");
      // Versions before the damage still load exactly.
      try (StateTransaction tx = store.begin(9)) {
        assertState(tx, 9);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedChangelogInTheChainFailsNamingIt(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    String name = fileOf(durable, "changelog/", 9);
    damage(durable, name, d);
    try (VersionedStore store = open(durable, KEEP_ALL)) {
      // Version 10 names the commit of 9 it builds on, so the error names the exact file.
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(expectedError(d))
          .hasMessageContaining(name)
          .hasMessageContaining("Cannot load version 10 of store op=0/part=1");
      // Versions before the damage still load exactly.
      try (StateTransaction tx = store.begin(8)) {
        assertState(tx, 8);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void aSnapshotOfTheVersionLoadedServesItWhateverOlderChangelogsHold(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    damage(durable, fileOf(durable, "changelog/", 6), d);
    try (VersionedStore store = open(durable, KEEP_ALL);
        StateTransaction tx = store.begin(8)) {
      assertState(tx, 8); // from the snapshot of 8, without walking past it
      assertThat(store.lastSnapshotVersion()).isEqualTo(8);
    }
  }

  /**
   * Changelog {@code name} rewritten as a writer with a defect would leave it: a frame that
   * verifies, a header that names its commit, changes that do not decode.
   */
  private static void writeUndecodableChanges(InMemoryStorage durable, String name) {
    FramedFile.Payload good =
        FramedFile.unframeVersioned(durable.bytes(name), FileKind.CHANGELOG, name);
    Changelog.Stored header = Changelog.readStored(good.bytes(), good.formatVersion(), name);
    byte[] encoded =
        ByteBuffer.allocate(24 + 3)
            .putLong(header.version())
            .putLong(header.commitId())
            .putLong(header.parentId())
            .put(new byte[] {0, 1, 9}) // no family ops, one family, then a name that runs out
            .array();
    byte[] stored =
        ByteBuffer.allocate(2 + encoded.length)
            .put((byte) 0)
            .put((byte) encoded.length)
            .put(encoded)
            .array(); // codec none, then the encoded length
    durable.overwriteForTest(name, FramedFile.frame(FileKind.CHANGELOG, stored));
  }

  @Test
  void changesThatDoNotDecodeFailTheReplayNamingTheFile() {
    InMemoryStorage durable = build(KEEP_ALL);
    String name = fileOf(durable, "changelog/", 10);
    writeUndecodableChanges(durable, name);
    try (VersionedStore store = open(durable, KEEP_ALL)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining("Cannot load version 10 of store op=0/part=1")
          .hasMessageContaining(name);
      try (StateTransaction tx = store.begin(9)) {
        assertState(tx, 9);
      }
    }
  }

  @Test
  void aVersionWithASnapshotIsServedWithoutDecodingItsChangelog() {
    InMemoryStorage durable = build(KEEP_ALL);
    writeUndecodableChanges(durable, fileOf(durable, "changelog/", 8));
    try (VersionedStore store = open(durable, KEEP_ALL)) {
      try (StateTransaction tx = store.begin(10)) {
        assertState(tx, 10); // the snapshot of 8, then the changelogs of 9 and 10
      }
      assertThat(store.lastSnapshotVersion()).isEqualTo(8);
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedManifestFallsBackToAnOlderSnapshotExactly(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    damage(durable, fileOf(durable, "snapshot/", 8), d);
    try (VersionedStore store = open(durable, KEEP_ALL);
        StateTransaction tx = store.begin(10)) {
      assertState(tx, 10);
      assertThat(store.lastSnapshotVersion()).isEqualTo(4);
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedSstFallsBackToAnOlderSnapshotExactly(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    // An SST that only the snapshot of version 8 holds.
    List<String> sst8 = sharedOnlyBy(durable, 8);
    damage(durable, sst8.get(0), d);
    try (VersionedStore store = open(durable, KEEP_ALL);
        StateTransaction tx = store.begin(10)) {
      assertState(tx, 10);
      assertThat(store.lastSnapshotVersion()).isEqualTo(4);
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedSnapshotWithNoFallbackFailsNamingTheFile(Damage d) {
    // Retention keeps only what versions 9..10 need: snapshot 8 and changelogs 9, 10.
    StoreOptions tight = KEEP_ALL.withMinVersionsToRetain(2).withTornFileGraceMillis(0);
    InMemoryStorage durable = build(tight);
    assertThat(durable.names()).noneMatch(n -> n.startsWith("changelog/00000000000000000008-"));
    String manifest = fileOf(durable, "snapshot/", 8);
    damage(durable, manifest, d);
    try (VersionedStore store = open(durable, tight)) {
      // The changelog the walk needed next (8, on the lineage) is named, and so is the manifest.
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("Cannot load version 10")
          .hasMessageContaining("changelog/00000000000000000008-")
          .hasMessageContaining(d == Damage.MISSING ? "changelog" : manifest);
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedSstWithNoFallbackFailsNamingTheFile(Damage d) {
    StoreOptions tight = KEEP_ALL.withMinVersionsToRetain(2).withTornFileGraceMillis(0);
    InMemoryStorage durable = build(tight);
    String sst = sstNames(durable, fileOf(durable, "snapshot/", 8)).get(0);
    damage(durable, sst, d);
    try (VersionedStore store = open(durable, tight)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("Cannot load version 10")
          .hasMessageContaining("Skipped as unusable")
          .hasMessageContaining(sst);
    }
  }

  /** The SSTs referenced by snapshot {@code v} and by no older snapshot. */
  private static List<String> sharedOnlyBy(InMemoryStorage durable, long v) {
    List<String> older =
        durable.names().stream()
            .filter(n -> n.startsWith("snapshot/") && !n.contains(String.format("%020d", v)))
            .flatMap(n -> sstNames(durable, n).stream())
            .toList();
    List<String> mine =
        sstNames(durable, fileOf(durable, "snapshot/", v)).stream()
            .filter(n -> !older.contains(n))
            .toList();
    assertThat(mine).isNotEmpty();
    return mine;
  }

  private static List<String> sstNames(InMemoryStorage durable, String manifest) {
    byte[] payload =
        io.streamstate.core.format.FramedFile.unframe(
            durable.bytes(manifest),
            io.streamstate.core.format.FileKind.SNAPSHOT_MANIFEST,
            manifest);
    return io.streamstate.core.format.SnapshotManifest.decode(payload, manifest).sharedNames();
  }
}
