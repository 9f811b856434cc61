package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.bench.spark.SideBySideBenchmark.Provider;
import io.streamstate.bench.spark.SideBySideBenchmark.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Option parsing, provider variants and the per-batch CSV's columns; runs no query. */
class SideBySideBenchmarkTest {
  private static final String GROUP_COMMIT =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.enabled";
  private static final String HEDGE = "spark.sql.streaming.stateStore.streamstate.hedge.enabled";
  private static final String CODEC = "spark.sql.streaming.stateStore.streamstate.changelog.codec";
  private static final String LOG_JOURNAL =
      "spark.sql.streaming.stateStore.streamstate.logJournal.enabled";
  private static final String JOURNAL =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.journal";

  @Test
  void theVariantsOfOursRunOnlyWhenNamed() {
    assertThat(Settings.parse(new String[] {"--mode", "short"}).providers)
        .containsExactly(
            Provider.STREAMSTATE,
            Provider.HDFS,
            Provider.ROCKSDB,
            Provider.ROCKSDB_CHANGELOG,
            Provider.NO_DURABILITY);
    assertThat(
            Settings.parse(
                    new String[] {
                      "--mode", "short", "--providers", "streamstate,streamstate-nogroup,hdfs"
                    })
                .providers)
        .containsExactly(Provider.STREAMSTATE, Provider.STREAMSTATE_NOGROUP, Provider.HDFS);
    assertThat(
            Settings.parse(new String[] {"--providers", "streamstate-nohedge,streamstate-nogroup"})
                .providers)
        .containsExactly(Provider.STREAMSTATE_NOHEDGE, Provider.STREAMSTATE_NOGROUP);
    assertThatThrownBy(() -> Settings.parse(new String[] {"--providers", "streamstate-nogroups"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown provider streamstate-nogroups");
  }

  @Test
  void noGroupIsOurProviderWithGroupCommitOffAndNothingElseChanged() {
    Provider p = Provider.byLabel("streamstate-nogroup");
    assertThat(p.className).isEqualTo("io.streamstate.spark.StreamStateProvider");
    assertThat(p.discardsState).isFalse();
    assertThat(p.changelog).isFalse();
    assertThat(p.streamstateConfs()).isEqualTo(Map.of(GROUP_COMMIT, "false"));
    assertThat(Provider.STREAMSTATE_NOHEDGE.streamstateConfs()).isEqualTo(Map.of(HEDGE, "false"));
    assertThat(Provider.STREAMSTATE.streamstateConfs()).isEmpty();
    assertThat(Provider.NO_DURABILITY.streamstateConfs()).isEmpty();
    // Each cell sets its variant's keys and unsets the rest of these.
    assertThat(Provider.STREAMSTATE_VARIANT_KEYS)
        .containsExactlyInAnyOrder(HEDGE, GROUP_COMMIT, CODEC, JOURNAL, LOG_JOURNAL);
    for (Provider any : Provider.values()) {
      assertThat(Provider.STREAMSTATE_VARIANT_KEYS).containsAll(any.streamstateConfs().keySet());
    }
  }

  @Test
  void filesIsOurFullConfigurationWithASegmentFilePerGroupCommit() {
    Provider files = Provider.byLabel("streamstate-rflogs-files");
    assertThat(files.streamstateConfs()).isEqualTo(Map.of(JOURNAL, "false"));
    assertThat(files.checkpointFileManager())
        .isEqualTo(Provider.STREAMSTATE_RFLOGS.checkpointFileManager());
    assertThat(files.onRequestOnly()).isTrue();
  }

  @Test
  void logJournalIsOurFullConfigurationWithSparksLogsJournaledToo() {
    Provider p = Provider.byLabel("streamstate-logjournal");
    assertThat(p.streamstateConfs()).isEqualTo(Map.of(LOG_JOURNAL, "true"));
    assertThat(p.checkpointFileManager())
        .isEqualTo("io.streamstate.spark.RenameFreeCheckpointFileManager");
    assertThat(p.onRequestOnly()).isTrue();
  }

  @Test
  void rawIsOurFullConfigurationWithUncompressedChangelogs() {
    Provider raw = Provider.byLabel("streamstate-rflogs-raw");
    assertThat(raw.streamstateConfs()).isEqualTo(Map.of(CODEC, "none"));
    assertThat(raw.checkpointFileManager())
        .isEqualTo(Provider.STREAMSTATE_RFLOGS.checkpointFileManager())
        .isEqualTo("io.streamstate.spark.RenameFreeCheckpointFileManager");
    assertThat(Provider.STREAMSTATE_RFLOGS.streamstateConfs()).isEmpty();
    assertThat(raw.onRequestOnly()).isTrue();
  }

  @Test
  void theCsvHasAColumnForEveryCounterOfTheSimulatedStorage() {
    Map<String, Long> counters = SimulatedFileSystem.counters("none.csv-columns-test").snapshot();
    assertThat(SideBySideBenchmark.CSV_COLUMNS)
        .contains(counters.keySet().toArray(new String[0]))
        .contains("stateMetadataOps", "stateCreate", "stateList")
        .contains("walCommitMs", "commitOffsetsMs", "heapCommittedMb", "nonHeapCommittedMb")
        .doesNotHaveDuplicates();
  }
}
