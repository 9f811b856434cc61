package io.streamstate.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.hadoop.SlowDataNodeInjector;
import io.streamstate.hadoop.SlowDataNodes;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import io.streamstate.spark.shared.HedgeCounters;
import io.streamstate.spark.shared.HedgedSinkWrites;
import io.streamstate.spark.shared.Hedgers;
import java.io.IOException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import scala.Option;
import scala.Tuple3;

/**
 * The whole setup end to end on a real HDFS whose DataNodes turn slow: a MiniDFSCluster of 6
 * DataNodes, replication 3, one of them slowed at a time for {@value #SLOW_PERIOD_MS} ms by
 * Hadoop's {@code DataNodeFaultInjector} ({@link SlowDataNodeInjector}: every packet and ack of
 * that DataNode held). The query counts and sums orders per shop in 1-minute event-time windows
 * with a 1-minute watermark, append mode, into Parquet on HDFS, checkpointing on HDFS, with our
 * provider, checkpoint file manager, hedged file-sink protocol and log journals.
 *
 * <p>The slow DataNode is chosen, period by period, from the pipelines the run actually has (read
 * from the NameNode), so that a given kind of write meets it first in its batch:
 *
 * <ol>
 *   <li><b>state</b> (best effort, not asserted): a DataNode of the segment journal being appended
 *       to, not of the offset log journal's pipeline (appended to first in a batch), if there is
 *       one: the group commit's append stalls and is hedged by a segment file placed away.
 *   <li><b>log</b>: a DataNode of the offset log journal's pipeline. The append of the batch's
 *       {@code offsets/N} stalls and is hedged; every file created from then on, the next journals
 *       included, is placed away from the suspected pipeline.
 *   <li><b>sink</b> (after that suspicion has ended): a DataNode in no open journal's pipeline,
 *       preferably the one just slow (which every journal now avoids). The batch's first new files
 *       are its Parquet part files, placed by the NameNode as usual: each holds the slow DataNode
 *       with probability 1/2, so one of a batch's four is stuck with probability 15/16; it is
 *       hedged onto a pipeline without it and wins. Run again (at most {@value #MAX_SINK_PERIODS}
 *       periods) until a batch that ended while its DataNode was slow had a sink hedge won (a sink
 *       hedge of the first batches, on a cold cluster, does not count).
 *   <li>a stop and restart of the query on its checkpoint, and the last steps.
 * </ol>
 *
 * <p>Between periods the test waits until no DataNode is suspect any more ({@code
 * streamstate.datanode.suspectMs} is {@value #SUSPECT_MS} ms here, longer than a slow period: the
 * default 60 s would only make the test wait longer), so that every period starts from the
 * NameNode's own placement. Every batch is one step of input ({@code noDataMicroBatches} off, for
 * both runs), so a batch's first new files are its part files.
 *
 * <p>Asserted: sink hedges fired and won, and a hedge of our log writes or state commits fired; the
 * output read back through Spark's file source (honouring {@code _spark_metadata}) equals an
 * uninterrupted run of Spark's defaults (HDFS-backed provider, Spark's manager and protocol, local
 * disk), as does the same Spark run against the slowed cluster; every listed file exists with its
 * listed length; no listed file of a batch that completed while a DataNode was slow has a replica
 * on it as the batch ended (read then: the NameNode may later bring a file written on fewer nodes
 * back to three replicas anywhere). Printed, never asserted: batch durations, ours against Spark's
 * defaults on the same cluster with the same slow periods, and the hedge counters.
 *
 * <p>Not in the parity executions (spark/pom.xml): their forced confs would hedge every write.
 */
