package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StatePartitionAllColumnFamiliesWriter;
import org.apache.spark.sql.execution.streaming.state.StatePartitionWriterColumnFamilyInfo;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
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
 * {@code getStore(version, None, loadEmpty = true)} as Spark 4.2's offline repartitioning drives
 * it: through Spark's own writer ({@code StatePartitionAllColumnFamiliesWriter}, which creates our
 * provider from the store conf, opens the empty store, writes every row and commits). The new
 * version holds exactly the rows written, nothing of the store's earlier versions, loads on another
 * provider, and the next batch builds on it; under checkpoint format v2 the writer gets a commit id
 * and no base id, as Spark's rewriter requires, and the version loads by that id.
 */
class LoadEmptyTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);
  private static final String DEFAULT = StateStore.DEFAULT_COL_FAMILY_NAME();

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(LoadEmptyTest.class);

  private final List<StreamStateProvider> providers = new ArrayList<>();
  private int locals;

  @AfterEach
  void tearDown() {
    providers.forEach(StreamStateProvider::close);
  }

  private SQLConf sqlConf(boolean v2) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(TestSessions.PROVIDER_CLASS, TestSessions.OURS);
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve("local" + (++locals)).toString());
    if (v2) {
      sqlConf.setConfString(StreamStateConf.SPARK_CHECKPOINT_FORMAT_VERSION, "2");
    }
    return sqlConf;
  }

  private StateStoreConf storeConf(boolean v2) {
    return new StateStoreConf(sqlConf(v2), scala.collection.immutable.Map$.MODULE$.empty());
  }

  private Configuration hadoopConf() {
    Configuration conf = new Configuration();
    conf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    return conf;
  }

  private String root() {
    return work.resolve("checkpoint").resolve("state").toUri().toString();
  }

  private StreamStateProvider open(boolean v2) {
    StreamStateProvider provider = new StreamStateProvider();
    provider.init(
        new StateStoreId(root(), 0, 0, StateStoreId.DEFAULT_STORE_NAME()),
        KEY,
        VALUE,
        new NoPrefixKeyStateEncoderSpec(KEY),
        false,
        storeConf(v2),
        hadoopConf(),
        false,
        Option.empty());
    providers.add(provider);
    return provider;
  }

  /** Versions 1 to 3 of an earlier run: keys old0 to old5. */
  private void earlierRun(StreamStateProvider provider) {
    for (long v = 0; v < 3; v++) {
      StateStore store = provider.getStore(v, Option.empty(), false, false);
      store.put(row(KEY, "old" + (2 * v)), row(VALUE, (int) v), DEFAULT);
      store.put(row(KEY, "old" + (2 * v + 1)), row(VALUE, (int) v), DEFAULT);
      store.commit();
    }
  }

  /** Spark's writer, rewriting partition 0 of operator 0 at {@code batchId} with {@code rows}. */
  private StateStoreCheckpointInfo rewrite(long batchId, Map<String, Integer> rows, boolean v2) {
    StateStoreColFamilySchema schema =
        new StateStoreColFamilySchema(
            DEFAULT,
            (short) 0,
            KEY,
            (short) 0,
            VALUE,
            Option.apply(new NoPrefixKeyStateEncoderSpec(KEY)),
            Option.empty());
    scala.collection.immutable.Map<String, StatePartitionWriterColumnFamilyInfo> families =
        new scala.collection.immutable.Map.Map1<>(
            DEFAULT, new StatePartitionWriterColumnFamilyInfo(schema, false));
    StatePartitionAllColumnFamiliesWriter writer =
        new StatePartitionAllColumnFamiliesWriter(
            storeConf(v2),
            hadoopConf(),
            0,
            work.resolve("checkpoint").toUri().toString(),
            0L,
            StateStoreId.DEFAULT_STORE_NAME(),
            batchId,
            families,
            Option.empty());
    List<InternalRow> records = new ArrayList<>();
    rows.forEach(
        (k, v) -> {
          UnsafeRow key = row(KEY, k);
          records.add(
              new GenericInternalRow(
                  new Object[] {
                    key, key.getBytes(), row(VALUE, v).getBytes(), UTF8String.fromString(DEFAULT)
                  }));
        });
    return writer.write(ScalaInterop.iterator(records.iterator()));
  }

  @Test
  void sparksWriterReplacesTheStateAndTheNextBatchBuildsOnIt() {
    earlierRun(open(false));
    Map<String, Integer> rewritten = new TreeMap<>(Map.of("new1", 1, "new2", 2, "old0", 7));

    StateStoreCheckpointInfo info = rewrite(4, rewritten, false);

    assertThat(info.batchVersion()).isEqualTo(5);
    StreamStateProvider reader = open(false);
    StateStore store = reader.getStore(5, Option.empty(), false, false);
    assertThat(contents(store)).isEqualTo(rewritten);
    store.put(row(KEY, "new3"), row(VALUE, 3), DEFAULT);
    store.remove(row(KEY, "new1"), DEFAULT);
    assertThat(store.commit()).isEqualTo(6);
    Map<String, Integer> expected = new TreeMap<>(rewritten);
    expected.put("new3", 3);
    expected.remove("new1");
    StateStore next = open(false).getStore(6, Option.empty(), false, false);
    try {
      assertThat(contents(next)).isEqualTo(expected);
    } finally {
      next.abort();
    }
  }

  @Test
  void underCheckpointFormatV2TheWriterGetsACommitIdAndNoBaseId() {
    earlierRun(open(true));
    Map<String, Integer> rewritten = new TreeMap<>(Map.of("a", 1, "b", 2));

    StateStoreCheckpointInfo info = rewrite(4, rewritten, true);

    assertThat(info.baseStateStoreCkptId().isEmpty()).isTrue();
    assertThat(info.stateStoreCkptId().get()).matches("[0-9a-f]{16}");
    StateStore store = open(true).getStore(5, info.stateStoreCkptId(), false, false);
    try {
      assertThat(contents(store)).isEqualTo(rewritten);
    } finally {
      store.abort();
    }
  }

  @Test
  void anAbortedEmptyStoreLeavesTheVersionItStoodForIntact() {
    StreamStateProvider provider = open(false);
    earlierRun(provider);
    StateStore empty = provider.getStore(3, Option.empty(), false, true);
    assertThat(contents(empty)).isEmpty();
    empty.put(row(KEY, "x"), row(VALUE, 9), DEFAULT);
    empty.abort();
    StateStore store = provider.getStore(3, Option.empty(), false, false);
    try {
      assertThat(contents(store)).hasSize(6).containsKey("old5").doesNotContainKey("x");
    } finally {
      store.abort();
    }
    assertThatThrownBy(() -> provider.getStore(3, Option.apply("0123456789abcdef"), false, true))
        .hasMessageContaining("loadEmpty takes no checkpoint id");
  }

  private static Map<String, Integer> contents(StateStore store) {
    Map<String, Integer> got = new TreeMap<>();
    StateStoreIterator<UnsafeRowPair> it = store.iterator(DEFAULT);
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

  private static UnsafeRow row(StructType schema, Object value) {
    Object v = value instanceof String s ? UTF8String.fromString(s) : value;
    return UnsafeProjection.create(schema).apply(new GenericInternalRow(new Object[] {v})).copy();
  }
}
