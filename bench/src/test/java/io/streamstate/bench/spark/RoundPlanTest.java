package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Which cells a round runs, in which order ({@link RoundPlan}); runs no query. */
class RoundPlanTest {
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
        .containsExactly(
            "warmup-window-agg", "warmup-hdfs", "warmup-rocksdb", "warmup-streamstate");
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
    // then a saturation cell per provider and workload.
    assertThat(trimmed.cells(0)).hasSize(15 + 12 + 12 + 4 + 15);
    assertThat(trimmed.cells(0).stream().filter(c -> c.kind().equals("saturation")))
        .extracting(Cell::workload)
        .containsOnly(Workload.WINDOW_AGG, Workload.DEDUP, Workload.JOIN)
        .hasSize(15);
    RoundPlan full =
        new RoundPlan(BenchSettings.parse(new String[] {"--mode", "short", "--matrix", "full"}));
    assertThat(full.runs(Provider.NO_DURABILITY, Workload.JOIN, "s3")).isTrue();
  }
}