@DisabledIfSystemProperty(
    named = TestSessions.FORCED_CONF,
    matches = ".+",
    disabledReason = "measures real hedges: not with every write hedged")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class SlowDataNodeEndToEndIT {
  private static final int DATANODES = 6;
  private static final int SHUFFLE_PARTITIONS = 4;
  private static final long SLOW_PERIOD_MS = 4_000;
  private static final long SUSPECT_MS = 6_000;
  private static final int STEPS_PER_PERIOD = 2;
  private static final int WARM_UP_STEPS = 3;
  private static final int MAX_SINK_PERIODS = 3;
  private static final int SHOPS = 16;
  private static final int ORDERS_PER_STEP = 240;
  private static final long MINUTE_MS = 60_000;
  private static final long EVENT_TIME_START = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  /** A hedge deadline never under 250 ms: no hedge on a loaded machine's ordinary HDFS write. */
  private static final String HEDGE_DEADLINE_MS = "250";

  private static final String CFM_KEY = "spark.sql.streaming.checkpointFileManagerClass";
  private static final String PROTOCOL_KEY = "spark.sql.streaming.commitProtocolClass";
  private static final String SPARK_PROTOCOL =
      "org.apache.spark.sql.execution.streaming.ManifestFileCommitProtocol";
  private static final String SPARK_CFM_PACKAGE =
      "org.apache.spark.sql.execution.streaming.checkpointing.";

  static final java.nio.file.Path work = TestSessions.newWorkDir(SlowDataNodeEndToEndIT.class);
  private static MiniDfsFixture dfs;
  private static SlowDataNodeInjector injector;
  private static SlowDataNodes tracking;
  private static SparkSession spark;
  private static ScheduledExecutorService timer;

  @BeforeAll
  static void start() throws Exception {
    dfs =
        MiniDfsFixture.start(
            work.resolve("dfs"),
            DATANODES,
            Map.of(SlowDataNodes.SUSPECT_MILLIS_KEY, String.valueOf(SUSPECT_MS)));
    injector = SlowDataNodeInjector.install(dfs.cluster());
    // The process's tracking of this cluster, made here with the cluster's (and so Spark's)
    // client configuration: the window above.
    tracking = SlowDataNodes.of(dfs.fileSystem());
    assertThat(tracking.suspectMillis()).isEqualTo(SUSPECT_MS);
    Map<String, String> extra = new LinkedHashMap<>();
    extra.put("spark.sql.shuffle.partitions", String.valueOf(SHUFFLE_PARTITIONS));
    // Spark's defaults: snapshots and maintenance rarely, off the batches' path.
    extra.put("spark.sql.streaming.stateStore.maintenanceInterval", "60s");
    extra.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "10");
    extra.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    // Client settings for clients Spark makes from its own configuration (FileContext, Spark's
    // default checkpoint file manager): as the cluster's (MiniDfsFixture), which otherwise would
    // make every close() wait 400 ms for its last block.
    extra.put("spark.hadoop.dfs.replication", "3");
    extra.put("spark.hadoop.dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");
    extra.put("spark.hadoop." + SlowDataNodes.SUSPECT_MILLIS_KEY, String.valueOf(SUSPECT_MS));
    spark = TestSessions.start("SlowDataNodeEndToEndIT", work, extra);
    timer = Executors.newSingleThreadScheduledExecutor();
  }

  @AfterAll
  static void stop() {
    if (injector != null) {
      injector.close();
    }
    if (timer != null) {
      timer.shutdownNow();
    }
    if (spark != null) {
      TestSessions.stopWithStores(spark);
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  @Test
  void hedgesRouteAroundASlowDataNodeAndTheOutputIsExact() throws Exception {
    // ---- a few batches of Spark's defaults on local disk, so that no measured run pays for the
    // JVM's first query ----
    Run warmUp =
        new Run("warm-up", work.resolve("warm-up").toUri().toString(), sparkConf("FileSystem"));
    warmUp.start();
    while (warmUp.step < WARM_UP_STEPS) {
      warmUp.step();
    }
    warmUp.stop();

    // ---- ours: the schedule is chosen from the pipelines as the run goes ----
    Run ours = new Run("ours", dfs.path("/e2e/ours").toString(), oursConf());
    HedgeMetrics.Snapshot sink0 = HedgedFileCommitProtocol.hedgeMetrics();
    HedgeMetrics.Snapshot state0 = StreamStateProvider.hedgeMetricsForTests();
    HedgeMetrics.Snapshot log0 = HedgeCounters.sparkLogs();
    List<Period> schedule = new ArrayList<>();
    ours.start();
    while (ours.step < WARM_UP_STEPS || tracking.known().size() < DATANODES) {
      assertThat(ours.step).as("DataNodes seen working: %s", tracking.known()).isLessThan(10);
      ours.step();
    }

    // 1. state (best effort): a DataNode of the segment journal being appended to, not of the
    // offset log journal's pipeline (appended to first in a batch).
    awaitNoSuspects();
    Pipelines pipelines = pipelines(ours);
    Set<String> stateCandidates = minus(pipelines.currentSegment(), pipelines.offsets());
    if (!stateCandidates.isEmpty()) {
      schedule.add(slowPeriod(ours, "segment journal", first(stateCandidates), pipelines));
    } else {
      System.out.printf(
          "slow datanode e2e: no state period, no DataNode only in the segment journal: %s%n",
          pipelines);
    }

    // 2. log: a DataNode of the offset log journal's pipeline, of the commit log's too if any.
    awaitNoSuspects();
    pipelines = pipelines(ours);
    Set<String> logCandidates = intersection(pipelines.offsets(), pipelines.commits());
    String logNode = first(logCandidates.isEmpty() ? pipelines.offsets() : logCandidates);
    schedule.add(slowPeriod(ours, "log journal", logNode, pipelines));

    // 3. sink: a DataNode in no journal's pipeline, until a batch that ended while its DataNode
    // was slow had a sink hedge won (bounded). Not "until any sink hedge won": a write of the
    // first batches on a cold cluster may pass its deadline and be hedged before any period.
    String previous = logNode;
    for (int attempt = 0; attempt < MAX_SINK_PERIODS && hedgedWhileSlow(schedule) == 0; attempt++) {
      awaitNoSuspects();
      pipelines = pipelines(ours);
      String sinkNode = sinkTarget(pipelines, previous);
      schedule.add(slowPeriod(ours, "new files", sinkNode, pipelines));
      previous = sinkNode;
    }

    // 4. a restart on the same checkpoint.
    int restartStep = ours.step;
    ours.restart();
    ours.step();
    ours.step();
    ours.flush();
    ours.stop();
    HedgeMetrics.Snapshot sinkHedges = HedgedFileCommitProtocol.hedgeMetrics().since(sink0);
    HedgeMetrics.Snapshot stateHedges = StreamStateProvider.hedgeMetricsForTests().since(state0);
    HedgeMetrics.Snapshot logHedges = HedgeCounters.sparkLogs().since(log0);
    int steps = ours.step;

    // ---- Spark's defaults on the same cluster, with the same slow periods ----
    Run sparks = new Run("spark", dfs.path("/e2e/spark").toString(), sparkConf("FileContext"));
    sparks.start();
    for (Period period : schedule) {
      while (sparks.step < period.firstStep()) {
        sparks.stepOrRestart(restartStep);
      }
      replay(sparks, period);
    }
    while (sparks.step < steps - Run.FLUSH_STEPS) {
      sparks.stepOrRestart(restartStep);
    }
    sparks.flush();
    sparks.stop();

    // ---- the reference: Spark's defaults on local disk, uninterrupted ----
    Run reference =
        new Run("reference", work.resolve("reference").toUri().toString(), sparkConf("FileSystem"));
    reference.start();
    while (reference.step < steps - Run.FLUSH_STEPS) {
      reference.step();
    }
    reference.flush();
    reference.stop();

    // ---- what was measured ----
    for (Period p : schedule) {
      System.out.printf(
          "slow datanode e2e: %s slow for %d ms before step %d (%s; %s; hedge deadlines %s): ours"
              + " batches %s ms,"
              + " sink hedges %d fired %d won, state %d fired, log %d fired, %d holds; spark"
              + " defaults batches %s ms%n",
          p.dataNode(),
          SLOW_PERIOD_MS,
          p.firstStep(),
          p.target(),
          p.pipelines(),
          p.deadlines(),
          ours.durations(p.batches()),
          p.sink().hedgesFired(),
          p.sink().hedgesWon(),
          p.state().hedgesFired(),
          p.log().hedgesFired(),
          p.holds(),
          sparks.durations(sparks.batchesOfSteps(p.firstStep(), STEPS_PER_PERIOD)));
    }
    System.out.printf(
        "slow datanode e2e: batch durations (batch:ms), ours %s; spark defaults %s%n",
        ours.timeline(), sparks.timeline());
    List<Long> slowOurs = new ArrayList<>();
    List<Long> slowSparks = new ArrayList<>();
    for (Period p : schedule) {
      slowOurs.addAll(ours.durations(p.batches()));
      slowSparks.addAll(sparks.durations(sparks.batchesOfSteps(p.firstStep(), STEPS_PER_PERIOD)));
    }
    System.out.printf(
        "slow datanode e2e: ours p50 %d max %d ms over %d batches (in slow periods p50 %d max %d"
            + " over %d); spark defaults p50 %d max %d ms over %d (in slow periods p50 %d max %d);"
            + " %d slow periods of %d ms, restart before step %d; sink hedges %d writes, %d fired,"
            + " %d won, %d losers deleted, %d left, %d skipped for budget; state commit hedges %d"
            + " fired, %d won; log hedges %d fired, %d won%n",
        percentile(ours.durations(), 0.5),
        percentile(ours.durations(), 1),
        ours.durations().size(),
        percentile(slowOurs, 0.5),
        percentile(slowOurs, 1),
        slowOurs.size(),
        percentile(sparks.durations(), 0.5),
        percentile(sparks.durations(), 1),
        sparks.durations().size(),
        percentile(slowSparks, 0.5),
        percentile(slowSparks, 1),
        schedule.size(),
        SLOW_PERIOD_MS,
        restartStep,
        sinkHedges.writes(),
        sinkHedges.hedgesFired(),
        sinkHedges.hedgesWon(),
        sinkHedges.losersCleaned(),
        sinkHedges.losersLeft(),
        sinkHedges.hedgesSkippedForBudget(),
        stateHedges.hedgesFired(),
        stateHedges.hedgesWon(),
        logHedges.hedgesFired(),
        logHedges.hedgesWon());

    // ---- what is asserted ----
    assertThat(sinkHedges.hedgesFired()).as("sink hedges: %s", schedule).isPositive();
    assertThat(sinkHedges.hedgesWon()).as("sink hedges won: %s", schedule).isPositive();
    assertThat(stateHedges.hedgesFired() + logHedges.hedgesFired())
        .as("state commit (%s) and log (%s) hedges", stateHedges, logHedges)
        .isPositive();

    List<String> expected = reference.output();
    assertThat(expected).hasSize(SHOPS * (steps - Run.FLUSH_STEPS));
    assertThat(ours.output()).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(sparks.output()).containsExactlyInAnyOrderElementsOf(expected);

    FileStreamSinkLog log = ours.sinkLog();
    FileSystem fs = dfs.fileSystem();
    Map<String, Integer> filesPerDataNode = new java.util.TreeMap<>();
    for (SinkFileStatus f : log.allFiles()) {
      Path path = f.toFileStatus().getPath();
      assertThat(fs.exists(path)).as("listed %s exists", path).isTrue();
      assertThat(fs.getFileStatus(path).getLen()).as("length of %s", path).isEqualTo(f.size());
      replicas(path).forEach(dn -> filesPerDataNode.merge(dn, 1, Integer::sum));
    }
    int checkedBatches = 0;
    for (Period p : schedule) {
      for (Batch b : p.batches()) {
        if (!b.endedWhileSlow()) {
          continue;
        }
        checkedBatches++;
        assertThat(b.replicasAtEnd().keySet())
            .as("files batch %d added", b.id())
            .isNotEmpty()
            .isSubsetOf(Arrays.stream(log.get(b.id()).get()).map(SinkFileStatus::path).toList());
        // As the batch ended, the DataNode still slow: where our writes put the files. Later the
        // NameNode may bring a file written on fewer nodes (its own choice under load) back to
        // three replicas anywhere, the recovered DataNode included: not our placement.
        b.replicasAtEnd()
            .forEach(
                (file, replicas) ->
                    assertThat(replicas)
                        .as("replicas of %s as batch %d ended while %s was slow", file, b.id(), p)
                        .isNotEmpty()
                        .doesNotContain(p.dataNode()));
        for (Map.Entry<String, List<String>> f : b.replicasAtEnd().entrySet()) {
          List<String> now = replicas(new Path(f.getKey()));
          if (!new TreeSet<>(now).equals(new TreeSet<>(f.getValue()))) {
            System.out.printf(
                "slow datanode e2e: %s had replicas %s as batch %d ended, %s now%n",
                f.getKey(), f.getValue(), b.id(), now);
          }
        }
      }
    }
    int hedgedBatches = hedgedWhileSlow(schedule);
    assertThat(hedgedBatches)
        .as(
            "batches with a sink hedge won that completed while their DataNode was slow: %s",
            schedule)
        .isPositive();
    System.out.printf(
        "slow datanode e2e: %d rows, identical to the reference in both runs; %d files listed,"
            + " each of its listed length; %d batches completed while their DataNode was slow"
            + " (%d with a sink hedge won): none of their files has a replica on it; listed files"
            + " per DataNode: %s%n",
        expected.size(), log.allFiles().length, checkedBatches, hedgedBatches, filesPerDataNode);
  }

  // ---- the slow periods ----

  /** Batches that ended while their period's DataNode was slow and had a sink hedge won. */
  private static int hedgedWhileSlow(List<Period> schedule) {
    int hedged = 0;
    for (Period p : schedule) {
      for (Batch b : p.batches()) {
        hedged += b.endedWhileSlow() && b.sinkHedgesWon() > 0 ? 1 : 0;
      }
    }
    return hedged;
  }

  /** One slow period of a run: what was slow, why, and the batches and hedges it saw. */
  record Period(
      String target,
      String dataNode,
      int firstStep,
      List<Batch> batches,
      HedgeMetrics.Snapshot sink,
      HedgeMetrics.Snapshot state,
      HedgeMetrics.Snapshot log,
      long holds,
      String pipelines,
      String deadlines) {
    @Override
    public String toString() {
      return String.format(
          "%s slow before step %d (%s; pipelines %s; deadlines %s): batches %s, sink %s, state %s,"
              + " log %s",
          dataNode, firstStep, target, pipelines, deadlines, batches, sink, state, log);
    }
  }

  /**
   * A batch of a slow period: its id, whether it completed before its DataNode recovered, and the
   * replicas of each file it added (by path) read as it ended, before that check.
   */
  record Batch(
      long id,
      boolean endedWhileSlow,
      long sinkHedgesWon,
      Map<String, List<String>> replicasAtEnd) {}

  /**
   * Makes {@code dataNode} slow for {@link #SLOW_PERIOD_MS} and runs {@link #STEPS_PER_PERIOD}
   * steps of {@code run} from then on; returns when the period is over and no DataNode is suspect.
   */
  private static Period slowPeriod(Run run, String target, String dataNode, Pipelines pipelines)
      throws Exception {
    awaitNoSuspects();
    HedgeMetrics.Snapshot sink = HedgedFileCommitProtocol.hedgeMetrics();
    HedgeMetrics.Snapshot state = StreamStateProvider.hedgeMetricsForTests();
    HedgeMetrics.Snapshot log = HedgeCounters.sparkLogs();
    long holds = injector.holds();
    String deadlines = deadlines();
    int firstStep = run.step;
    List<Batch> batches = new ArrayList<>();
    ScheduledFuture<?> release = slowFor(dataNode);
    for (int i = 0; i < STEPS_PER_PERIOD; i++) {
      HedgeMetrics.Snapshot sinkBefore = HedgedFileCommitProtocol.hedgeMetrics();
      // A sink log compaction batch (every tenth) lists every earlier batch's files as well,
      // written before this period: only the files this batch added are where it placed them.
      Set<String> earlier =
          Arrays.stream(run.sinkLog().allFiles())
              .map(SinkFileStatus::path)
              .collect(Collectors.toSet());
      long id = run.step();
      Map<String, List<String>> replicasAtEnd = new LinkedHashMap<>();
      for (SinkFileStatus f : run.sinkLog().get(id).get()) {
        if (!earlier.contains(f.path())) {
          replicasAtEnd.put(f.path(), replicas(f.toFileStatus().getPath()));
        }
      }
      boolean stillSlow = injector.slowDataNode().filter(dataNode::equals).isPresent();
      batches.add(
          new Batch(
              id,
              stillSlow,
              HedgedFileCommitProtocol.hedgeMetrics().since(sinkBefore).hedgesWon(),
              replicasAtEnd));
    }
    release.get();
    Period period =
        new Period(
            target,
            dataNode,
            firstStep,
            batches,
            HedgedFileCommitProtocol.hedgeMetrics().since(sink),
            StreamStateProvider.hedgeMetricsForTests().since(state),
            HedgeCounters.sparkLogs().since(log),
            injector.holds() - holds,
            pipelines.toString(),
            deadlines);
    awaitNoSuspects();
    return period;
  }

  /** The same period for another run: same DataNode, same length, before the same step. */
  private static void replay(Run run, Period period) throws Exception {
    ScheduledFuture<?> release = slowFor(period.dataNode());
    for (int i = 0; i < STEPS_PER_PERIOD; i++) {
      run.step();
    }
    release.get();
  }

  /**
   * The hedge deadlines of our sink files (of up to 1 MiB) and of our Spark log writes now: they
   * follow the writes' latencies, late losers' included.
   */
  private static String deadlines() {
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    oursConf().forEach(conf::set);
    return String.format(
        "sink %d ms, log %d ms",
        HedgedSinkWrites.of(ProcessResources.shared())
            .writer(conf, 1)
            .policy()
            .deadline()
            .toMillis(),
        Hedgers.of(ProcessResources.shared())
            .writer(Hedgers.Kind.SPARK_LOGS, StreamStateConf.hedgePolicy(conf))
            .policy()
            .deadline()
            .toMillis());
  }

  private static ScheduledFuture<?> slowFor(String dataNode) {
    injector.slow(dataNode);
    return timer.schedule(injector::release, SLOW_PERIOD_MS, TimeUnit.MILLISECONDS);
  }

  private static void awaitNoSuspects() {
    Awaitility.await("no suspect DataNode")
        .atMost(Duration.ofMillis(SUSPECT_MS * 4))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> tracking.suspects().isEmpty());
  }

  /**
   * A DataNode for new files to meet first: in no open journal's pipeline (the offset and commit
   * log journals, the segment journals), else in neither the offset log's nor a segment journal's
   * (the commit log is appended after the sink's files), preferring {@code previous}.
   */
  private static String sinkTarget(Pipelines p, String previous) {
    Set<String> all = new TreeSet<>(injector.dataNodes());
    Set<String> candidates = minus(minus(minus(all, p.offsets()), p.commits()), p.segmentsAny());
    if (candidates.isEmpty()) {
      candidates = minus(minus(all, p.offsets()), p.segmentsAny());
    }
    if (candidates.isEmpty()) {
      candidates = minus(all, p.offsets());
    }
    return candidates.contains(previous) ? previous : first(candidates);
  }

  // ---- pipelines, from the NameNode ----

  /** The pipelines of the journals a run has open, as transfer addresses. */
  record Pipelines(Set<String> offsets, Set<String> commits, List<Set<String>> segments) {
    /**
     * The segment journal being appended to: the oldest open one (its standby is made after it; a
     * retired one is closed once its last append returned).
     */
    Set<String> currentSegment() {
      return segments.isEmpty() ? Set.of() : segments.get(0);
    }

    Set<String> segmentsAny() {
      Set<String> any = new TreeSet<>();
      segments.forEach(any::addAll);
      return any;
    }

    @Override
    public String toString() {
      return "offsets " + offsets + ", commits " + commits + ", segments " + segments;
    }
  }

  private static Pipelines pipelines(Run run) throws IOException {
    Path root = new Path(run.checkpoint);
    List<Path> offsets =
        openFiles(new Path(root, "offsets"), n -> n.startsWith(LogJournalFile.NAME_PREFIX));
    List<Path> commits =
        openFiles(new Path(root, "commits"), n -> n.startsWith(LogJournalFile.NAME_PREFIX));
    List<Path> segments = openFiles(new Path(root, "state/_segments"), n -> n.endsWith(".journal"));
    assertThat(offsets).as("open offset log journals").isNotEmpty();
    List<Set<String>> segmentPipelines = new ArrayList<>();
    for (Path s : segments) {
      segmentPipelines.add(pipelineOf(s));
    }
    return new Pipelines(
        pipelineOf(offsets.get(offsets.size() - 1)),
        commits.isEmpty() ? Set.of() : pipelineOf(commits.get(commits.size() - 1)),
        segmentPipelines);
  }

  /** Files of {@code dir} still being written whose names match, by name. */
  private static List<Path> openFiles(Path dir, Predicate<String> name) throws IOException {
    DistributedFileSystem fs = (DistributedFileSystem) dfs.fileSystem();
    List<Path> open = new ArrayList<>();
    if (!fs.exists(dir)) {
      return open;
    }
    for (FileStatus f : fs.listStatus(dir)) {
      if (f.isFile() && name.test(f.getPath().getName()) && !fs.isFileClosed(f.getPath())) {
        open.add(f.getPath());
      }
    }
    open.sort(null);
    return open;
  }

  /** The DataNodes of the last block of a file being written: its pipeline. */
  private static Set<String> pipelineOf(Path file) throws IOException {
    DistributedFileSystem fs = (DistributedFileSystem) dfs.fileSystem();
    LocatedBlocks blocks = fs.getClient().getLocatedBlocks(file.toUri().getPath(), 0);
    LocatedBlock last = blocks.getLastLocatedBlock();
    if (last == null && blocks.locatedBlockCount() > 0) {
      last = blocks.get(blocks.locatedBlockCount() - 1);
    }
    Set<String> nodes = new TreeSet<>();
    if (last != null) {
      for (DatanodeInfo dn : last.getLocations()) {
        nodes.add(dn.getXferAddr());
      }
    }
    return nodes;
  }

  /** The DataNodes holding replicas of a complete file. */
  private static List<String> replicas(Path file) throws IOException {
    FileSystem fs = dfs.fileSystem();
    List<String> names = new ArrayList<>();
    long length = fs.getFileStatus(file).getLen();
    for (BlockLocation b : fs.getFileBlockLocations(file, 0, Math.max(1, length))) {
      names.addAll(Arrays.asList(b.getNames()));
    }
    return names;
  }

  // ---- the runs ----

  private static Map<String, String> oursConf() {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put(TestSessions.PROVIDER_CLASS, TestSessions.OURS);
    conf.put(CFM_KEY, RenameFreeCheckpointFileManager.class.getName());
    conf.put(PROTOCOL_KEY, HedgedFileCommitProtocol.class.getName());
    conf.put(StreamStateConf.LOG_JOURNAL, "true");
    conf.put(StreamStateConf.HEDGE_FLOOR_MS, HEDGE_DEADLINE_MS);
    conf.put(StreamStateConf.HEDGE_INITIAL_DEADLINE_MS, HEDGE_DEADLINE_MS);
    return conf;
  }

  /**
   * Spark alone: its HDFS-backed provider, file-sink protocol, and checkpoint file manager ({@code
   * FileContext}, its default, on HDFS; {@code FileSystem} on local disk, where the default forks a
   * process per file without Hadoop's native library).
   */
  private static Map<String, String> sparkConf(String manager) {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put(TestSessions.PROVIDER_CLASS, TestSessions.HDFS);
    conf.put(CFM_KEY, SPARK_CFM_PACKAGE + manager + "BasedCheckpointFileManager");
    conf.put(PROTOCOL_KEY, SPARK_PROTOCOL);
    return conf;
  }

  /**
   * One run of the query: input one step at a time (one step, one batch), its progress, its output.
   * Orders of step {@code s} have event times in minute {@code s}.
   */
  private static final class Run {
    static final int FLUSH_STEPS = 2;

    final String name;
    final String checkpoint;
    final String output;
    final Map<String, String> conf;
    final MemoryStream<Tuple3<String, Timestamp, Integer>> input;
    final Dataset<Row> query;
    final List<StreamingQueryProgress> progress = new ArrayList<>();

    /** The batch each step ran, by step. */
    final List<Long> batchOfStep = new ArrayList<>();

    StreamingQuery running;
    int step;
    boolean restarted;

    Run(String name, String root, Map<String, String> conf) {
      this.name = name;
      this.checkpoint = root + "/checkpoint";
      this.output = root + "/revenue";
      this.conf = conf;
      this.input =
          MemoryStream.apply(
              Encoders.tuple(Encoders.STRING(), Encoders.TIMESTAMP(), Encoders.INT()), spark);
      this.query =
          input
              .toDS()
              .toDF("shop", "ts", "amount")
              .withWatermark("ts", "1 minute")
              .groupBy(window(col("ts"), "1 minute"), col("shop"))
              .agg(count(lit(1)).as("orders"), sum("amount").as("revenue"))
              .select(
                  col("window.start").as("window_start"),
                  col("window.end").as("window_end"),
                  col("shop"),
                  col("orders"),
                  col("revenue"));
    }

    void start() throws Exception {
      conf.forEach((k, v) -> spark.conf().set(k, v));
      running =
          query
              .writeStream()
              .queryName("revenue-" + name)
              .format("parquet")
              .outputMode(OutputMode.Append())
              .option("checkpointLocation", checkpoint)
              .option("path", output)
              .start();
    }

    /** Adds the next step's orders and runs them: one batch. Returns its id. */
    long step() {
      return run(orders(step));
    }

    /** The next step, after a restart if it is the step {@code restartStep}. */
    void stepOrRestart(int restartStep) throws Exception {
      if (step == restartStep && !restarted) {
        restart();
      }
      step();
    }

    /**
     * Two last steps: one order far ahead moves the watermark past every window, and the next batch
     * emits them.
     */
    void flush() {
      long far = EVENT_TIME_START + 100 * 24 * 60 * MINUTE_MS;
      run(List.of(new Tuple3<>("flush", new Timestamp(far), 0)));
      run(List.of(new Tuple3<>("flush", new Timestamp(far + 1), 0)));
    }

    private long run(List<Tuple3<String, Timestamp, Integer>> orders) {
      input.addData(ScalaInterop.seq(orders));
      running.processAllAvailable();
      long id = running.lastProgress().batchId();
      batchOfStep.add(id);
      step++;
      return id;
    }

    /** Stops the query and starts it again on the same checkpoint. */
    void restart() throws Exception {
      stopQuery();
      start();
      restarted = true;
    }

    void stop() throws Exception {
      stopQuery();
      conf.keySet().forEach(k -> spark.conf().unset(k));
    }

    private void stopQuery() throws Exception {
      running.stop();
      if (running.exception().isDefined()) {
        throw running.exception().get();
      }
      progress.addAll(Arrays.asList(running.recentProgress()));
    }

    /** Batch durations ({@code triggerExecution}) of every batch that ran, in ms. */
    List<Long> durations() {
      return progress.stream()
          .filter(p -> p.durationMs().containsKey("addBatch"))
          .map(p -> p.durationMs().get("triggerExecution"))
          .collect(Collectors.toList());
    }

    List<Long> durations(List<Batch> batches) {
      Set<Long> ids = batches.stream().map(Batch::id).collect(Collectors.toSet());
      return progress.stream()
          .filter(p -> ids.contains(p.batchId()) && p.durationMs().containsKey("addBatch"))
          .map(p -> p.durationMs().get("triggerExecution"))
          .collect(Collectors.toList());
    }

    /** {@code batch:ms} of every batch that ran, in order. */
    String timeline() {
      return progress.stream()
          .filter(p -> p.durationMs().containsKey("addBatch"))
          .map(p -> p.batchId() + ":" + p.durationMs().get("triggerExecution"))
          .collect(Collectors.joining(" "));
    }

    List<Batch> batchesOfSteps(int first, int count) {
      List<Batch> batches = new ArrayList<>();
      for (int s = first; s < first + count && s < batchOfStep.size(); s++) {
        batches.add(new Batch(batchOfStep.get(s), false, 0, Map.of()));
      }
      return batches;
    }

    /** The rows Spark's file source reads from the output (through {@code _spark_metadata}). */
    List<String> output() {
      // The sink log of our run may hold hedge copies that only our manager reads.
      spark.conf().set(CFM_KEY, RenameFreeCheckpointFileManager.class.getName());
      try {
        return spark.read().parquet(output).collectAsList().stream()
            .map(Row::toString)
            .sorted()
            .collect(Collectors.toList());
      } finally {
        spark.conf().unset(CFM_KEY);
      }
    }

    /** The sink's log, read with our checkpoint file manager. */
    FileStreamSinkLog sinkLog() {
      Option<String> before = spark.conf().getOption(CFM_KEY);
      spark.conf().set(CFM_KEY, RenameFreeCheckpointFileManager.class.getName());
      try {
        return new FileStreamSinkLog(
            FileStreamSinkLog.VERSION(), spark, output + "/_spark_metadata", Option.empty());
      } finally {
        if (before.isDefined()) {
          spark.conf().set(CFM_KEY, before.get()); // a run of ours going on keeps its manager
        } else {
          spark.conf().unset(CFM_KEY);
        }
      }
    }
  }

  /** The orders of step {@code step}: event times spread over minute {@code step}. */
  static List<Tuple3<String, Timestamp, Integer>> orders(int step) {
    List<Tuple3<String, Timestamp, Integer>> orders = new ArrayList<>();
    long minute = EVENT_TIME_START + step * MINUTE_MS;
    for (int i = 0; i < ORDERS_PER_STEP; i++) {
      String shop = "shop-" + Math.floorMod(step * 31 + i * 7, SHOPS);
      long ts = minute + i * (MINUTE_MS / ORDERS_PER_STEP);
      int amount = (int) Math.floorMod((step * 1000L + i) * 7919, 5000);
      orders.add(new Tuple3<>(shop, new Timestamp(ts), amount));
    }
    return orders;
  }

  // ---- small helpers ----

  private static Set<String> intersection(Set<String> a, Set<String> b) {
    Set<String> both = new TreeSet<>(a);
    both.retainAll(b);
    return both;
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> rest = new TreeSet<>(a);
    rest.removeAll(b);
    return rest;
  }

  private static String first(Set<String> nodes) {
    assertThat(nodes).as("candidate DataNodes").isNotEmpty();
    return new TreeSet<>(nodes).first();
  }

  private static long percentile(List<Long> values, double p) {
    if (values.isEmpty()) {
      return 0;
    }
    List<Long> sorted = new ArrayList<>(values);
    sorted.sort(null);
    int index = (int) Math.ceil(p * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
  }
}
