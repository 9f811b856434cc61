package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * Column families Spark declares internal ({@code createColFamilyIfAbsent(..., isInternal = true)},
 * as a join with state format 3 or 4 does for its indexes) are counted apart, as Spark's RocksDB
 * provider counts them: {@code numKeys} ({@code numRowsTotal}) holds the keys of the other families
 * only, and the custom metrics report the internal keys and the number of families of each kind.
 * The internal flag is part of the committed state: a version loaded by another provider (a
 * restart) counts the same without the family being declared again.
 */
class InternalColumnFamilyCountsTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType, false);
  private static final String DEFAULT = StateStore.DEFAULT_COL_FAMILY_NAME();

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(InternalColumnFamilyCountsTest.class);

  private final List<StreamStateProvider> providers = new ArrayList<>();

  @AfterEach
  void tearDown() {
    providers.forEach(StreamStateProvider::close);
  }

  private StreamStateProvider open(String local, boolean useColumnFamilies) {
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
        useColumnFamilies,
        storeConf,
        hadoopConf,
        false,
        Option.empty());
    providers.add(provider);
    return provider;
  }

  @Test
  void internalFamiliesAreCountedApartAndTheFlagSurvivesALoadElsewhere() {
    StreamStateProvider provider = open("a", true);
    StateStore v1 = provider.getStore(0, Option.empty(), false, false);
    declare(v1, "index", true);
    declare(v1, "rows", false);
    put(v1, "rows", "a", "b", "c");
    put(v1, "index", "a", "b");
    put(v1, DEFAULT, "x");
    v1.commit();
    // keys: rows 3 + default 1; internal: index 2; families: default and rows, and index.
    assertCounts(v1.metrics(), 4, 2, 2, 1);

    // The next version does not declare the families again: the committed flag holds.
    StateStore v2 = provider.getStore(1, Option.empty(), false, false);
    v2.remove(row(KEY, "a"), "index");
    put(v2, "rows", "d");
    assertThat(v2.metrics().numKeys()).isEqualTo(5); // an open store counts its own changes
    v2.commit();
    assertCounts(v2.metrics(), 5, 1, 2, 1);

    // Another provider (a restart, another executor) loads version 2: "index" is still internal
    // though nobody declared it to this provider.
    StreamStateProvider other = open("b", true);
    StateStore v3 = other.getStore(2, Option.empty(), false, false);
    declare(v3, "rows", false);
    put(v3, "rows", "e");
    v3.commit();
    assertCounts(v3.metrics(), 6, 1, 2, 1);

    // A dropped internal family takes its keys and its flag with it; re-created, it is external.
    StateStore v4 = other.getStore(3, Option.empty(), false, false);
    assertThat(v4.removeColFamilyIfExists("index")).isTrue();
    declare(v4, "index", false);
    put(v4, "index", "q");
    v4.commit();
    assertCounts(v4.metrics(), 7, 0, 3, 0);
  }

  @Test
  void aStoreWithoutColumnFamiliesReportsNoFamiliesAsSparksRocksDbProviderDoes() {
    StreamStateProvider provider = open("a", false);
    StateStore store = provider.getStore(0, Option.empty(), false, false);
    put(store, DEFAULT, "a", "b");
    store.commit();
    assertCounts(store.metrics(), 2, 0, 0, 0);
  }

  private static void declare(StateStore store, String family, boolean internal) {
    store.createColFamilyIfAbsent(
        family, KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), false, internal);
  }

  private static void put(StateStore store, String family, String... keys) {
    for (String key : keys) {
      store.put(row(KEY, key), row(VALUE, 1), family);
    }
  }

  private static void assertCounts(
      StateStoreMetrics metrics,
      long keys,
      long internalKeys,
      long externalFamilies,
      long internalFamilies) {
    assertThat(metrics.numKeys()).as("numKeys").isEqualTo(keys);
    assertThat(metrics.customMetrics().get(StreamStateMetrics.INTERNAL_FAMILY_KEYS))
        .as("internal keys")
        .isEqualTo(Option.apply(internalKeys));
    assertThat(metrics.customMetrics().get(StreamStateMetrics.EXTERNAL_FAMILIES))
        .as("external families")
        .isEqualTo(Option.apply(externalFamilies));
    assertThat(metrics.customMetrics().get(StreamStateMetrics.INTERNAL_FAMILIES))
        .as("internal families")
        .isEqualTo(Option.apply(internalFamilies));
  }

  private static UnsafeRow row(StructType schema, Object value) {
    Object v = value instanceof String s ? UTF8String.fromString(s) : value;
    return UnsafeProjection.create(schema).apply(new GenericInternalRow(new Object[] {v})).copy();
  }
}
