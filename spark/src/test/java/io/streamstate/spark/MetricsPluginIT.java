package io.streamstate.spark;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.ProcessMetrics;
import io.streamstate.core.engine.ProcessMetrics.Metric;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link StreamStateMetricsPlugin} read back from Spark's own sinks: the JMX sink's MBeans on the
 * platform MBean server and the Prometheus servlet on the driver's UI, in one local[2] session with
 * {@code spark.plugins} set; and the Streaming tab charting our custom metrics named by {@code
 * spark.sql.streaming.ui.enabledCustomMetricList}.
 *
 * <p>The values are checked against what the query must have done (commits = batches x partitions,
 * every partition loaded from durable storage in the first batch of each run, the cap configured),
 * not against the engine's own readings alone: a metric wired to the wrong counter, or not at all,
 * fails.
 */
class MetricsPluginIT {
  static final Path work = TestSessions.newWorkDir(MetricsPluginIT.class);
  private static final long CAP = 72L << 20; // not TestSessions' 64 MiB: proves the reading
  private static final String PLUGIN = StreamStateMetricsPlugin.class.getName();
  private static final int PARTITIONS = 2;
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    // The parity executions force hedging and async durability: these counts are for the defaults.
    assumeTrue(TestSessions.forcedConf().isEmpty(), "runs with the default settings only");
    // A fresh "executor process": the budget takes this session's cap, counters start at 0.
    ProcessResources.restartForTests(false);
    Map<String, String> confs = new HashMap<>();
    confs.put("spark.sql.shuffle.partitions", String.valueOf(PARTITIONS));
    confs.put("spark.plugins", PLUGIN);
    confs.put("spark.metrics.conf.*.sink.jmx.class", "org.apache.spark.metrics.sink.JmxSink");
    confs.put(
        "spark.metrics.conf.*.sink.prometheusServlet.class",
        "org.apache.spark.metrics.sink.PrometheusServlet");
    confs.put("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus");
    confs.put("spark.ui.enabled", "true");
    confs.put("spark.ui.port", "0"); // an ephemeral port on 127.0.0.1 (TestSessions binds there)
    // Static confs, read when the Streaming tab is made: the provider (whose metric names the tab
    // checks the list against) and the charts of our custom metrics.
    confs.put(TestSessions.PROVIDER_CLASS, TestSessions.OURS);
    confs.put(
        "spark.sql.streaming.ui.enabledCustomMetricList",
        "streamstateCommitLatencyMs,streamstateDurableLoads");
    confs.put(StreamStateConf.MEMORY_CAP_BYTES, String.valueOf(CAP));
    spark = TestSessions.start("MetricsPluginIT", work, confs);
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void jmxSinkShowsTheEngineMetricsOfTheQuery() throws Exception {
    Map<String, Long> before = jmxReadings();
    Path checkpoint = work.resolve("jmx");
    MemoryStream<Integer> input = SparkLineTestApi.memoryStream(Encoders.INT(), spark);
    Run first = runBatches(input, checkpoint, 2);
    Map<String, Long> afterFirst = jmxReadings();
    Run second = runBatches(input, checkpoint, 1); // a new run: new providers, durable loads
    Map<String, Long> after = jmxReadings();

    long commits = delta(before, after, "commits");
    assertThat(commits).as("commits").isEqualTo((first.batches() + second.batches()) * PARTITIONS);
    assertThat(delta(before, after, "warmLoads") + delta(before, after, "durableLoads"))
        .as("one load per commit")
        .isEqualTo(commits);
    assertThat(delta(before, afterFirst, "durableLoads")).as("first run").isEqualTo(PARTITIONS);
    assertThat(delta(afterFirst, after, "durableLoads")).as("restart").isEqualTo(PARTITIONS);
    // Sync with group commit (the defaults): every commit is a segment's member, and on local
    // disk segments are appended to a journal, which the fresh process had to create.
    assertThat(delta(before, after, "segmentCommits")).isEqualTo(commits);
    long segments = delta(before, after, "segmentsWritten");
    assertThat(segments).isBetween(1L, commits);
    assertThat(delta(before, after, "journalAppends")).isBetween(1L, segments);
    assertThat(delta(before, after, "journalAppendBytes")).isPositive();
    assertThat(after.get("journalsCreated")).isPositive();
    assertThat(after.get("journalAppendsInFlight")).isZero();
    assertThat(after.get("asyncUploadsPending")).isZero(); // sync durability
    assertThat(after.get("versionsLost")).isZero();

    assertThat(after.get("memoryCapBytes")).isEqualTo(CAP);
    // While the query ran: its stores open, their memtables charged to the budget.
    assertThat(second.whileRunning().get("memoryUsedBytes")).isPositive();
    assertThat(second.whileRunning().get("openInstances")).isGreaterThanOrEqualTo(PARTITIONS);

    // Every metric of both plugin sides is in the sink, and a counter the query no longer moves
    // reads as the engine's value.
    assertThat(after.keySet()).containsAll(allMetricNames());
    assertThat(after.get("commits"))
        .isEqualTo(ProcessMetrics.of(ProcessResources.shared()).read(Metric.COMMITS));
  }

