package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.hedge.HedgePolicy;
import java.time.Duration;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/**
 * Our keys parsed from a plain map and Spark's two ints, as every Spark line's adapter calls it.
 */
class StreamStateSettingsTest {
  @Test
  void absentKeysGiveTheDocumentedDefaultsAndSparksInts() {
    StreamStateSettings s = StreamStateSettings.parse(Map.of(), 100, 10);

    StoreOptions options = s.storeOptions();
    assertThat(options.minVersionsToRetain()).isEqualTo(100);
    assertThat(options.snapshotInterval()).isEqualTo(10);
    assertThat(options.tornFileGraceMillis())
        .isEqualTo(StreamStateSettings.DEFAULT_TORN_FILE_GRACE_MS);
    assertThat(options.isAsync()).isFalse();
    assertThat(options.changelogCodec()).isEqualTo(Changelog.Codec.LZ4);
    assertThat(options.replayDebtPercent()).isEqualTo(StoreOptions.DEFAULT_REPLAY_DEBT_PERCENT);
    assertThat(options.replayDebtMinChanges())
        .isEqualTo(StoreOptions.DEFAULT_REPLAY_DEBT_MIN_CHANGES);
    assertThat(s.memoryCapBytes()).isEqualTo(StreamStateSettings.DEFAULT_MEMORY_CAP_BYTES);
    assertThat(s.lockTimeoutMs()).isEqualTo(StreamStateSettings.DEFAULT_LOCK_TIMEOUT_MS);
    assertThat(s.localDir()).isEmpty();
    assertThat(s.groupCommitEnabled()).isTrue();
    assertThat(s.groupCommitMaxWaitMs()).isEqualTo(250);
    assertThat(s.groupCommitWaveMs()).isEqualTo(GroupCommitter.DEFAULT_WAVE);
    assertThat(s.journal()).isNotNull();
    assertThat(s.hedgePolicy().isEnabled()).isTrue();
    assertThat(s.nativeHeapTrimIntervalMs()).isEqualTo(1000);
  }

  @Test
  void keysOverrideTheDefaults() {
    StreamStateSettings s =
        StreamStateSettings.parse(
            Map.of(
                StreamStateSettings.SNAPSHOT_INTERVAL, "5",
                StreamStateSettings.DURABILITY, " ASYNC ",
                StreamStateSettings.ASYNC_MAX_LAG_VERSIONS, "3",
                StreamStateSettings.MEMORY_CAP_BYTES, "1_073_741_824",
                StreamStateSettings.LOCAL_DIR, "/data/ss",
                StreamStateSettings.GROUP_COMMIT_JOURNAL, "false",
                StreamStateSettings.NATIVE_HEAP_TRIM_INTERVAL_MS, "5s",
                StreamStateSettings.SNAPSHOT_REPLAY_DEBT_MIN_CHANGES, "5000",
                StreamStateSettings.HEDGE_ENABLED, "false"),
            7,
            10);

    assertThat(s.storeOptions().snapshotInterval()).isEqualTo(5);
    assertThat(s.storeOptions().minVersionsToRetain()).isEqualTo(7);
    assertThat(s.storeOptions().asyncMaxLagVersions()).isEqualTo(3);
    assertThat(s.storeOptions().replayDebtMinChanges()).isEqualTo(5000);
    assertThat(s.groupCommitEnabled()).as("async commits are never grouped").isFalse();
    assertThat(s.memoryCapBytes()).isEqualTo(1L << 30);
    assertThat(s.localDir()).contains("/data/ss");
    assertThat(s.journal()).isNull();
    assertThat(s.hedgePolicy().isEnabled()).isFalse();
    assertThat(s.nativeHeapTrimIntervalMs()).isEqualTo(5000);
    assertThat(
            StreamStateSettings.parse(
                    Map.of(StreamStateSettings.NATIVE_HEAP_TRIM_INTERVAL_MS, "0"), 1, 1)
                .nativeHeapTrimIntervalMs())
        .isZero();
  }

