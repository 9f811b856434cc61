package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.spark.HedgedFileCommitProtocol;
import io.streamstate.spark.RequestCounts;
import io.streamstate.spark.StreamStateConf;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * {@link HedgedFileCommitProtocol} on a real HDFS (MiniDFSCluster, one DataNode): the dedup query
 * into JSON with every sink write hedged gives Spark's output, and each listed file has the listed
 * length on HDFS. Also prints the NameNode requests of the sink, per output file, for Spark's
 * protocol and ours without hedging (ours reports the file without {@code getFileInfo}, and makes
 * it durable with {@code hsync}). Checkpoints stay on local disk, so the NameNode sees the sink
 * alone.
 */
class HedgedFileSinkHdfsIT {
  private static final int BATCHES = 5;
  private static final SinkQueries.Query QUERY = SinkQueries.Query.DEDUPLICATE_INTO_JSON;

  static final Path work = Sessions.newWorkDir(HedgedFileSinkHdfsIT.class);
  private static MiniDfsFixture dfs;
  private static SparkSession spark;

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    Map<String, String> conf = new LinkedHashMap<>(SinkQueries.sessionConf(work));
    conf.put("spark.hadoop.dfs.replication", "1");
    conf.put("spark.hadoop.dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");
    spark = ReliabilityQuery.start("HedgedFileSinkHdfsIT", "local[2]", conf);
    SinkQueries.writeInput(work.resolve("input"), 23, BATCHES);
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  /** One run of the query into {@code hdfs:///name}; returns the sink's NameNode requests. */
  private Map<String, Long> run(String name) throws Exception {
    RequestCounts.Source requests = RequestCounts.hdfs(dfs.cluster());
    Map<String, Long> before = requests.snapshot();
    SinkQueries.runOnce(
        spark,
        QUERY,
        work.resolve("input"),
        work.resolve("checkpoint-" + name).toUri().toString(),
        out(name));
    return RequestCounts.delta(before, requests.snapshot());
  }

  private static String out(String name) {
    return dfs.path("/sinks/" + name).toString();
  }

  /** The files the sink's log lists, each checked against its length on HDFS. */
  private static List<SinkFileStatus> listed(String name) throws Exception {
    FileStreamSinkLog log =
        new FileStreamSinkLog(
            FileStreamSinkLog.VERSION(), spark, out(name) + "/_spark_metadata", Option.empty());
    List<SinkFileStatus> files = List.of(log.allFiles());
    FileSystem fs = dfs.fileSystem();
    for (SinkFileStatus f : files) {
      assertThat(fs.getFileStatus(f.toFileStatus().getPath()).getLen())
          .as("length of %s on HDFS", f.path())
          .isEqualTo(f.size());
    }
    return files;
  }

  @Test
  void hedgedSinkOnHdfsGivesSparksOutput() throws Exception {
    SinkQueries.useSparkDefaults(spark);
    Map<String, Long> sparks = run("spark");
    List<String> reference = SinkQueries.read(spark, QUERY, out("spark"));
    int sparkFiles = listed("spark").size();

    SinkQueries.useHedged(spark);
    spark.conf().set(StreamStateConf.HEDGE_ENABLED, "false");
    Map<String, Long> unhedged;
    try {
      unhedged = run("ours-unhedged");
    } finally {
      spark.conf().unset(StreamStateConf.HEDGE_ENABLED);
    }
    int oursFiles = listed("ours-unhedged").size();
    assertThat(SinkQueries.read(spark, QUERY, out("ours-unhedged"))).isEqualTo(reference);

    // Hedgers are per JVM and policy, and learn: after 20 latencies the deadline follows them
    // (1.5 x p95), and earlier tests of this JVM may have taught the forced policy's hedgers fast
    // local writes. A policy of its own starts with deadline 0: every write is hedged.
    spark.conf().set(StreamStateConf.HEDGE_PERCENTILE, "0.9501");
    HedgeMetrics.Snapshot before = HedgedFileCommitProtocol.hedgeMetrics();
    try {
      run("ours-hedged");
    } finally {
      spark.conf().unset(StreamStateConf.HEDGE_PERCENTILE);
    }
    HedgeMetrics.Snapshot hedges = HedgedFileCommitProtocol.hedgeMetrics().since(before);
    List<SinkFileStatus> hedgedFiles = listed("ours-hedged");
    assertThat(SinkQueries.read(spark, QUERY, out("ours-hedged"))).isEqualTo(reference);
    assertThat(hedges.hedgesFired()).as(hedges.toString()).isPositive();
    System.out.printf(
        "hedged file sink on HDFS: %d files listed; sink hedges: %d writes, %d fired, %d won, %d"
            + " losers deleted, %d left%n",
        hedgedFiles.size(),
        hedges.writes(),
        hedges.hedgesFired(),
        hedges.hedgesWon(),
        hedges.losersCleaned(),
        hedges.losersLeft());

    System.out.println(
        "NameNode requests of the file sink per output file (dedup into JSON, "
            + BATCHES
            + " data batches):\n"
            + perFile("spark protocol", sparks, sparkFiles)
            + perFile("ours, unhedged", unhedged, oursFiles));
    assertThat(unhedged.getOrDefault("getFileInfo", 0L))
        .as("getFileInfo: ours %s vs Spark's %s", unhedged, sparks)
        .isLessThan(sparks.getOrDefault("getFileInfo", 0L));
  }

  private static String perFile(String name, Map<String, Long> requests, int files) {
    StringBuilder b = new StringBuilder(String.format("  %-15s (%d files):", name, files));
    requests.forEach(
        (method, n) -> {
          String kind = RequestCounts.hdfs(dfs.cluster()).kindOf(method);
          if (n > 0 && kind != null && !method.equals("renewLease")) {
            b.append(String.format(" %s %.2f", method, (double) n / files));
          }
        });
    return b.append('\n').toString();
  }
}
