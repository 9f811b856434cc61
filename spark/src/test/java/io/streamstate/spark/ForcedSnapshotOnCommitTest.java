package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.hadoop.ExclusiveCreateLocalFileSystem;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * Spark's coordinator asks a lagging store to snapshot on commit ({@code getStore(version, None,
 * forceSnapshotOnCommit = true, false)}): the commit returns while the snapshot's writes are
 * stalled, and the snapshot is published and reported once they complete (issue 15: a batch took
 * 16.8 s because one snapshot file's block stalled). The provider is driven directly, as Spark's
 * tasks drive it, on {@code snapstallfs:}, the local disk with create-if-absent whose creates under
 * a store's {@code snapshot/} directory block until the test releases them. Nothing asserts on
 * time: "returned while stalled" holds because only the test thread releases the stall, after the
 * commit returned.
 */
class ForcedSnapshotOnCommitTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(ForcedSnapshotOnCommitTest.class);

  private final List<StreamStateProvider> providers = new ArrayList<>();

  @AfterEach
  void tearDown() {
    SnapshotStallingFileSystem.release();
    providers.forEach(StreamStateProvider::close);
  }

  private StreamStateProvider open(String local) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve(local).toString());
    // Below the default, so that a replay-debt snapshot takes thousands of changes, not a million.
    sqlConf.setConfString(StreamStateConf.SNAPSHOT_REPLAY_DEBT_MIN_CHANGES, "2000");
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    Configuration hadoopConf = new Configuration();
    hadoopConf.set(
        "fs." + SnapshotStallingFileSystem.SCHEME + ".impl",
        SnapshotStallingFileSystem.class.getName());
    hadoopConf.setBoolean("fs." + SnapshotStallingFileSystem.SCHEME + ".impl.disable.cache", true);
    hadoopConf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    StreamStateProvider provider = new StreamStateProvider();
    String root =
        SnapshotStallingFileSystem.SCHEME + "://" + work.resolve("state").toAbsolutePath();
    provider.init(
        new StateStoreId(root, 0, 0, StateStoreId.DEFAULT_STORE_NAME()),
        KEY,
        VALUE,
        new NoPrefixKeyStateEncoderSpec(KEY),
        false,
        storeConf,
        hadoopConf,
        false,
        Option.empty());
    providers.add(provider);
    return provider;
  }

  @Test
  void aForcedSnapshotDoesNotHoldTheCommitAndIsReportedOnceItsWritesComplete() throws Exception {
    Map<String, Integer> model = new TreeMap<>();
    StreamStateProvider provider = open("a");
    commitBatch(provider, 0, false, model);
    commitBatch(provider, 1, false, model);

    SnapshotStallingFileSystem.stall();
    assertThat(returnsInTime(() -> commitBatch(provider, 2, true, model))).isEqualTo(3);
    // The snapshot's manifest create reaches the stall, in the background.
    await().atMost(WAIT).until(() -> SnapshotStallingFileSystem.blockedCalls() >= 1);
    // The next batch is asked again (the coordinator still sees the store lagging): it commits too.
    assertThat(returnsInTime(() -> commitBatch(provider, 3, true, model))).isEqualTo(4);
    assertThat(SnapshotStallingFileSystem.blockedCalls()).isPositive();
    assertThat(provider.lastSnapshotReported()).isEqualTo(-1);
    assertThat(snapshotVersions()).isEmpty();

    SnapshotStallingFileSystem.release();
    // The first upload completes (version 3), then the coalesced request (version 4).
    await().atMost(WAIT).until(() -> provider.lastSnapshotReported() == 4);
    assertThat(snapshotVersions()).contains(3L, 4L);
    assertThat(provider.lastSnapshotVersion()).isEqualTo(4);

    // A new provider of the store (another executor) loads version 4 exactly.
    StreamStateProvider other = open("b");
    StateStore store = other.getStore(4, Option.empty(), false, false);
    try {
      assertThat(contents(store)).isEqualTo(model);
    } finally {
      store.abort();
    }
  }

  @Test
  void closingWaitsForTheSnapshotStillUploadingSoThatItPublishes() throws Exception {
    StreamStateProvider provider = open("a");
    Map<String, Integer> model = new TreeMap<>();
    commitBatch(provider, 0, false, model);
    SnapshotStallingFileSystem.stall();
    commitBatch(provider, 1, true, model); // version 2, whose snapshot stalls in the background
    await().atMost(WAIT).until(() -> SnapshotStallingFileSystem.blockedCalls() >= 1);

    Thread closing = new Thread(provider::close, "closing");
    closing.setDaemon(true);
    closing.start();
    // Seen waiting: without the wait the close ends at once (and the engine then drops an upload
    // that has files left to start; this one's manifest create, already running, would finish).
    await().atMost(WAIT).until(() -> closing.getState() == Thread.State.TIMED_WAITING);
    assertThat(snapshotVersions()).isEmpty();
    SnapshotStallingFileSystem.release();
    closing.join(WAIT.toMillis());
    assertThat(closing.isAlive()).isFalse();
    assertThat(snapshotVersions()).containsOnly(2L);
  }

  @Test
  void aCommitPastTheReplayDebtStartsASnapshotThatMaintenanceReports() throws Exception {
    StreamStateProvider provider = open("a");
    StateStore store = provider.getStore(0, Option.empty(), false, false);
    UnsafeProjection keys = UnsafeProjection.create(KEY);
    UnsafeProjection values = UnsafeProjection.create(VALUE);
    int n = 2_500; // more than snapshot.replayDebtMinChanges, set to 2,000 above
    for (int i = 0; i < n; i++) {
      store.put(
          keys.apply(new GenericInternalRow(new Object[] {UTF8String.fromString("k" + i)})),
          values.apply(new GenericInternalRow(new Object[] {i})),
          StateStore.DEFAULT_COL_FAMILY_NAME());
    }
    assertThat(store.commit()).isEqualTo(1);
    assertThat(store.metrics().customMetrics().get(StreamStateMetrics.REPLAY_DEBT_SNAPSHOTS))
        .isEqualTo(Option.apply(1L));
    await().atMost(WAIT).until(() -> snapshotVersions().contains(1L));
    // The engine took it by itself; the provider's next maintenance tells the coordinator, so
    // that Spark does not see the store lagging and force snapshots it does not need.
    await().atMost(WAIT).until(() -> provider.lastSnapshotVersion() == 1);
    assertThat(provider.lastSnapshotReported()).isEqualTo(-1);
    provider.doMaintenance();
    assertThat(provider.lastSnapshotReported()).isEqualTo(1);
    // Another executor that restores that snapshot has uploaded nothing: it reports nothing.
    StreamStateProvider other = open("b");
    other.getStore(1, Option.empty(), false, false).abort();
    assertThat(other.lastSnapshotVersion()).isEqualTo(1);
    other.doMaintenance();
    assertThat(other.lastSnapshotReported()).isEqualTo(-1);

    StateStore next = provider.getStore(1, Option.empty(), false, false);
    next.put(row(KEY, "k0"), row(VALUE, -1), StateStore.DEFAULT_COL_FAMILY_NAME());
    assertThat(next.commit()).isEqualTo(2);
    assertThat(next.metrics().customMetrics().get(StreamStateMetrics.REPLAY_DEBT_SNAPSHOTS))
        .isEqualTo(Option.apply(0L));
  }

  /** One batch: loads {@code version}, writes keys, commits; returns the committed version. */
  private long commitBatch(
      StreamStateProvider provider, long version, boolean force, Map<String, Integer> model) {
    StateStore store = provider.getStore(version, Option.empty(), force, false);
    for (int i = 0; i < 20; i++) {
      String key = "k" + ((version * 7 + i) % 30);
      int value = (int) (version * 100 + i);
      store.put(row(KEY, key), row(VALUE, value), StateStore.DEFAULT_COL_FAMILY_NAME());
      model.put(key, value);
    }
    long committed = store.commit();
    // SPARK-54063: the commit reports whether Spark forced a snapshot on it, as Spark's providers.
    assertThat(store.metrics().customMetrics().get(StreamStateMetrics.FORCE_SNAPSHOT))
        .as("forceSnapshotCount of the commit of version %d", committed)
        .isEqualTo(Option.apply(force ? 1L : 0L));
    return committed;
  }

  private static Map<String, Integer> contents(StateStore store) {
    Map<String, Integer> got = new TreeMap<>();
    StateStoreIterator<UnsafeRowPair> it = store.iterator(StateStore.DEFAULT_COL_FAMILY_NAME());
    try {
      while (it.hasNext()) {
        UnsafeRowPair pair = it.next();
        got.put(pair.key().getUTF8String(0).toString(), pair.value().getInt(0));
      }
    } finally {
      it.close();
    }
    return got;
  }

  private List<Long> snapshotVersions() throws IOException {
    Path dir = work.resolve("state/0/0/snapshot");
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .map(p -> StoreLayout.parseSnapshot(p.getFileName().toString()))
          .filter(n -> n != null)
          .map(StoreLayout.SnapshotName::version)
          .sorted()
          .toList();
    }
  }

  private static UnsafeRow row(StructType schema, Object value) {
    Object v = value instanceof String s ? UTF8String.fromString(s) : value;
    return UnsafeProjection.create(schema).apply(new GenericInternalRow(new Object[] {v})).copy();
  }

  /** Runs {@code call} in another thread; fails instead of hanging if it does not return. */
  private static <T> T returnsInTime(Callable<T> call) throws Exception {
    FutureTask<T> task = new FutureTask<>(call);
    Thread thread = new Thread(task, "task");
    thread.setDaemon(true);
    thread.start();
    return task.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  /**
   * {@code snapstallfs:}: the local disk with create-if-absent, whose creates of files in a {@code
   * snapshot/} directory block, while stalled, until released (a DataNode stalling a snapshot
   * file's block).
   */
  public static class SnapshotStallingFileSystem extends ExclusiveCreateLocalFileSystem {
    static final String SCHEME = "snapstallfs";

    private static volatile CountDownLatch gate = new CountDownLatch(0);
    private static final AtomicInteger BLOCKED = new AtomicInteger();

    static void stall() {
      BLOCKED.set(0);
      gate = new CountDownLatch(1);
    }

    static void release() {
      gate.countDown();
    }

    static int blockedCalls() {
      return BLOCKED.get();
    }

    @Override
    public FSDataOutputStream create(
        org.apache.hadoop.fs.Path f,
        FsPermission permission,
        boolean overwrite,
        int bufferSize,
        short replication,
        long blockSize,
        Progressable progress)
        throws IOException {
      CountDownLatch held = gate;
      if (f.getParent() != null
          && f.getParent().getName().equals("snapshot")
          && held.getCount() > 0) {
        BLOCKED.incrementAndGet();
        try {
          held.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("interrupted in a stalled create");
        }
      }
      return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }
  }
}
