package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static io.streamstate.testkit.engine.EngineFixture.contents;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A transaction that starts empty at a version ({@link VersionedStore#beginEmpty}, what Spark's
 * offline repartitioning asks for with {@code loadEmpty}): its commit is the whole state of the new
 * version, published as a snapshot; nothing of the versions before leaks into it or into the
 * versions built on it; an aborted one leaves the store's real state loadable.
 */
class EmptyBaseTest {
  @TempDir Path tmp;
  private final InMemoryStorage storage = new InMemoryStorage();
  private int instances;

  private VersionedStore open() {
    return VersionedStore.builder("op=0/part=0", storage)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  /** Versions 1 to 4 of an old run: keys old0..old3, and old1 removed in version 4. */
  private TreeMap<String, String> oldRun(VersionedStore store) {
    TreeMap<String, String> model = new TreeMap<>();
    for (long v = 0; v < 4; v++) {
      try (StateTransaction tx = store.begin(v)) {
        if (v == 3) {
          tx.delete("default", bytes("old1"));
          model.remove("old1");
        } else {
          tx.put("default", bytes("old" + v), bytes("v" + v));
          model.put("old" + v, "v" + v);
        }
        tx.commit();
      }
    }
    return model;
  }

  @Test
  void theCommitIsTheWholeNewVersionAndLaterVersionsBuildOnIt() {
    long id;
    try (VersionedStore old = open()) {
      oldRun(old);
    }
    try (VersionedStore writer = open()) {
      try (StateTransaction tx = writer.beginEmpty(5)) {
        assertThat(contents(tx)).isEmpty();
        tx.put("default", bytes("new1"), bytes("a"));
        tx.put("default", bytes("new2"), bytes("b"));
        assertThat(tx.commit()).isEqualTo(6);
        id = tx.committedId();
      }
      assertThat(storage.names()).anyMatch(n -> n.contains("/00000000000000000006-"));
      assertThat(storage.names())
          .filteredOn(n -> n.contains("00000000000000000006-") && n.endsWith(".changelog"))
          .isEmpty();
      // The writer's own instance holds version 6 and builds on it.
      try (StateTransaction tx = writer.begin(6)) {
        tx.put("default", bytes("new3"), bytes("c"));
        tx.delete("default", bytes("new1"));
        assertThat(tx.commit()).isEqualTo(7);
      }
    }
    try (VersionedStore reader = open()) {
      try (StateTransaction tx = reader.begin(6)) {
        assertThat(contents(tx)).containsExactly(Map.entry("new1", "a"), Map.entry("new2", "b"));
      }
      try (StateTransaction tx = reader.begin(6, OptionalLong.of(id))) {
        assertThat(contents(tx)).hasSize(2);
      }
      try (StateTransaction tx = reader.begin(7)) {
        assertThat(contents(tx)).containsExactly(Map.entry("new2", "b"), Map.entry("new3", "c"));
      }
    }
  }

  @Test
  void anAbortedEmptyStartLeavesTheRealStateLoadable() {
    try (VersionedStore store = open()) {
      TreeMap<String, String> model = oldRun(store);
      try (StateTransaction tx = store.beginEmpty(4)) {
        tx.put("default", bytes("new"), bytes("x"));
        tx.abort();
      }
      try (StateTransaction tx = store.begin(4)) {
        assertThat(contents(tx)).isEqualTo(model);
      }
    }
  }
}
