package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.hadoop.HadoopStorage;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * streamstate's hedged creates on the simulated HDFS with a slow DataNode (slow-datanode-periods):
 * a create whose pipeline holds the slow DataNode is hedged, and its hedge copy is placed away from
 * that pipeline, so only the primaries ever wait. This is what the benchmark's tail rests on.
 */
class HedgedWritesOnSlowDataNodesTest {
  @TempDir java.nio.file.Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void stop() {
    pool.shutdownNow();
  }

  @Test
  void hedgeCopiesOfCreatesHeldByASlowDataNodeArePlacedAwayFromIt() throws Exception {
    Configuration conf = new Configuration(false);
    conf.setDouble("fs.simfs.latencyScale", 0.02); // a 5-20 s period holds a write 0.1-0.4 s
    String authority = "slow-datanode-periods." + UUID.randomUUID().toString().replace("-", "");
    SimulatedFileSystem fs = new SimulatedFileSystem();
    fs.initialize(URI.create("simfs://" + authority + "/"), conf);
    DataNodeCluster cluster = fs.model().cluster();
    long[] instant = SlowPeriods.instantWithOneSlowDataNode(cluster);
    fs.model().useClock(() -> instant[0]); // the slow period lasts for the whole test
    HadoopStorage storage =
        HadoopStorage.open(fs, new Path("simfs://" + authority + tmp.resolve("out")));
    HedgedWriter writer =
        new HedgedWriter(
            HedgePolicy.builder()
                .floor(Duration.ofMillis(30))
                .initialDeadline(Duration.ofMillis(30))
                .minSamples(256)
                .budgetFraction(1)
                .build(),
            pool);

    // Warm-up: until the writer has seen every DataNode work (or be reported), a hedge copy's
    // placement can only fill with DataNodes reported as often as the slow one (a cold start:
    // after one late write its whole pipeline is equally suspect). A running query is past that.
    for (int i = 0; i < 20; i++) {
      writer.publish(
          storage, "warm-" + i, "warm-" + i + "-h", ContentWriter.ofBytes(new byte[100]));
    }
    Thread.sleep(500); // the warm-up's late primaries finish waiting (a hold is 0.4 s at most)
    Map<String, Long> before = SimulatedFileSystem.counters(authority).snapshot();
    int files = 40;
    int hedged = 0;
    for (int i = 0; i < files; i++) {
      HedgedPublish p =
          writer.publish(
              storage, "part-" + i, "part-" + i + "-h", ContentWriter.ofBytes(new byte[100]));
      hedged += p.hedgeFired() ? 1 : 0;
    }
    // Half of the random pipelines hold the slow DataNode at first; every one of those is late.
    assertThat(hedged).as("creates held by the slow DataNode, hedged").isPositive();
    Map<String, Long> c = SimulatedFileSystem.counters(authority).snapshot();
    assertThat(c.get("favoredCreates") - before.get("favoredCreates"))
        .as("hedge copies placed on favoured DataNodes")
        .isPositive();
    assertThat(c.get("favoredCreatesOnSlow") - before.get("favoredCreatesOnSlow"))
        .as("favoured placements through the slow DataNode")
        .isZero();
    // Only late primaries wait: no hedge copy, and no later create, is placed on the slow one.
    assertThat(c.get("slowNodeWaits") - before.get("slowNodeWaits")).isLessThanOrEqualTo(hedged);
  }
}
