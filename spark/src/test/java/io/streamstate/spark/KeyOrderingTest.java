package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.TimestampAsPostfixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.TimestampAsPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * Our provider iterates, prefix-scans and range-scans in exactly the order of Spark's own {@code
 * RocksDBStateStoreProvider} (operators such as transformWithState timers and join state format 4
 * stop at the first key past a bound, so order is part of the contract). Both providers are driven
 * directly, without a query, with the same randomised keys (fixed seed), and after a reload.
 */
class KeyOrderingTest {
  private static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";

  @TempDir Path work;
  private final List<StateStoreProvider> providers = new ArrayList<>();

  @AfterEach
  void closeProviders() {
    providers.forEach(StateStoreProvider::close);
  }

  private static final StructType RANGE_KEY =
      new StructType()
          .add("ts", DataTypes.LongType, true)
          .add("score", DataTypes.DoubleType, true)
          .add("name", DataTypes.StringType, true);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);

  private StateStoreProvider open(
      String className, String dir, KeyStateEncoderSpec spec, boolean columnFamilies) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve("local").toString());
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    Configuration hadoopConf = new Configuration();
    hadoopConf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    StateStoreProvider p = StateStoreProvider.create(className);
    StateStoreId id =
        new StateStoreId(
            work.resolve(dir).toUri().toString(), 0, 0, StateStoreId.DEFAULT_STORE_NAME());
    p.init(
        id,
        spec.keySchema(),
        VALUE,
        spec,
        columnFamilies,
        storeConf,
        hadoopConf,
        false,
        Option.empty());
    providers.add(p);
    return p;
  }

  private static scala.collection.immutable.Seq<Object> ints(List<Integer> values) {
    return ScalaInterop.seq(new ArrayList<Object>(values));
  }

  private static UnsafeRow row(StructType schema, Object... values) {
    Object[] converted = new Object[values.length];
    for (int i = 0; i < values.length; i++) {
      converted[i] = values[i] instanceof String s ? UTF8String.fromString(s) : values[i];
    }
    return UnsafeProjection.create(schema).apply(new GenericInternalRow(converted)).copy();
  }

  /** Range keys with negatives, zeros (both signs), extremes and nulls in ordering columns. */
  private static List<UnsafeRow> rangeKeys() {
    long[] timestamps = {Long.MIN_VALUE, -1000, -1, 0, 1, 7, 1000, 1L << 40, Long.MAX_VALUE};
    Double[] scores = {null, Double.NEGATIVE_INFINITY, -2.5, -0.0, 0.0, 0.5, 3.0, 1e300};
    List<UnsafeRow> keys = new ArrayList<>();
    for (long ts : timestamps) {
      for (Double score : scores) {
        keys.add(row(RANGE_KEY, ts, score, "k" + (ts % 3)));
      }
    }
    keys.add(row(RANGE_KEY, null, 1.0, "nullts"));
    keys.add(row(RANGE_KEY, null, null, "allnull"));
    Collections.shuffle(keys, new Random(42));
    return keys;
  }

  private static List<String> drain(StateStoreIterator<UnsafeRowPair> it, StructType keySchema) {
    List<String> out = new ArrayList<>();
    try {
      while (it.hasNext()) {
        UnsafeRowPair pair = it.next();
        out.add(render(pair.key(), keySchema) + "=" + pair.value().getInt(0));
      }
    } finally {
      it.close();
    }
    return out;
  }

  private static String render(UnsafeRow key, StructType schema) {
    StringBuilder sb = new StringBuilder("(");
    for (int i = 0; i < schema.length(); i++) {
      sb.append(i == 0 ? "" : ",")
          .append(key.isNullAt(i) ? "null" : key.get(i, schema.fields()[i].dataType()));
    }
    return sb.append(")").toString();
  }

  /** Writes the keys as version 1, reloads, and returns what {@code scan} sees. */
  private List<String> writeAndScan(
      StateStoreProvider provider,
      List<UnsafeRow> keys,
      Function<StateStore, StateStoreIterator<UnsafeRowPair>> scan,
      StructType keySchema) {
    StateStore store = provider.getStore(0, Option.empty(), false, false);
    int i = 0;
    for (UnsafeRow key : keys) {
      store.put(key, row(VALUE, i++), StateStore.DEFAULT_COL_FAMILY_NAME());
    }
    List<String> beforeCommit = drain(scan.apply(store), keySchema);
    assertThat(store.commit()).isEqualTo(1);
    assertThat(store.metrics().numKeys()).as("numKeys of %s", provider).isEqualTo(keys.size());
    StateStore reloaded = provider.getStore(1, Option.empty(), false, false);
    try {
      List<String> afterReload = drain(scan.apply(reloaded), keySchema);
      assertThat(afterReload).isEqualTo(beforeCommit);
      return afterReload;
    } finally {
      reloaded.abort();
    }
  }

  @Test
  void rangeScanEncoderIteratesInRocksDbOrder() {
    for (List<Integer> ordinals : List.of(List.of(0), List.of(0, 1), List.of(1, 0))) {
      KeyStateEncoderSpec spec = new RangeKeyScanStateEncoderSpec(RANGE_KEY, ints(ordinals));
      String name = "range" + ordinals.toString().replaceAll("\\D", "");
      List<UnsafeRow> keys = rangeKeys();
      List<String> rocks =
          writeAndScan(
              open(ROCKSDB, name + "-rocks", spec, false),
              keys,
              s -> s.iterator(StateStore.DEFAULT_COL_FAMILY_NAME()),
              RANGE_KEY);
      List<String> ours =
          writeAndScan(
              open(TestSessions.OURS, name + "-ours", spec, false),
              keys,
              s -> s.iterator(StateStore.DEFAULT_COL_FAMILY_NAME()),
              RANGE_KEY);
      assertThat(ours).hasSize(keys.size()).containsExactlyElementsOf(rocks);
    }
  }

  @Test
  void rangeScanBoundsMatchRocksDb() {
    KeyStateEncoderSpec spec = new RangeKeyScanStateEncoderSpec(RANGE_KEY, ints(List.of(0, 1)));
    List<UnsafeRow> keys = rangeKeys();
    Function<StateStore, StateStoreIterator<UnsafeRowPair>> scan =
        s ->
            s.rangeScan(
                Option.apply(row(RANGE_KEY, -1L, -0.0, "")),
                Option.apply(row(RANGE_KEY, 1000L, 0.5, "")),
                StateStore.DEFAULT_COL_FAMILY_NAME());
    List<String> rocks =
        writeAndScan(open(ROCKSDB, "bounds-rocks", spec, false), keys, scan, RANGE_KEY);
    List<String> ours =
        writeAndScan(open(TestSessions.OURS, "bounds-ours", spec, false), keys, scan, RANGE_KEY);
    assertThat(ours).isNotEmpty().containsExactlyElementsOf(rocks);
  }

  @Test
  void prefixScanMatchesRocksDb() {
    StructType key =
        new StructType()
            .add("group", DataTypes.StringType, false)
            .add("n", DataTypes.IntegerType, false);
    KeyStateEncoderSpec spec = new PrefixKeyScanStateEncoderSpec(key, 1);
    List<UnsafeRow> keys = new ArrayList<>();
    for (String g : List.of("a", "ab", "b", "", "a\u0000", "zz")) {
      for (int n : new int[] {-5, 0, 3, 300, Integer.MIN_VALUE}) {
        keys.add(row(key, g, n));
      }
    }
    Collections.shuffle(keys, new Random(7));
    StructType prefix = new StructType().add("group", DataTypes.StringType, false);
    for (String g : List.of("a", "ab", "", "zz", "missing")) {
      Function<StateStore, StateStoreIterator<UnsafeRowPair>> scan =
          s -> s.prefixScan(row(prefix, g), StateStore.DEFAULT_COL_FAMILY_NAME());
      List<String> rocks =
          writeAndScan(
              open(ROCKSDB, "prefix-rocks-" + g.length() + g, spec, false), keys, scan, key);
      List<String> ours =
          writeAndScan(
              open(TestSessions.OURS, "prefix-ours-" + g.length() + g, spec, false),
              keys,
              scan,
              key);
      assertThat(ours).containsExactlyElementsOf(rocks);
      if (!g.equals("missing")) {
        assertThat(ours).hasSize(5);
      }
    }
  }

  @Test
  void noPrefixIteratesInRocksDbOrder() {
    StructType key =
        new StructType()
            .add("s", DataTypes.StringType, false)
            .add("i", DataTypes.IntegerType, false);
    List<UnsafeRow> keys = new ArrayList<>();
    Random random = new Random(3);
    for (int i = 0; i < 200; i++) {
      keys.add(row(key, "k" + random.nextInt(50), random.nextInt()));
    }
    keys = new ArrayList<>(new java.util.LinkedHashSet<>(keys));
    KeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(key);
    Function<StateStore, StateStoreIterator<UnsafeRowPair>> scan =
        s -> s.iterator(StateStore.DEFAULT_COL_FAMILY_NAME());
    List<String> rocks = writeAndScan(open(ROCKSDB, "plain-rocks", spec, false), keys, scan, key);
    List<String> ours =
        writeAndScan(open(TestSessions.OURS, "plain-ours", spec, false), keys, scan, key);
    assertThat(ours).hasSize(keys.size()).containsExactlyElementsOf(rocks);
  }

  @Test
  void timestampEncodersWithMultipleValuesMatchRocksDb() {
    StructType key =
        new StructType()
            .add("k", DataTypes.StringType, false)
            .add("__event_time", DataTypes.LongType, false);
    for (KeyStateEncoderSpec spec :
        List.<KeyStateEncoderSpec>of(
            new TimestampAsPrefixKeyStateEncoderSpec(key),
            new TimestampAsPostfixKeyStateEncoderSpec(key))) {
      String cf = "events";
      List<List<String>> results = new ArrayList<>();
      for (String className : List.of(ROCKSDB, TestSessions.OURS)) {
        StateStoreProvider p =
            open(
                className,
                spec.getClass().getSimpleName() + "-" + className.hashCode(),
                new NoPrefixKeyStateEncoderSpec(new StructType().add("x", DataTypes.IntegerType)),
                true);
        StateStore store = p.getStore(0, Option.empty(), false, false);
        store.createColFamilyIfAbsent(cf, key, VALUE, spec, true, false);
        int v = 0;
        for (long ts : new long[] {5, -3, 0, 1L << 33, 5, -3, Long.MIN_VALUE + 1}) {
          for (String k : List.of("b", "a", "aa")) {
            store.merge(row(key, k, ts), row(VALUE, v++), cf);
          }
        }
        store.putList(row(key, "c", 9L), new UnsafeRow[] {row(VALUE, 100), row(VALUE, 101)}, cf);
        store.commit();
        StateStore reloaded = p.getStore(1, Option.empty(), false, false);
        reloaded.createColFamilyIfAbsent(cf, key, VALUE, spec, true, false);
        List<String> seen = new ArrayList<>(drain(reloaded.iteratorWithMultiValues(cf), key));
        seen.add("--range");
        seen.addAll(
            drain(
                reloaded.rangeScanWithMultiValues(
                    Option.apply(row(key, "a", -3L)), Option.apply(row(key, "b", 5L)), cf),
                key));
        if (spec instanceof TimestampAsPostfixKeyStateEncoderSpec) {
          seen.add("--prefix");
          seen.addAll(
              drain(
                  reloaded.prefixScanWithMultiValues(
                      row(new StructType().add("k", DataTypes.StringType, false), "a"), cf),
                  key));
        }
        List<String> values = new ArrayList<>();
        ScalaInterop.javaIterator(reloaded.valuesIterator(row(key, "b", 5L), cf))
            .forEachRemaining(r -> values.add(String.valueOf(r.getInt(0))));
        seen.add("--values " + values);
        reloaded.abort();
        results.add(seen);
      }
      assertThat(results.get(1)).containsExactlyElementsOf(results.get(0));
      assertThat(results.get(1)).contains("--values [0, 12]");
    }
  }
}