  /**
   * Where local mode puts each side's metrics: Spark starts the local executor, and its plugins,
   * before the application has an id, so the executor side's are named {@code
   * plugin.<class>.<name>} (Spark warns "Using default name ... because neither
   * spark.metrics.namespace nor spark.app.id is set"); the driver side's {@code
   * <appId>.driver.plugin.<class>.<name>}.
   */
  @Test
  void localModeNamesTheExecutorSideWithoutTheApplicationId() throws Exception {
    Set<String> names = new HashSet<>();
    for (ObjectName name : ourMBeans(ManagementFactory.getPlatformMBeanServer())) {
      names.add(fullName(name));
    }
    String appId = spark.sparkContext().applicationId();
    for (String name : StreamStateMetricsPlugin.executorMetrics().keySet()) {
      assertThat(names).contains("plugin." + PLUGIN + "." + name);
    }
    for (String name : StreamStateMetricsPlugin.driverMetrics().keySet()) {
      assertThat(names).contains(appId + ".driver.plugin." + PLUGIN + "." + name);
    }
  }

  @Test
  void prometheusServletOnTheDriverUiShowsOurMetrics() throws Exception {
    runBatches(SparkLineTestApi.memoryStream(Encoders.INT(), spark), work.resolve("prometheus"), 1);
    String text = get("/metrics/prometheus");
    // metrics_[<appId>_driver_]plugin_io_streamstate_spark_StreamStateMetricsPlugin_commits_Count
    // {type="counters"} 3; gauges as ..._Value{type="gauges"}
    Pattern line =
        Pattern.compile(
            "(?m)^metrics_\\S*?plugin_io_streamstate_spark_StreamStateMetricsPlugin_(\\w+?)_"
                + "(?:Count|Value)\\{[^}]*\\} (-?\\d+)$");
    Map<String, Long> values = new HashMap<>();
    Matcher m = line.matcher(text);
    while (m.find()) {
      values.put(m.group(1), Long.parseLong(m.group(2)));
    }
    assertThat(values.keySet()).as("our metrics in:\n%s", text).containsAll(allMetricNames());
    assertThat(values.get("memoryCapBytes")).isEqualTo(CAP);
    assertThat(values.get("commits"))
        .isEqualTo(ProcessMetrics.of(ProcessResources.shared()).read(Metric.COMMITS))
        .isGreaterThanOrEqualTo(PARTITIONS);
  }

