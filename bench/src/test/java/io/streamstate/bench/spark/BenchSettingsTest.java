package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Option parsing, the defaults of each mode and the child-JVM protocol ({@link BenchSettings});
 * runs no query.
 */
class BenchSettingsTest {
  private static final String HEDGED_COMMIT_PROTOCOL =
      "io.streamstate.spark.HedgedFileCommitProtocol";
  private static final String RENAME_FREE =
      "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

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
            BenchSettings.parse(
                    new String[] {"--providers", "streamstate-nohedge,streamstate-nogroup"})
                .providers)
        .containsExactly(Provider.STREAMSTATE_NOHEDGE, Provider.STREAMSTATE_NOGROUP);
    assertThatThrownBy(
            () -> BenchSettings.parse(new String[] {"--providers", "streamstate-nogroups"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown provider streamstate-nogroups");
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
}
