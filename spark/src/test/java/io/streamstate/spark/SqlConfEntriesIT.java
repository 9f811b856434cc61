package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.spark.shared.ConfigKey;
import io.streamstate.spark.shared.StreamStateKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Our SQL keys are registered with Spark once our provider is used ({@link SqlConfEntries}): {@code
 * SET -v} lists each with its meaning and default, and the registration changes nothing about what
 * our code reads.
 */
class SqlConfEntriesIT {
  static final Path work = TestSessions.newWorkDir(SqlConfEntriesIT.class);
  private static SparkSession spark;

  @BeforeAll
  static void startSparkAndRunAQueryOnOurProvider() throws Exception {
    spark =
        TestSessions.start(
            "SqlConfEntriesIT", work, Map.of(TestSessions.PROVIDER_CLASS, TestSessions.OURS));
    Path input = Files.createDirectories(work.resolve("input"));
    Files.writeString(input.resolve("part-0.txt"), "apple\npear\napple\n");
    StreamingQuery query =
        spark
            .readStream()
            .text(input.toString())
            .groupBy("value")
            .count()
            .writeStream()
            .outputMode("complete")
            .format("memory")
            .queryName("counts")
            .option("checkpointLocation", work.resolve("checkpoint").toString())
            .trigger(Trigger.AvailableNow())
            .start();
    query.awaitTermination();
    assertThat(query.lastProgress().stateOperators()[0].customMetrics())
        .as("the query's state was on our provider")
        .containsKey(StreamStateMetrics.COMMIT_LATENCY.name());
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
  }

  @Test
  void setVerboseListsEveryKeyOfOursWithItsMeaningAndDefault() {
    Map<String, Row> listed = new HashMap<>();
    for (Row row : spark.sql("SET -v").collectAsList()) {
      listed.put(row.getString(0), row);
    }
    Map<String, String> set = ScalaInterop.javaMap(spark.sessionState().conf().getAllConfs());
    assertThat(StreamStateKeys.sqlKeys()).hasSizeGreaterThan(10);
    for (ConfigKey key : StreamStateKeys.sqlKeys()) {
      assertThat(listed).as("SET -v lists %s", key.name()).containsKey(key.name());
      Row row = listed.get(key.name());
      assertThat(row.getString(2))
          .as("its meaning")
          .startsWith("streamstate: " + key.doc())
          .contains("Default: " + (key.defaultDoc().isEmpty() ? "none" : key.defaultDoc()));
      if (!set.containsKey(key.name())) {
        assertThat(row.getString(1))
            .as("its value, unset: the default, or none where ours is computed")
            .isEqualTo(key.defaultValue() == null ? "<undefined>" : key.defaultValue());
      }
    }
  }

  @Test
  void registeringAgainChangesNothing() {
    int before = spark.sql("SET -v").collectAsList().size();
    SqlConfEntries.register();
    assertThat(spark.sql("SET -v").collectAsList()).hasSize(before);
  }

  @Test
  void anUnsetKeyStillTakesTheDefaultOurReaderComputes() {
    // Neither the provider's confs nor the checkpoint file manager's Hadoop configuration get a
    // registered entry's default: our reader computes its own (snapshotInterval from Spark's
    // minDeltasForSnapshot, 2 in these sessions; the log journal on).
    StateStoreConf storeConf = storeConf();
    assertThat(ScalaInterop.javaMap(storeConf.sqlConfs()))
        .doesNotContainKeys(StreamStateConf.SNAPSHOT_INTERVAL, StreamStateConf.LOCK_TIMEOUT_MS);
    StreamStateConf conf = StreamStateConf.from(storeConf);
    assertThat(conf.storeOptions().snapshotInterval()).isEqualTo(2);
    assertThat(conf.lockTimeoutMs()).isEqualTo(StreamStateConf.DEFAULT_LOCK_TIMEOUT_MS);
    Configuration hadoopConf = spark.sessionState().newHadoopConf();
    assertThat(hadoopConf.get(StreamStateConf.LOG_JOURNAL)).isNull();
    assertThat(hadoopConf.get(StreamStateConf.LOCK_TIMEOUT_MS)).isNull();
  }

  @Test
  void aSetValueReachesOurReaderAsWrittenAndOnlyOurReaderChecksIt() {
    try {
      spark.conf().set(StreamStateConf.LOCK_TIMEOUT_MS, "3min");
      assertThat(StreamStateConf.from(storeConf()).lockTimeoutMs()).isEqualTo(180_000L);
      assertThat(spark.sessionState().newHadoopConf().get(StreamStateConf.LOCK_TIMEOUT_MS))
          .isEqualTo("3min");

      // Spark takes any value for our keys, as for a key it does not know; our reader refuses it.
      spark.conf().set(StreamStateConf.LOCK_TIMEOUT_MS, "soon");
      assertThatThrownBy(() -> StreamStateConf.from(storeConf()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(StreamStateConf.LOCK_TIMEOUT_MS)
          .hasMessageContaining("soon");
      spark.conf().unset(StreamStateConf.LOCK_TIMEOUT_MS);
      spark.sql("SET " + StreamStateConf.GROUP_COMMIT_ENABLED + "=yes");
      assertThatThrownBy(() -> StreamStateConf.from(storeConf()).groupCommitEnabled())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(StreamStateConf.GROUP_COMMIT_ENABLED)
          .hasMessageContaining("yes");
    } finally {
      spark.conf().unset(StreamStateConf.LOCK_TIMEOUT_MS);
      spark.conf().unset(StreamStateConf.GROUP_COMMIT_ENABLED);
    }
  }

  private static StateStoreConf storeConf() {
    return new StateStoreConf(
        spark.sessionState().conf(), scala.collection.immutable.Map$.MODULE$.empty());
  }
}
