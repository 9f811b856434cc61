package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.testkit.InMemoryStorage;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One INFO line per load from durable storage and per snapshot, saying what it read or wrote and
 * how long it took: how a user diagnoses a slow restart. A warm load logs nothing at INFO (it
 * happens every batch of every partition). The lines come from slf4j-simple on standard error,
 * captured here.
 */
class LoadAndSnapshotLogTest {
  private static final String STORE = "log-test-store";

  @TempDir Path tmp;
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
  private PrintStream originalErr;

  @BeforeEach
  void captureStandardError() {
    originalErr = System.err;
    System.setErr(new PrintStream(new TeeStream(originalErr, captured), true));
  }

  @AfterEach
  void restoreStandardError() {
    System.setErr(originalErr);
  }

  @Test
  void aSnapshotAndEachKindOfColdLoadLogOneLineWithWhatTheyDid() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable, "a")) {
      commit(store, 1, 5);
      assertThat(store.snapshotNow()).isEqualTo(5);
      commit(store, 6, 7);
    }
    String snapshot =
        durable.names().stream().filter(n -> n.startsWith("snapshot/")).findFirst().orElseThrow();
    assertThat(linesWith("snapshot of version 5 published as " + snapshot + " in "))
        .singleElement()
        .asString()
        .containsPattern("\\d+ files \\(0 SSTs uploaded, 0 reused, \\d+ files inline\\)")
        .containsPattern("\\d+ bytes written");

    // Another process: the snapshot of version 5, then the changelogs of versions 6 and 7.
    try (VersionedStore fresh = open(durable, "b")) {
      try (StateTransaction tx = fresh.begin(7)) {
        assertState(tx, 7);
      }
      assertThat(linesWith("loaded version 7"))
          .singleElement()
          .asString()
          .contains("from snapshot " + snapshot + " (")
          .contains(
              "+ 2 changelogs ("
                  + changes(6, 7)
                  + " changes, "
                  + changeBytes(6, 7)
                  + " bytes of keys and values) in ");

      // Warm: held locally, nothing at INFO.
      try (StateTransaction tx = fresh.begin(7)) {
        assertState(tx, 7);
      }
      assertThat(linesWith("loaded version 7")).hasSize(1);
    }

    // Without the snapshot: every changelog on the empty state.
    durable.names().stream().filter(n -> n.startsWith("snapshot/")).forEach(durable::delete);
    try (VersionedStore fromChangelogs = open(durable, "c");
        StateTransaction tx = fromChangelogs.begin(7)) {
      assertState(tx, 7);
    }
    assertThat(linesWith("loaded version 7"))
        .hasSize(2)
        .last()
        .asString()
        .contains(
            "from the empty state + 7 changelogs ("
                + changes(1, 7)
                + " changes, "
                + changeBytes(1, 7)
                + " bytes of keys and values)");
  }

  @Test
  void aLoadOnAnOlderLocalCopyNamesItAsTheBase() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore behind = open(durable, "a")) {
      commit(behind, 1, 3);
      // Another instance (a task that ran elsewhere) commits version 4 on version 3.
      try (VersionedStore other = open(durable, "b")) {
        commit(other, 4, 4);
      }
      try (StateTransaction tx = behind.begin(4)) {
        assertState(tx, 4);
      }
    }
    assertThat(linesWith("loaded version 4"))
        .as("the instance that stayed at version 3")
        .last()
        .asString()
        .contains(
            "from the local instance at version 3 + 1 changelogs ("
                + changes(4, 4)
                + " changes, "
                + changeBytes(4, 4)
                + " bytes");
  }

  private VersionedStore open(InMemoryStorage durable, String local) {
    return VersionedStore.builder(STORE, durable)
        .localDir(tmp.resolve(local))
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  private static void commit(VersionedStore store, long from, long to) {
    for (long v = from; v <= to; v++) {
      try (StateTransaction tx = store.begin(v - 1)) {
        writeVersion(tx, v);
        tx.commit();
      }
    }
  }

  /**
   * The changes of versions {@code from..to} as their transactions store them: one per key {@link
   * EngineFixture#writeVersion} touched, its last write winning (a put then a delete of one key is
   * one delete).
   */
  private static List<Map<String, String>> changesOf(long from, long to) {
    List<Map<String, String>> versions = new ArrayList<>();
    for (long v = from; v <= to; v++) {
      Map<String, String> last = new HashMap<>();
      for (int i = 0; i < 50; i++) {
        last.put("k" + (v * 7 + i) % 300, "v" + v + "-" + i);
      }
      last.put("k" + (v * 13) % 300, null);
      versions.add(last);
    }
    return versions;
  }

  private static long changes(long from, long to) {
    return changesOf(from, to).stream().mapToLong(Map::size).sum();
  }

  /** Their keys' and values' bytes (a delete has a key alone). */
  private static long changeBytes(long from, long to) {
    long n = 0;
    for (Map<String, String> version : changesOf(from, to)) {
      for (Map.Entry<String, String> e : version.entrySet()) {
        n += bytes(e.getKey()).length + (e.getValue() == null ? 0 : bytes(e.getValue()).length);
      }
    }
    return n;
  }

  private List<String> linesWith(String text) {
    return captured
        .toString(StandardCharsets.UTF_8)
        .lines()
        .filter(l -> l.contains("INFO") && l.contains("Store " + STORE + ": " + text))
        .toList();
  }

  /** Writes to both streams: the captured copy for assertions, the original for the report. */
  private static final class TeeStream extends OutputStream {
    private final OutputStream first;
    private final OutputStream second;

    TeeStream(OutputStream first, OutputStream second) {
      this.first = first;
      this.second = second;
    }

    @Override
    public void write(int b) throws java.io.IOException {
      first.write(b);
      second.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws java.io.IOException {
      first.write(b, off, len);
      second.write(b, off, len);
    }
  }
}
