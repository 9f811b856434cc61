package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.NextIterator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;

/**
 * {@code SupportsFineGrainedReplay} as Spark's state data source calls it, on a provider driven
 * directly: the error classes Spark's RocksDB provider raises ({@code StateDataSourceReadSuite}'s
 * "snapshot of version not found" expects {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED}), the state
 * replayed from a snapshot, and the change records (delete: value null; batch id = version - 1).
 */
class FineGrainedReplayTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(FineGrainedReplayTest.class);

  private final List<StreamStateProvider> providers = new ArrayList<>();

  @AfterEach
  void tearDown() {
    providers.forEach(StreamStateProvider::close);
  }

  private StreamStateProvider open(String local) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve(local).toString());
    sqlConf.setConfString("spark.sql.streaming.stateStore.minDeltasForSnapshot", "1");
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    Configuration hadoopConf = new Configuration();
    hadoopConf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    StreamStateProvider provider = new StreamStateProvider();
    provider.init(
        new StateStoreId(
            work.resolve("state").toUri().toString(), 0, 0, StateStoreId.DEFAULT_STORE_NAME()),
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

  private static UnsafeRow row(StructType schema, Object value) {
    return UnsafeProjection.create(schema)
        .apply(new GenericInternalRow(new Object[] {value}))
        .copy();
  }

  private static UnsafeRow key(String k) {
    return row(KEY, UTF8String.fromString(k));
  }

  /** Versions 1..4: "a" = version; version 2 also puts "b", version 3 removes it; snapshot 2. */
  private StreamStateProvider history() {
    StreamStateProvider writer = open("writer");
    for (int v = 1; v <= 4; v++) {
      StateStore store = writer.getStore(v - 1, Option.empty(), false, false);
      store.put(key("a"), row(VALUE, v), StateStore.DEFAULT_COL_FAMILY_NAME());
      if (v == 2) {
        store.put(key("b"), row(VALUE, 20), StateStore.DEFAULT_COL_FAMILY_NAME());
      }
      if (v == 3) {
        store.remove(key("b"), StateStore.DEFAULT_COL_FAMILY_NAME());
      }
      store.commit();
      if (v == 2) {
        writer.doMaintenance(); // snapshot of version 2
      }
    }
    return writer;
  }

  private static Integer value(ReadStateStore store, String k) {
    UnsafeRow v = store.get(key(k), StateStore.DEFAULT_COL_FAMILY_NAME());
    return v == null ? null : v.getInt(0);
  }

  @Test
  void replaysFromTheSnapshotAskedFor() {
    history();
    StreamStateProvider reader = open("reader");

    ReadStateStore store = reader.replayReadStateFromSnapshot(2, 3, Option.empty(), Option.empty());

    assertThat(value(store, "a")).isEqualTo(3);
    assertThat(value(store, "b")).isNull();
    store.release();
  }

  @Test
  void failsAsSparksRocksDbProviderDoesWithoutThatSnapshotOrForABadVersion() {
    history();
    StreamStateProvider reader = open("reader");

    Throwable noSnapshot =
        catchThrowable(
            () -> reader.replayReadStateFromSnapshot(1, 2, Option.empty(), Option.empty()));
    assertThat(noSnapshot).isInstanceOf(SparkThrowable.class);
    assertThat(((SparkThrowable) noSnapshot).getCondition())
        .isEqualTo("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED");
    assertThat(noSnapshot.getCause()).hasMessageContaining("there is no snapshot of version 1");

    Throwable zero =
        catchThrowable(
            () -> reader.replayStateFromSnapshot(0, 2, true, Option.empty(), Option.empty()));
    assertThat(((SparkThrowable) zero).getCondition())
        .isEqualTo("CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION");
    // A failed replay releases the provider: a read of the latest version still works.
    assertThat(value(reader.getReadStore(4, Option.empty()), "a")).isEqualTo(4);
  }

  @Test
  void changeRecordsArePutsAndDeletesWithTheBatchIdOfTheirVersion() {
    history();
    StreamStateProvider reader = open("reader");

    List<String> records = new ArrayList<>();
    NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> changes =
        reader.getStateStoreChangeDataReader(2, 4, Option.empty(), Option.empty());
    while (changes.hasNext()) {
      Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> c = changes.next();
      records.add(
          c._4()
              + " "
              + c._1()
              + " "
              + c._2().getUTF8String(0)
              + " "
              + (c._3() == null ? "null" : String.valueOf(c._3().getInt(0))));
    }
    changes.closeIfNeeded();

    assertThat(records)
        .containsExactly(
            "1 put_record a 2",
            "1 put_record b 20",
            "2 put_record a 3",
            "2 delete_record b null",
            "3 put_record a 4");
  }
}