  @Test
  void anInvalidValueIsRefusedNamingItsKey() {
    assertThatThrownBy(
            () ->
                StreamStateSettings.parse(Map.of(StreamStateSettings.DURABILITY, "eventual"), 1, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(StreamStateSettings.DURABILITY)
        .hasMessageContaining("'eventual'");
    assertThatThrownBy(
            () ->
                StreamStateSettings.parse(
                    Map.of(StreamStateSettings.SNAPSHOT_REPLAY_DEBT_MIN_CHANGES, "-1"), 1, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(StreamStateSettings.SNAPSHOT_REPLAY_DEBT_MIN_CHANGES)
        .hasMessageContaining("-1");
    assertThatThrownBy(
            () ->
                StreamStateSettings.parse(
                    Map.of(StreamStateSettings.LOCK_TIMEOUT_MS, "2 seconds"), 1, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(StreamStateSettings.LOCK_TIMEOUT_MS)
        .hasMessageContaining("expected a duration");
    assertThatThrownBy(
            () ->
                StreamStateSettings.parse(Map.of(StreamStateSettings.HEDGE_PERCENTILE, "2"), 1, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hedge");
  }

  @Test
  void hedgeKeysAndTheLogJournalRollAreReadFromAHadoopConfiguration() {
    Configuration conf = new Configuration(false);
    conf.set(StreamStateSettings.HEDGE_FLOOR_MS, "7");
    conf.set(StreamStateSettings.HEDGE_INITIAL_DEADLINE_MS, "70");
    conf.set("spark.sql.streaming.stateStore.other", "ignored");

    HedgePolicy policy = StreamStateSettings.hedgePolicy(conf);
    assertThat(policy.isEnabled()).isTrue();
    assertThat(policy.toString())
        .contains("floor=" + Duration.ofMillis(7))
        .contains("initialDeadline=" + Duration.ofMillis(70));
    assertThat(StreamStateSettings.logJournalRollRecords(conf))
        .isEqualTo(StreamStateSettings.DEFAULT_LOG_JOURNAL_ROLL_RECORDS);
    conf.setInt(StreamStateSettings.LOG_JOURNAL_ROLL_RECORDS, 0);
    assertThatThrownBy(() -> StreamStateSettings.logJournalRollRecords(conf))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(StreamStateSettings.LOG_JOURNAL_ROLL_RECORDS);
  }

  @Test
  void sizesAndDurationsTakeSparksSuffixesWhileABareNumberKeepsTheKeysUnit() {
    StreamStateSettings suffixed =
        StreamStateSettings.parse(
            Map.of(
                StreamStateSettings.MEMORY_CAP_BYTES, "512m",
                StreamStateSettings.LOCK_TIMEOUT_MS, "2min",
                StreamStateSettings.GROUP_COMMIT_MAX_WAIT_MS, "1s",
                StreamStateSettings.GROUP_COMMIT_JOURNAL_ROLL_BYTES, "64mb",
                StreamStateSettings.HEDGE_FLOOR_MS, "30ms"),
            1,
            1);
    StreamStateSettings bare =
        StreamStateSettings.parse(
            Map.of(
                StreamStateSettings.MEMORY_CAP_BYTES, "536870912",
                StreamStateSettings.LOCK_TIMEOUT_MS, "120000",
                StreamStateSettings.GROUP_COMMIT_MAX_WAIT_MS, "1000",
                StreamStateSettings.GROUP_COMMIT_JOURNAL_ROLL_BYTES, "67108864",
                StreamStateSettings.HEDGE_FLOOR_MS, "30"),
            1,
            1);

    assertThat(suffixed.memoryCapBytes()).isEqualTo(512L << 20).isEqualTo(bare.memoryCapBytes());
    assertThat(suffixed.lockTimeoutMs()).isEqualTo(120_000).isEqualTo(bare.lockTimeoutMs());
    assertThat(suffixed.groupCommitMaxWaitMs()).isEqualTo(1000);
    assertThat(suffixed.journal().rollBytes()).isEqualTo(64L << 20);
    assertThat(suffixed.hedgePolicy().toString())
        .contains("floor=" + Duration.ofMillis(30))
        .isEqualTo(bare.hedgePolicy().toString());
  }

  @Test
  void everyBooleanKeyRefusesAnythingButTrueOrFalse() {
    for (ConfigKey key : StreamStateKeys.sqlKeys()) {
      if (key.type() != ConfigKey.Type.BOOLEAN) {
        continue;
      }
      Configuration conf = new Configuration(false);
      conf.set(key.name(), "ture");
      Map<String, String> confs = Map.of(key.name(), "ture");
      assertThatThrownBy(
              () -> {
                // Each boolean is read by one of these; the rest ignore it.
                StreamStateSettings.parse(confs, 1, 1);
                StreamStateSettings.hedgePolicy(conf);
                StreamStateSettings.logJournalEnabled(conf);
                io.streamstate.hadoop.HadoopStorages.allowsSingleWriter(conf);
              })
          .as(key.name())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key.name())
          .hasMessageContaining("'ture' (expected true or false)");
    }
  }

  @Test
  void theLogJournalSwitchIsStrictInAHadoopConfiguration() {
    Configuration conf = new Configuration(false);
    assertThat(StreamStateSettings.logJournalEnabled(conf)).isFalse();
    conf.set(StreamStateSettings.LOG_JOURNAL, " True ");
    assertThat(StreamStateSettings.logJournalEnabled(conf)).isTrue();
    conf.set(StreamStateSettings.LOG_JOURNAL, "yes");
    assertThatThrownBy(() -> StreamStateSettings.logJournalEnabled(conf))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "Invalid value for "
                + StreamStateSettings.LOG_JOURNAL
                + ": 'yes' (expected true or false)");
  }
}
