package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each provider label's Spark confs ({@link Provider}); runs no query. */
class ProviderTest {
  private static final String GROUP_COMMIT =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.enabled";
  private static final String HEDGE = "spark.sql.streaming.stateStore.streamstate.hedge.enabled";
  private static final String CODEC = "spark.sql.streaming.stateStore.streamstate.changelog.codec";
  private static final String LOG_JOURNAL =
      "spark.sql.streaming.stateStore.streamstate.logJournal.enabled";
  private static final String JOURNAL =
      "spark.sql.streaming.stateStore.streamstate.groupCommit.journal";
  private static final String COMMIT_PROTOCOL = "spark.sql.streaming.commitProtocolClass";
  private static final String HEDGED_COMMIT_PROTOCOL =
      "io.streamstate.spark.HedgedFileCommitProtocol";
  private static final String RENAME_FREE =
      "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

  @Test
  void noGroupIsOurProviderWithGroupCommitOffAndNothingElseChanged() {
    Provider p = Provider.byLabel("streamstate-nogroup");
    assertThat(p.className).isEqualTo("io.streamstate.spark.StreamStateProvider");
    assertThat(p.discardsState).isFalse();
    assertThat(p.changelog).isFalse();
    assertThat(p.variantConfs()).isEqualTo(Map.of(GROUP_COMMIT, "false"));
    assertThat(Provider.STREAMSTATE_NOHEDGE.variantConfs()).isEqualTo(Map.of(HEDGE, "false"));
    assertThat(Provider.STREAMSTATE.variantConfs()).isEmpty();
    assertThat(Provider.NO_DURABILITY.variantConfs()).isEmpty();
    // Each cell sets its variant's keys and unsets the rest of these.
    assertThat(Provider.VARIANT_KEYS)
        .containsExactlyInAnyOrder(
            HEDGE, GROUP_COMMIT, CODEC, JOURNAL, LOG_JOURNAL, COMMIT_PROTOCOL);
    for (Provider any : Provider.values()) {
      assertThat(Provider.VARIANT_KEYS).containsAll(any.variantConfs().keySet());
    }
  }

  @Test
  void filesIsOurFullConfigurationWithASegmentFilePerGroupCommit() {
    Provider files = Provider.byLabel("streamstate-rflogs-files");
    assertThat(files.variantConfs()).isEqualTo(Map.of(JOURNAL, "false"));
    assertThat(files.checkpointFileManager())
        .isEqualTo(Provider.STREAMSTATE_RFLOGS.checkpointFileManager());
    assertThat(files.onRequestOnly()).isTrue();
  }

  @Test
  void logJournalIsOurFullConfigurationWithSparksLogsJournaledToo() {
    Provider p = Provider.byLabel("streamstate-logjournal");
    assertThat(p.variantConfs()).isEqualTo(Map.of(LOG_JOURNAL, "true"));
    assertThat(p.checkpointFileManager())
        .isEqualTo("io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager");
    assertThat(p.onRequestOnly()).isTrue();
  }

  @Test
  void rawIsOurFullConfigurationWithUncompressedChangelogs() {
    Provider raw = Provider.byLabel("streamstate-rflogs-raw");
    assertThat(raw.variantConfs()).isEqualTo(Map.of(CODEC, "none"));
    assertThat(raw.checkpointFileManager())
        .isEqualTo(Provider.STREAMSTATE_RFLOGS.checkpointFileManager())
        .isEqualTo("io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager");
    assertThat(Provider.STREAMSTATE_RFLOGS.variantConfs()).isEmpty();
    assertThat(raw.onRequestOnly()).isTrue();
  }

  @Test
  void tailFreeIsTheLogJournalConfigurationWithTheHedgedFileCommitProtocol() {
    Provider p = Provider.byLabel("streamstate-tailfree");
    assertThat(p.className).isEqualTo("io.streamstate.spark.StreamStateProvider");
    assertThat(p.variantConfs())
        .isEqualTo(Map.of(LOG_JOURNAL, "true", COMMIT_PROTOCOL, HEDGED_COMMIT_PROTOCOL));
    assertThat(p.checkpointFileManager()).isEqualTo(RENAME_FREE);
    assertThat(p.requiredClasses()).containsExactly(HEDGED_COMMIT_PROTOCOL);
    assertThat(p.onRequestOnly()).isTrue();

    Provider nohedge = Provider.byLabel("streamstate-tailfree-nohedge");
    assertThat(nohedge.variantConfs())
        .isEqualTo(
            Map.of(LOG_JOURNAL, "true", COMMIT_PROTOCOL, HEDGED_COMMIT_PROTOCOL, HEDGE, "false"));
    assertThat(nohedge.checkpointFileManager()).isEqualTo(RENAME_FREE);
    assertThat(nohedge.onRequestOnly()).isTrue();
  }

  @Test
  void onlyTheTailFreeVariantsChangeTheFileSinksCommitProtocol() {
    for (Provider p : Provider.values()) {
      boolean tailFree = p.label.startsWith("streamstate-tailfree");
      assertThat(p.variantConfs().containsKey(COMMIT_PROTOCOL)).as(p.label).isEqualTo(tailFree);
      assertThat(p.requiredClasses()).as(p.label).hasSize(tailFree ? 1 : 0);
    }
    // The built-ins keep Spark's checkpoint file manager and (unset) commit protocol.
    for (Provider p :
        new Provider[] {Provider.HDFS, Provider.ROCKSDB, Provider.ROCKSDB_CHANGELOG}) {
      assertThat(p.variantConfs()).as(p.label).isEmpty();
      assertThat(p.checkpointFileManager()).isEqualTo(Provider.SPARK_FILE_SYSTEM_MANAGER);
    }
  }
}