  @Test
  void streamingTabChartsTheCustomMetricsOfTheList() throws Exception {
    MemoryStream<Integer> input = SparkLineTestApi.memoryStream(Encoders.INT(), spark);
    StreamingQuery query = startQuery(input, work.resolve("streaming-tab"));
    try {
      input.addData(ScalaInterop.seq(List.of(1, 2, 3)));
      query.processAllAvailable();
      // The tab learns of progress through the listener bus, a moment after the batch.
      String url = "/StreamingQuery/statistics/?id=" + query.runId();
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(get(url)).contains("streamstateCommitLatencyMs"));
      // Charts for the listed metrics only: the list, not the provider, chose them.
      assertThat(get(url))
          .contains("streamstateDurableLoads")
          .doesNotContain("streamstateCommitBytes");
    } finally {
      query.stop();
    }
  }

  /** Our metric names as the plugin registers them, both sides. */
  private static Set<String> allMetricNames() {
    Set<String> names = new HashSet<>();
    for (Metric metric : Metric.values()) {
      names.add(metric.metricName());
    }
    names.addAll(StreamStateMetricsPlugin.executorMetrics().keySet());
    names.addAll(StreamStateMetricsPlugin.driverMetrics().keySet());
    return names;
  }

  private static long delta(Map<String, Long> before, Map<String, Long> after, String name) {
    return after.get(name) - before.getOrDefault(name, 0L);
  }

  /** A run of the query: the batches it ran, and our JMX metrics just before it stopped. */
  private record Run(long batches, Map<String, Long> whileRunning) {}

  /**
   * Runs {@code batches} batches of a counting aggregation of {@code input}, then stops: a run of
   * the query, resumed from {@code checkpoint} if it holds one.
   */
  private static Run runBatches(MemoryStream<Integer> input, Path checkpoint, int batches)
      throws Exception {
    StreamingQuery query = startQuery(input, checkpoint);
    try {
      long firstBatch = -1;
      for (int b = 0; b < batches; b++) {
        input.addData(ScalaInterop.seq(List.of(b, b + 1, b + 2, b + 3)));
        query.processAllAvailable();
        if (firstBatch < 0) {
          firstBatch = query.lastProgress().batchId();
        }
      }
      return new Run(query.lastProgress().batchId() - firstBatch + 1, jmxReadings());
    } finally {
      query.stop();
    }
  }

  private static StreamingQuery startQuery(MemoryStream<Integer> input, Path checkpoint)
      throws Exception {
    return input
        .toDF()
        .groupBy(col("value").mod(5).as("k"))
        .count()
        .writeStream()
        .format("noop")
        .outputMode(OutputMode.Update())
        .option("checkpointLocation", checkpoint.toString())
        .start();
  }

  /**
   * Our metrics in the JMX sink by short name: Spark's sink registers each as an MBean of domain
   * {@code metrics} named after the metric's full name; counters have {@code Count}, gauges {@code
   * Value}.
   */
  private static Map<String, Long> jmxReadings() throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    String prefix = "plugin." + PLUGIN + ".";
    Map<String, Long> values = new HashMap<>();
    for (ObjectName name : ourMBeans(server)) {
      String full = fullName(name);
      Object v =
          server.getAttribute(
              name, "counters".equals(name.getKeyProperty("type")) ? "Count" : "Value");
      values.put(full.substring(full.indexOf(prefix) + prefix.length()), ((Number) v).longValue());
    }
    return values;
  }

  private static List<ObjectName> ourMBeans(MBeanServer server) throws Exception {
    List<ObjectName> ours = new ArrayList<>();
    for (ObjectName name : server.queryNames(new ObjectName("metrics:*"), null)) {
      String full = fullName(name);
      if (full != null && full.contains("plugin." + PLUGIN + ".")) {
        ours.add(name);
      }
    }
    return ours;
  }

  /** The metric's full name: the MBean's {@code name} key, unquoted if quoted. */
  private static String fullName(ObjectName name) {
    String raw = name.getKeyProperty("name");
    return raw != null && raw.startsWith("\"") ? ObjectName.unquote(raw) : raw;
  }

  private static String get(String path) throws Exception {
    String base = spark.sparkContext().uiWebUrl().get();
    HttpResponse<String> response =
        HttpClient.newBuilder()
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build()
            .send(
                HttpRequest.newBuilder(URI.create(base + path)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as("GET %s", path).isEqualTo(200);
    return response.body();
  }
}
