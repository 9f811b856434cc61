package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link VersionedStore#readChanges} and {@link VersionedStore#beginFromSnapshot} against a plain
 * Java model: random puts and deletes over {@value #VERSIONS} versions, snapshots of versions 3 and
 * 7, and a retried commit of version 5 (a zombie's, newer than the commit the later versions build
 * on, with a snapshot of its own) that neither may read.
 */
class ChangeFeedAndReplayTest {
  private static final int VERSIONS = 10;
  private static final int KEYS = 30;

  @TempDir Path tmp;

  private final List<VersionedStore> opened = new ArrayList<>();

  @AfterEach
  void closeStores() {
    opened.forEach(VersionedStore::close);
  }

  static Stream<Long> seeds() {
    return LongStream.range(0, 4).boxed();
  }

  /** What a run committed: the state after each version, and each version's last change per key. */
  private static final class Model {
    final List<TreeMap<String, String>> states = new ArrayList<>();

    /** Per version (index = version), key to value, null for a delete. */
    final List<TreeMap<String, String>> changes = new ArrayList<>();

    Model() {
      states.add(new TreeMap<>());
      changes.add(new TreeMap<>());
    }
  }

  private final AtomicLong clock = new AtomicLong(1_000);
  private final InMemoryStorage storage = new InMemoryStorage(clock::incrementAndGet);

  private VersionedStore open(String name) {
    VersionedStore store =
        VersionedStore.builder("feed", storage)
            .prefix("s/")
            .localDir(tmp.resolve(name))
            .options(StoreOptions.defaults().withSnapshotInterval(1000))
            .memoryBudget(EngineFixture.BUDGET)
            .open();
    opened.add(store);
    return store;
  }

  /** Random changes to a transaction, mirrored into the model's next version. */
  private static void randomChanges(Random random, StateTransaction tx, Model model) {
    TreeMap<String, String> state = new TreeMap<>(model.states.get(model.states.size() - 1));
    TreeMap<String, String> changes = new TreeMap<>();
    int n = 1 + random.nextInt(12);
    for (int i = 0; i < n; i++) {
      String key = String.format("k%02d", random.nextInt(KEYS));
      if (random.nextInt(3) == 0) {
        tx.delete("default", EngineFixture.bytes(key)); // also of absent keys: Spark does that
        state.remove(key);
        changes.put(key, null);
      } else {
        String value = "v" + model.states.size() + "-" + i;
        tx.put("default", EngineFixture.bytes(key), EngineFixture.bytes(value));
        state.put(key, value);
        changes.put(key, value);
      }
    }
    model.states.add(state);
    model.changes.add(changes);
  }

  /** Commits versions 1..10 on a main store, a zombie's retry of 5, snapshots of 3, 7 and 5'. */
  private Model commitHistory(long seed) {
    Random random = new Random(seed);
    Model model = new Model();
    VersionedStore main = open("main");
    for (long v = 1; v <= VERSIONS; v++) {
      StateTransaction tx = main.begin(v - 1);
      randomChanges(random, tx, model);
      assertThat(tx.commit()).isEqualTo(v);
      if (v == 3 || v == 7) {
        assertThat(main.snapshotNow()).isEqualTo(v);
      }
      if (v == 5) {
        // A retry of version 5 that committed after the main one; version 6 builds on the main
        // one (the main store's local instance), so only a load of 5 itself may take the retry.
        VersionedStore zombie = open("zombie");
        StateTransaction retry = zombie.begin(4);
        retry.put("default", EngineFixture.bytes("k00"), EngineFixture.bytes("zombie"));
        retry.put("default", EngineFixture.bytes("zz"), EngineFixture.bytes("zombie"));
        assertThat(retry.commit()).isEqualTo(5);
        assertThat(zombie.snapshotNow()).isEqualTo(5);
      }
    }
    return model;
  }

  /** The changes of a changelog as the model writes them: key to value, null for a delete. */
  private static TreeMap<String, String> asModel(Changelog changelog) {
    TreeMap<String, String> changes = new TreeMap<>();
    for (Changelog.FamilyChanges family : changelog.changes()) {
      assertThat(family.family()).isEqualTo("default");
      for (Changelog.Change c : family.changes()) {
        changes.put(
            new String(c.key(), StandardCharsets.UTF_8),
            c.isDelete() ? null : new String(c.value(), StandardCharsets.UTF_8));
      }
    }
    return changes;
  }

  private static List<TreeMap<String, String>> feed(VersionedStore store, long from, long to) {
    List<TreeMap<String, String>> read = new ArrayList<>();
    try (CloseableIterator<Changelog> changes = store.readChanges(from, to)) {
      long expected = from;
      while (changes.hasNext()) {
        Changelog changelog = changes.next();
        assertThat(changelog.version()).isEqualTo(expected++);
        read.add(asModel(changelog));
      }
    }
    return read;
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void changeFeedIsEachVersionsLastChangePerKeyOnTheLineageNotTheRetry(long seed) {
    Model model = commitHistory(seed);
    VersionedStore reader = open("reader");

    assertThat(feed(reader, 1, VERSIONS)).isEqualTo(model.changes.subList(1, VERSIONS + 1));
    assertThat(feed(reader, 6, 8)).isEqualTo(model.changes.subList(6, 9));
    assertThat(feed(reader, 4, 4)).isEqualTo(model.changes.subList(4, 5));
    // A feed ending at 5 follows a load of 5: the newest commit of 5, the retry.
    List<TreeMap<String, String>> toFive = feed(reader, 5, 5);
    assertThat(toFive.get(0)).containsEntry("zz", "zombie").hasSize(2);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void replayFromASnapshotGivesTheModelsStateOnTheLineage(long seed) {
    Model model = commitHistory(seed);

    for (long[] range : new long[][] {{3, 10}, {7, 10}, {7, 7}, {3, 4}, {0, 6}}) {
      VersionedStore reader = open("reader-" + range[0] + "-" + range[1]);
      StateTransaction tx = reader.beginFromSnapshot(range[0], range[1]);
      assertThat(EngineFixture.contents(tx))
          .as("replay from snapshot %d to version %d", range[0], range[1])
          .isEqualTo(model.states.get((int) range[1]));
      tx.abort();
    }
    // Version 5 alone is the retry's (its newest commit), as a load of 5 is.
    VersionedStore loader = open("loader");
    TreeMap<String, String> loadedFive = EngineFixture.contents(loader.begin(5));
    assertThat(loadedFive).containsEntry("zz", "zombie");
    VersionedStore reader = open("reader-3-5");
    assertThat(EngineFixture.contents(reader.beginFromSnapshot(3, 5))).isEqualTo(loadedFive);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void replayRefusesASnapshotThatIsAbsentOrOfAnotherLineage(long seed) {
    commitHistory(seed);
    VersionedStore reader = open("reader");

    assertThatThrownBy(() -> reader.beginFromSnapshot(4, 10))
        .isExactlyInstanceOf(StreamStateException.class)
        .hasMessageContaining("there is no snapshot of version 4")
        .hasMessageContaining("snapshots of versions [3, 5, 7]");
    // The only snapshot of 5 is the retry's: version 10 does not build on it.
    assertThatThrownBy(() -> reader.beginFromSnapshot(5, 10))
        .isExactlyInstanceOf(StreamStateException.class)
        .hasMessageContaining("are of other commits than commit")
        .hasMessageContaining("the one on the lineage of version 10");
    assertThatThrownBy(() -> reader.beginFromSnapshot(7, 11))
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining("Cannot read version 11 of store feed: no changelog of it");
    assertThatThrownBy(() -> reader.readChanges(0, 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must start at 1 or later");
    // A failed replay leaves the store usable.
    assertThat(reader.beginFromSnapshot(7, 9).version()).isEqualTo(9);
  }
}
