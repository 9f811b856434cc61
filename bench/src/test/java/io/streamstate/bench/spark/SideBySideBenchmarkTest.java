package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The harness's parts that run no query: option parsing ({@link BenchSettings}), the child-JVM
 * protocol, the round plan ({@link RoundPlan}), provider variants ({@link Provider}) and the
 * per-batch CSV's columns ({@link BatchCsv}).
 */
class SideBySideBenchmarkTest {
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
  private static final String RENAME_FREE = "io.streamstate.spark.RenameFreeCheckpointFileManager";

  @Test
  void theVariantsOfOursRunOnlyWhenNamed() {
    assertThat(BenchSettings.parse(new String[] {"--mode", "short"}).providers)
        .containsExactly(
            Provider.STREAMSTATE,
            Provider.HDFS,
            Provider.ROCKSDB,
            Provider.ROCKSDB_CHANGELOG,
            Provider.NO_DURABILITY);
    assertThat(
            BenchSettings.parse(
                    new String[] {
                      "--mode", "short", "--providers", "streamstate,streamstate-nogroup,hdfs"
                    })
                .providers)
        .containsExactly(Provider.STREAMSTATE, Provider.STREAMSTATE_NOGROUP, Provider.HDFS);
    assertThat(
            BenchSettings.parse(new String[] {"--providers", "streamstate-nohedge,streamstate-nogroup"})
                .providers)
        .containsExactly(Provider.STREAMSTATE_NOHEDGE, Provider.STREAMSTATE_NOGROUP);
    assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--providers", "streamstate-nogroups"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown provider streamstate-nogroups");
  }

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
        .isEqualTo("io.streamstate.spark.RenameFreeCheckpointFileManager");
    assertThat(p.onRequestOnly()).isTrue();
  }

  @Test
  void rawIsOurFullConfigurationWithUncompressedChangelogs() {
    Provider raw = Provider.byLabel("streamstate-rflogs-raw");
    assertThat(raw.variantConfs()).isEqualTo(Map.of(CODEC, "none"));
    assertThat(raw.checkpointFileManager())
        .isEqualTo(Provider.STREAMSTATE_RFLOGS.checkpointFileManager())
        .isEqualTo("io.streamstate.spark.RenameFreeCheckpointFileManager");
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
      assertThat(p.checkpointFileManager())
          .isEqualTo(Provider.SPARK_FILE_SYSTEM_MANAGER);
    }
  }

  @Test
  void aVariantWhoseCommitProtocolIsNotOnTheClassPathFailsBeforeAnyRound() {
    BenchSettings s =
        BenchSettings.parse(
            new String[] {"--providers", "streamstate-tailfree-nohedge,hdfs", "--sink", "parquet"});
    assertThatThrownBy(() -> s.requireClasses(c -> false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(
            "Provider streamstate-tailfree-nohedge needs io.streamstate.spark.HedgedFileCommitProtocol"
                + " (set as spark.sql.streaming.commitProtocolClass), which is not on the class"
                + " path")
        .hasMessageContaining("leave streamstate-tailfree-nohedge out of --providers");
    s.requireClasses(c -> c.equals(HEDGED_COMMIT_PROTOCOL));
    // Providers that name no such class never ask.
    BenchSettings.parse(new String[] {"--providers", "streamstate,hdfs,streamstate-logjournal"})
        .requireClasses(
            c -> {
              throw new AssertionError("asked for " + c);
            });
    // The real check loads classes by name.
    assertThat(BenchSettings.onClassPath(RENAME_FREE)).isTrue();
    assertThat(BenchSettings.onClassPath("io.streamstate.spark.NoSuchClass")).isFalse();
  }

  @Test
  void theSinkIsNoopUnlessParquetIsAsked() {
    assertThat(BenchSettings.parse(new String[] {"--mode", "short"}).fileSink()).isFalse();
    assertThat(BenchSettings.parse(new String[] {"--sink", "noop"}).fileSink()).isFalse();
    assertThat(BenchSettings.parse(new String[] {"--sink", "parquet"}).fileSink()).isTrue();
    assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--sink", "csv"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--sink is noop or parquet, not csv");
  }

  @Test
  void theSlowDataNodePeriodsProfileIsAStorageOnRequest() {
    assertThat(
            BenchSettings.parse(new String[] {"--storages", "slow-datanode,slow-datanode-periods"})
                .storages)
        .containsExactly("slow-datanode", "slow-datanode-periods");
    assertThat(BenchSettings.parse(new String[] {"--mode", "short"}).storages)
        .doesNotContain("slow-datanode-periods");
    assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--storages", "slow-datanodes"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown storage slow-datanodes");
  }

  @Test
  void aChildJvmGetsTheOrchestratorsOptionsThenItsRoundAndCell() {
    BenchSettings parent =
        BenchSettings.parse(
            new String[] {"--mode", "heap", "--providers", "streamstate,hdfs", "--conf", "a=b"});
    assertThat(parent.child()).isFalse();
    List<String> args = parent.childArgs(2, Path.of("/results/x"), 1);
    assertThat(args)
        .containsExactly(
            "--mode",
            "heap",
            "--providers",
            "streamstate,hdfs",
            "--conf",
            "a=b",
            "--child-round",
            "2",
            "--dir",
            "/results/x",
            "--child-cell",
            "1");
    BenchSettings child = BenchSettings.parse(args.toArray(new String[0]));
    assertThat(child.child()).isTrue();
    assertThat(child.childRound).isEqualTo(2);
    assertThat(child.childCell).isEqualTo(1);
    assertThat(child.dir).isEqualTo("/results/x");
    assertThat(child.confs).isEqualTo(Map.of("a", "b"));
    // The protocol's options are never passed on as the run's own.
    assertThat(child.args).isEqualTo(parent.args);
    assertThat(parent.childArgs(0, Path.of("/r"), -1))
        .endsWith("--child-round", "0", "--dir", "/r")
        .doesNotContain("--child-cell");
  }

  @Test
  void eachRoundRotatesTheProvidersByOneInTheMatrixTheSaturationCellsAndTheWarmUp() {
    RoundPlan plan =
        new RoundPlan(
            BenchSettings.parse(
                new String[] {
                  "--providers", "streamstate,hdfs,rocksdb",
                  "--storages", "local",
                  "--workloads", "window-agg",
                  "--saturation-rows", "1000"
                }));
    assertThat(plan.providers(0))
        .containsExactly(Provider.STREAMSTATE, Provider.HDFS, Provider.ROCKSDB);
    assertThat(plan.providers(1))
        .containsExactly(Provider.HDFS, Provider.ROCKSDB, Provider.STREAMSTATE);
    List<Cell> cells = plan.cells(1);
    assertThat(cells)
        .extracting(Cell::id)
        .containsExactly("000", "001", "002", "003", "004", "005");
    assertThat(cells)
        .extracting(Cell::kind)
        .containsExactly("matrix", "matrix", "matrix", "saturation", "saturation", "saturation");
    assertThat(cells)
        .extracting(Cell::provider)
        .containsExactly(
            Provider.HDFS,
            Provider.ROCKSDB,
            Provider.STREAMSTATE,
            Provider.HDFS,
            Provider.ROCKSDB,
            Provider.STREAMSTATE);
    assertThat(cells.get(3).rowsPerBatch()).isEqualTo(1000);
    assertThat(plan.warmUp(1))
        .extracting(Cell::id)
        .containsExactly("warmup-window-agg", "warmup-hdfs", "warmup-rocksdb", "warmup-streamstate");
  }

  @Test
  void theTrimmedMatrixRunsTheBaselineOnLocalDiskOnlyAndOnS3OnlyTheSeedJob() {
    RoundPlan trimmed = new RoundPlan(BenchSettings.parse(new String[] {"--mode", "short"}));
    assertThat(trimmed.runs(Provider.NO_DURABILITY, Workload.DEDUP, "local")).isTrue();
    assertThat(trimmed.runs(Provider.NO_DURABILITY, Workload.WINDOW_AGG, "slow-datanode"))
        .isFalse();
    assertThat(trimmed.runs(Provider.HDFS, Workload.JOIN, "s3")).isFalse();
    assertThat(trimmed.runs(Provider.HDFS, Workload.WINDOW_AGG, "s3")).isTrue();
    // 5 providers x 3 workloads on local, 4 x 3 on slow-datanode and busy-namenode, 4 x 1 on s3,
    // then a saturation cell per provider.
    assertThat(trimmed.cells(0)).hasSize(15 + 12 + 12 + 4 + 5);
    RoundPlan full =
        new RoundPlan(BenchSettings.parse(new String[] {"--mode", "short", "--matrix", "full"}));
    assertThat(full.runs(Provider.NO_DURABILITY, Workload.JOIN, "s3")).isTrue();
  }

  @Test
  void theCsvHasAColumnForEveryCounterOfTheSimulatedStorage() {
    Map<String, Long> counters = SimulatedFileSystem.counters("none.csv-columns-test").snapshot();
    assertThat(BatchCsv.COLUMNS)
        .contains(counters.keySet().toArray(new String[0]))
        .contains("stateMetadataOps", "stateCreate", "stateList")
        .contains("sinkFilesWritten", "sinkMetadataOps", "slowNodeWaits", "slowNodeWaitMs")
        .contains("walCommitMs", "commitOffsetsMs", "heapCommittedMb", "nonHeapCommittedMb")
        .doesNotHaveDuplicates();
  }
}
