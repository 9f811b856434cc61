package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.RocksDbMemoryBudget;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
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
    return VersionedStore.open(
        "op=0/part=1", durable, "", tmp.resolve("l" + (++instances)), options, budget);
  }

  private static final StoreOptions KEEP_ALL =
      StoreOptions.defaults().withSnapshotInterval(4).withMinVersionsToRetain(1000);

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

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedChangelogInTheChainFailsNamingIt(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    String name = "changelog/00000000000000000010.changelog";
    damage(durable, name, d);
    try (VersionedStore store = open(durable, KEEP_ALL)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(expectedError(d))
          .hasMessageContaining(name)
          .hasMessageContaining("Cannot load version 10 of store op=0/part=1");
      // Versions before the damage still load exactly.
      try (StateTransaction tx = store.begin(9)) {
        assertState(tx, 9);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedManifestFallsBackToAnOlderSnapshotExactly(Damage d) {
    InMemoryStorage durable = build(KEEP_ALL);
    damage(durable, "snapshot/00000000000000000008.snapshot", d);
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
    assertThat(durable.names()).doesNotContain("changelog/00000000000000000001.changelog");
    String manifest = "snapshot/00000000000000000008.snapshot";
    damage(durable, manifest, d);
    try (VersionedStore store = open(durable, tight)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("Cannot load version 10")
          .hasMessageContaining("changelog/00000000000000000001.changelog")
          .hasMessageContaining(d == Damage.MISSING ? "changelog" : manifest);
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedSstWithNoFallbackFailsNamingTheFile(Damage d) {
    StoreOptions tight = KEEP_ALL.withMinVersionsToRetain(2).withTornFileGraceMillis(0);
    InMemoryStorage durable = build(tight);
    String sst = sstNames(durable, "snapshot/00000000000000000008.snapshot").get(0);
    damage(durable, sst, d);
    try (VersionedStore store = open(durable, tight)) {
      assertThatThrownBy(() -> store.begin(10))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("Cannot load version 10")
          .hasMessageContaining("Snapshots skipped as unusable")
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
        sstNames(durable, "snapshot/" + String.format("%020d", v) + ".snapshot").stream()
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
