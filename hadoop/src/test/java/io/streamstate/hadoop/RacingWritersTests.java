package io.streamstate.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two writers committing the same version of one store on a Hadoop file system (a task retry, a
 * speculative attempt, a zombie executor, a batch re-run): both commits succeed under
 * attempt-unique names, and a third instance loads exactly one writer's whole commit, never a mix.
 *
 * <p>Each of the three {@link VersionedStore}s has its own local directory, its own {@link
 * HadoopStorage} and its own {@link FileSystem} client, as three executors would. Subclasses give
 * the file system (HDFS, S3A).
 */
abstract class RacingWritersTests {
  private static final int ROUNDS = 40;
  private static final int KEYS = 50;
  private static final int IDENTICAL_ROUNDS = 10;
  private static final String PREFIX = "state/0/3/";
  private static final long TIMEOUT_SECONDS = 60;

  private static RocksDbMemoryBudget budget;

  @TempDir java.nio.file.Path localDirs;

  private final List<FileSystem> clients = new ArrayList<>();
  private ExecutorService pool;

  /**
   * A new client of the file system under test, with no state shared with other clients (its own
   * connections, threads and, on HDFS, lease holder). The test closes it.
   */
  protected abstract FileSystem newClient() throws IOException;

  /** A directory of the file system under test that no other test uses. */
  protected abstract Path newRoot(String testName);

  @BeforeAll
  static void openBudget() {
    budget = new RocksDbMemoryBudget(64L << 20);
  }

  @AfterAll
  static void closeBudget() {
    if (budget != null) {
      budget.close();
    }
  }

  @BeforeEach
  void startPool() {
    pool = Executors.newFixedThreadPool(2);
  }

  @AfterEach
  void closeClients() throws IOException {
    pool.shutdownNow();
    for (FileSystem client : clients) {
      client.close();
    }
  }

  @Test
  void racingWritersBothCommitAndEveryLoadSeesExactlyOneWholeCommit() throws Exception {
    Path root = newRoot("different-content");
    TimedStorage storageOfA = new TimedStorage(storageOfNewClient(root));
    TimedStorage storageOfB = new TimedStorage(storageOfNewClient(root));
    Storage storageOfReader = storageOfNewClient(root);
    Map<String, Integer> loaded = new TreeMap<>();
    int overlapping = 0;
    for (int round = 0; round < ROUNDS; round++) {
      long version = round;
      String suffix = "-round-" + round;
      // New instances each round: each writer starts from what durable storage says version
      // `round` is (the newest commit of it), as a task on another executor would.
      try (VersionedStore a = openStore("a", storageOfA);
          VersionedStore b = openStore("b", storageOfB);
          VersionedStore reader = openStore("reader", storageOfReader)) {
        race(version, List.of(a, b), List.of(values("a" + suffix), values("b" + suffix)));
        overlapping += storageOfA.lastCreateOverlaps(storageOfB) ? 1 : 0;
        Map<String, String> state = load(reader, version + 1);
        String writer = state.get("key-000").substring(0, 1);
        assertThat(state)
            .as("version %d as a third instance loads it", version + 1)
            .isEqualTo(values(writer + suffix));
        loaded.merge(writer, 1, Integer::sum);
        reader.snapshotNow(); // keeps the next round's loads short
      }
    }
    // Both commits of every version were published, each under its own name.
    assertThat(
            storageOfA.list(PREFIX + "changelog/").stream()
                .filter(f -> !f.name().endsWith("-h.changelog"))
                .count())
        .isEqualTo(2L * ROUNDS);
    System.out.printf(
        "racing writers on %s: %d rounds, both commits succeeded in each, loads saw one whole"
            + " commit (%s); both creates in flight at once in %d%n",
        FramedFile.location(storageOfA, PREFIX), ROUNDS, loaded, overlapping);
    // Else the writers took turns and the test proved less than it says.
    assertThat(overlapping).as("rounds in which both creates were in flight at once").isPositive();
  }

