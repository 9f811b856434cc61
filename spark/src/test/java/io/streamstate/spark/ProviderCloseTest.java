package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
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
 * {@code StateStoreProvider.close()} with a store still open (issue 24): Spark closes providers
 * from its maintenance thread, at executor shutdown and in tests after a failed task, and must not
 * wait the lock timeout (120 s by default, kept here) for a store nobody will end. Closed from the
 * thread that holds the store, the store is ended at once; from another thread, the store fails at
 * its next operation and the engine closes when its owner ends it. Either way the durable state is
 * that of the last commit. "Returns" is checked against a bound far below the lock timeout, so the
 * old close (which waited for it) fails, and nothing asserts on speed.
 */
class ProviderCloseTest {
  /** Far below the 120 s lock timeout that the old close waited; a hang, not a speed, check. */
  private static final Duration BOUND = Duration.ofSeconds(20);

  private static final StructType KEY = new StructType().add("k", DataTypes.StringType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(ProviderCloseTest.class);

  private final List<StreamStateProvider> providers = new ArrayList<>();

  @AfterEach
  void tearDown() {
    providers.forEach(StreamStateProvider::close);
  }

  private StreamStateProvider open(String local) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve(local).toString());
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    Configuration hadoopConf = new Configuration();
    hadoopConf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    StreamStateProvider provider = new StreamStateProvider();
    provider.init(
        new StateStoreId(
            "file://" + work.resolve("state").toAbsolutePath(),
            0,
            0,
            StateStoreId.DEFAULT_STORE_NAME()),
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

  /** Commits version 1 with three keys; returns them. */
  private Map<String, Integer> commitFirstVersion(StreamStateProvider provider) {
    Map<String, Integer> model = new TreeMap<>();
    StateStore store = provider.getStore(0, Option.empty(), false, false);
    for (int i = 0; i < 3; i++) {
      store.put(row(KEY, "k" + i), row(VALUE, i), StateStore.DEFAULT_COL_FAMILY_NAME());
      model.put("k" + i, i);
    }
    assertThat(store.commit()).isEqualTo(1);
    return model;
  }

  private static void putUncommitted(StateStore store) {
    store.put(row(KEY, "k0"), row(VALUE, 100), StateStore.DEFAULT_COL_FAMILY_NAME());
    store.put(row(KEY, "uncommitted"), row(VALUE, 7), StateStore.DEFAULT_COL_FAMILY_NAME());
  }

  @Test
  void closedByTheThreadThatHoldsAWriteStoreItAbortsItAndReturns() throws Exception {
    StreamStateProvider provider = open("a");
    Map<String, Integer> committed = commitFirstVersion(provider);

    StateStore store =
        returnsInTime(
            () -> {
              StateStore s = provider.getStore(1, Option.empty(), false, false);
              putUncommitted(s);
              provider.close(); // the task's own thread, as Spark's tests do after a failure
              return s;
            });

    assertThat(store.hasCommitted()).isFalse();
    assertThatThrownBy(() -> store.get(row(KEY, "k1"), StateStore.DEFAULT_COL_FAMILY_NAME()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("aborted");
    assertThatThrownBy(() -> provider.getStore(1, Option.empty(), false, false))
        .hasMessageContaining("is closed");
    assertThat(stateAt(open("b"), 1)).isEqualTo(committed);
  }

  @Test
  void closedByTheThreadThatHoldsAReadStoreItReleasesItAndReturns() throws Exception {
    StreamStateProvider provider = open("a");
    Map<String, Integer> committed = commitFirstVersion(provider);

    ReadStateStore store =
        returnsInTime(
            () -> {
              ReadStateStore s = provider.getReadStore(1, Option.empty());
              s.get(row(KEY, "k0"), StateStore.DEFAULT_COL_FAMILY_NAME());
              provider.close();
              return s;
            });

    assertThatThrownBy(() -> store.get(row(KEY, "k0"), StateStore.DEFAULT_COL_FAMILY_NAME()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("released");
    assertThat(stateAt(open("b"), 1)).isEqualTo(committed);
  }

  @Test
  void closedFromAnotherThreadTheOpenStoreFailsAtItsNextOperationAndWaitingLoadsFailAtOnce()
      throws Exception {
    StreamStateProvider provider = open("a");
    Map<String, Integer> committed = commitFirstVersion(provider);

    // The task: loads version 1, writes, then waits (still holding the store) until told to go on.
    CountDownLatch loaded = new CountDownLatch(1);
    CountDownLatch goOn = new CountDownLatch(1);
    CompletableFuture<String> task =
        CompletableFuture.supplyAsync(
            () -> {
              StateStore s = provider.getStore(1, Option.empty(), false, false);
              putUncommitted(s);
              loaded.countDown();
              await(goOn);
              try {
                s.put(row(KEY, "late"), row(VALUE, 1), StateStore.DEFAULT_COL_FAMILY_NAME());
                return "put succeeded";
              } catch (IllegalStateException e) {
                return e.getMessage();
              } finally {
                s.abort(); // as the task's completion listener would
              }
            });
    await(loaded);
    // Another task waits for the store's permit (the lock timeout is 120 s).
    CompletableFuture<Object> waiting =
        CompletableFuture.supplyAsync(() -> provider.getStore(1, Option.empty(), false, false));

    returnsInTime(
        () -> {
          provider.close(); // from the maintenance thread, say
          return null;
        });

    assertThatThrownBy(() -> waiting.get(BOUND.toSeconds(), TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasMessageContaining("is closed");
    goOn.countDown();
    assertThat(task.get(BOUND.toSeconds(), TimeUnit.SECONDS)).contains("its provider was closed");
    assertThat(stateAt(open("b"), 1)).isEqualTo(committed);
  }

  @Test
  void closingWithNoStoreOpenAndClosingTwiceAreQuiet() throws Exception {
    StreamStateProvider provider = open("a");
    Map<String, Integer> committed = commitFirstVersion(provider);
    returnsInTime(
        () -> {
          provider.close();
          provider.close();
          return null;
        });
    provider.doMaintenance(); // a closed provider's maintenance does nothing
    assertThat(stateAt(open("b"), 1)).isEqualTo(committed);
  }

  // ---------------------------------------------------------------------------------------------

  private static Map<String, Integer> stateAt(StreamStateProvider provider, long version) {
    StateStore store = provider.getStore(version, Option.empty(), false, false);
    try {
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
    } finally {
      store.abort();
    }
  }

  private static UnsafeRow row(StructType schema, Object value) {
    Object v = value instanceof String s ? UTF8String.fromString(s) : value;
    return UnsafeProjection.create(schema).apply(new GenericInternalRow(new Object[] {v})).copy();
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(BOUND.toSeconds(), TimeUnit.SECONDS)) {
        throw new AssertionError("timed out waiting for the other thread");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** Runs {@code call} in a new thread; fails instead of hanging if it does not return in time. */
  private static <T> T returnsInTime(Callable<T> call) throws Exception {
    FutureTask<T> task = new FutureTask<>(call);
    Thread thread = new Thread(task, "closer");
    thread.setDaemon(true);
    thread.start();
    return task.get(BOUND.toSeconds(), TimeUnit.SECONDS);
  }
}