  @Test
  void bothRacingWritersOfIdenticalContentSucceed() throws Exception {
    Path root = newRoot("identical-content");
    Storage storage = storageOfNewClient(root);
    try (VersionedStore a = openStore("a", storage);
        VersionedStore b = openStore("b", storageOfNewClient(root));
        VersionedStore reader = openStore("reader", storageOfNewClient(root))) {
      for (int round = 0; round < IDENTICAL_ROUNDS; round++) {
        long version = round;
        Map<String, String> same = values("same-round-" + round);
        race(version, List.of(a, b), List.of(same, same));
        assertThat(load(reader, version + 1)).isEqualTo(same);
      }
    }
    System.out.printf(
        "racing writers of identical content on %s: %d rounds, both succeeded in each%n",
        FramedFile.location(storage, PREFIX), IDENTICAL_ROUNDS);
  }

  /**
   * Opens a transaction at {@code version} on each writer and puts its values, then releases all
   * commits at once and waits for them: every commit must succeed.
   */
  private void race(long version, List<VersionedStore> writers, List<Map<String, String>> contents)
      throws Exception {
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Long>> commits = new ArrayList<>();
    for (int i = 0; i < writers.size(); i++) {
      StateTransaction tx = writers.get(i).begin(version);
      contents.get(i).forEach((k, v) -> tx.put("default", utf8(k), utf8(v)));
      commits.add(
          pool.submit(
              () -> {
                try (tx) {
                  start.await();
                  return tx.commit();
                }
              }));
    }
    start.countDown();
    for (Future<Long> commit : commits) {
      assertThat(commit.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).isEqualTo(version + 1);
    }
  }

  /** Every entry of {@code version} as {@code reader} loads it. */
  private static Map<String, String> load(VersionedStore reader, long version) {
    Map<String, String> entries = new TreeMap<>();
    try (StateTransaction tx = reader.begin(version)) {
      tx.iterator("default")
          .forEachRemaining(
              kv -> entries.put(new String(kv.key(), UTF_8), new String(kv.value(), UTF_8)));
    }
    return entries;
  }

  /**
   * The same {@value #KEYS} keys in every round and writer, each with a value naming its writer.
   */
  private static Map<String, String> values(String writerAndRound) {
    Map<String, String> values = new TreeMap<>();
    for (int i = 0; i < KEYS; i++) {
      values.put(String.format("key-%03d", i), writerAndRound + "-value-" + i);
    }
    return values;
  }

  private Storage storageOfNewClient(Path root) throws IOException {
    FileSystem client = newClient();
    clients.add(client);
    return HadoopStorage.open(client, root);
  }

  private VersionedStore openStore(String name, Storage storage) {
    return VersionedStore.builder(name, storage)
        .prefix(PREFIX)
        .localDir(localDirs.resolve(name))
        .options(StoreOptions.defaults())
        .memoryBudget(budget)
        .open();
  }

  /**
   * A storage that remembers when its last {@code create} started and returned (each writer creates
   * one file per commit), to tell whether two writers' creates were in flight at the same time.
   */
  private static final class TimedStorage implements Storage {
    private final Storage delegate;
    private volatile long lastCreateStart;
    private volatile long lastCreateEnd;

    TimedStorage(Storage delegate) {
      this.delegate = delegate;
    }

    boolean lastCreateOverlaps(TimedStorage other) {
      return Math.max(lastCreateStart, other.lastCreateStart)
          < Math.min(lastCreateEnd, other.lastCreateEnd);
    }

    @Override
    public void create(String name, ContentWriter content) {
      lastCreateStart = System.nanoTime();
      try {
        delegate.create(name, content);
      } finally {
        lastCreateEnd = System.nanoTime();
      }
    }

    @Override
    public InputStream open(String name) {
      return delegate.open(name);
    }

    @Override
    public boolean delete(String name) {
      return delegate.delete(name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      return delegate.list(prefix);
    }

    @Override
    public String describe() {
      return delegate.describe();
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(UTF_8);
  }
}
