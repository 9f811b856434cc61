package io.streamstate.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/getting-started.md cannot rot: its {@code spark-defaults.conf} lines and its local {@code
 * spark-submit} lines (with {@code --jars}, and with {@code --packages} from a Maven-layout
 * repository the test writes) are run, as written, through Spark's own {@code SparkSubmit} (what
 * {@code bin/spark-submit} launches) in a child JVM whose classpath is Spark's alone, so that our
 * classes come only from the runtime jar on {@code --jars} (or {@code --packages}), as on a user's
 * cluster; its Scala snippet is compiled and run inside a small program on that same classpath plus
 * the runtime jar; its YARN lines, client and cluster mode, are run the same way against a YARN
 * cluster in this JVM ({@link MiniYarnOnHdfs}: MiniYARNCluster, MiniDFSCluster as the default file
 * system); every cluster line is checked to be the local line with only cluster options changed;
 * the error messages it quotes as ours are checked to be in our code.
 *
 * <p>What the test adds to the documented line, so that the run stays on loopback and leaves no UI
 * port open: {@code --conf spark.ui.enabled=false}, {@code spark.driver.host} and {@code
 * spark.driver.bindAddress} set to 127.0.0.1 (and, for {@code --packages}, Ivy settings naming only
 * the test's repository). It substitutes the built jars' paths for their file names, and a
 * temporary directory for the local lines' demo directory. On YARN it adds {@code spark.yarn.jars}
 * naming Spark's jars where every node has them (there is no Spark distribution here, whose {@code
 * jars/} spark-submit would upload), {@code spark.executor.instances=1} and {@code
 * spark.yarn.appMasterEnv.SPARK_LOCAL_IP=127.0.0.1}; the YARN lines' {@code hdfs:///} directory is
 * kept, its authority coming from {@code fs.defaultFS} in the {@code core-site.xml} of {@code
 * HADOOP_CONF_DIR}, as on a cluster.
 */
class GettingStartedIT {
  private static final Path ROOT = Path.of(System.getProperty("streamstate.repoRoot"));
  private static final Path DOC = ROOT.resolve("docs/getting-started.md");
  private static final String VERSION = System.getProperty("streamstate.version");
  private static final String DOC_RUNTIME_JAR =
      "streamstate-spark-runtime-4.2_2.13-" + VERSION + ".jar";
  private static final String DOC_EXAMPLES_JAR = "streamstate-examples-" + VERSION + ".jar";
  private static final String DOC_DEMO_DIR = "/tmp/orders-demo";
  private static final String DOC_REPOSITORY = "file://$HOME/.m2/repository";
  private static final String RUNTIME_ARTIFACT = "streamstate-spark-runtime-4.2_2.13";

  /**
   * Our names under a checkpoint's {@code state/} (docs/format.md, "Names"): segment journals and
   * segments, a store's changelogs, snapshot manifests and SSTs, clock probes.
   */
  private static final Pattern OUR_STATE_FILE =
      Pattern.compile(
          "_segments/\\d{20}-[0-9a-f]{16}(\\.journal|(-h)?\\.segment)"
              + "|\\d+/\\d+/([^/]+/)?(changelog/\\d{20}-[0-9a-f]{16}(-h)?\\.changelog"
              + "|snapshot/\\d{20}-[0-9a-f]{16}(-h)?\\.snapshot"
              + "|sst/[0-9a-f]{64}-\\d+(-[0-9a-f]{16}-h)?\\.sst)"
              + "|_clock/\\d{20}-[0-9a-f]{16}");

  /** Spark's own files under {@code state/}, whatever the provider: schemas, operator metadata. */
  private static final Pattern SPARK_STATE_METADATA = Pattern.compile("(.*/)?_metadata/.*");

  @TempDir Path work;

  /** Where the YARN cluster keeps its HDFS and client configuration, for the whole class. */
  @TempDir static Path clusterWork;

  /** Started by the first YARN test, stopped after the last test. */
  private static MiniYarnOnHdfs yarn;

  @AfterAll
  static void stopYarn() {
    if (yarn != null) {
      yarn.close();
    }
  }

  @Test
  void theSparkDefaultsAndTheLocalSubmitLineRunTheDemoAndItsRestartOnOurProvider()
      throws Exception {
    Map<String, String> blocks = blocks();
    Path runtimeJar = runtimeJar();
    Path conf = sparkDefaults(blocks);
    Path demoDir = work.resolve("orders-demo");
    String submit =
        blocks
            .get("submit-local")
            .replace(DOC_RUNTIME_JAR, runtimeJar.toString())
            .replace(DOC_EXAMPLES_JAR, System.getProperty("streamstate.examplesJar"))
            .replace(DOC_DEMO_DIR, demoDir.toString());
    List<String> args = shellWords(submit);
    assertThat(args.get(0)).isEqualTo("$SPARK_HOME/bin/spark-submit");

    assertFreshRunOnOurProvider(run(args.subList(1, args.size()), conf));
    // The same line without --fresh: a restart, every partition loaded from our durable files.
    assertResumedRunOnOurProvider(run(withoutFresh(args.subList(1, args.size())), conf));
  }

  /**
   * The YARN client-mode line on a YARN cluster: the driver in the {@code spark-submit} child, the
   * executor in a YARN container, the checkpoint and the output on HDFS. YARN records the
   * application as succeeded, and the state files in the checkpoint are ours.
   */
  @Test
  @EnabledIfSystemProperty(
      named = "streamstate.suite",
      matches = "extended",
      disabledReason =
          "runs with -Pextended: the cluster-mode test runs the same demo and restart on YARN and"
              + " HDFS, and the client-mode line differs from it only in --deploy-mode")
  void theYarnClientModeLineRunsTheDemoOnYarnWithItsCheckpointOnHdfs() throws Exception {
    List<String> line = yarnLine("submit-yarn-client");
    MiniYarnOnHdfs cluster = yarn();
    assertThat(line).containsSubsequence("--deploy-mode", "client");

    Set<ApplicationId> before = cluster.applicationIds();
    String output = runOnYarn(cluster, line);
    assertSucceeded(cluster, cluster.finishedApplicationSince(before));
    assertFreshRunOnOurProvider(output);
    assertThat(output).containsPattern(onHdfs(line) + "/revenue: \\d+ rows");
    assertStateFilesAreOurs(cluster, line);
  }

  /**
   * The YARN cluster-mode line on a YARN cluster, then the same line without {@code --fresh}: the
   * driver in the application master's container (its output read from the NodeManager's log
   * directory), the executor in another, the checkpoint on HDFS. YARN records both applications as
   * succeeded; the second resumes the first's state from our files on HDFS.
   */
  @Test
  void theYarnClusterModeLineRunsTheDemoAndItsRestartWithTheDriverInAYarnContainer()
      throws Exception {
    List<String> line = yarnLine("submit-yarn-cluster");
    MiniYarnOnHdfs cluster = yarn();
    assertThat(line).containsSubsequence("--deploy-mode", "cluster");

    String first = runDriverOnYarn(cluster, line);
    assertFreshRunOnOurProvider(first);
    assertThat(first).containsPattern(onHdfs(line) + "/revenue: \\d+ rows");
    assertStateFilesAreOurs(cluster, line);

    String second = runDriverOnYarn(cluster, withoutFresh(line));
    assertResumedRunOnOurProvider(second);
    assertStateFilesAreOurs(cluster, line);
  }

  /**
   * The {@code --packages} line, against a Maven-layout repository this test writes the way {@code
   * mvn install} fills {@code ~/.m2/repository}: the runtime jar under its coordinates, its POM
   * (the shade plugin's dependency-reduced one, which names no dependency), the parent POM it
   * names, and the AWS SDK BOM the parent imports (with its own parent). Ivy reads every one of
   * those POMs. The test's Ivy settings name that repository as the only resolver, so that nothing
   * is fetched from the network; Ivy's cache and retrieved jars go to a temporary directory.
   */
  @Test
  void thePackagesLineFetchesOurJarFromAMavenRepositoryAndRunsTheDemoOnOurProvider()
      throws Exception {
    Map<String, String> blocks = blocks();
    Path runtimeJar = runtimeJar();
    Path conf = sparkDefaults(blocks);
    List<String> packagesLine = shellWords(blocks.get("submit-local-packages"));
    List<String> localLine = shellWords(blocks.get("submit-local"));
    String coordinates = "io.streamstate:" + RUNTIME_ARTIFACT + ":" + VERSION;
    assertThat(withoutOption(withoutOption(packagesLine, "--repositories"), "--packages"))
        .as("the --packages line is the local line with --repositories/--packages for --jars")
        .isEqualTo(withoutOption(localLine, "--jars"));
    assertThat(packagesLine).containsSubsequence("--packages", coordinates);
    assertThat(packagesLine).containsSubsequence("--repositories", DOC_REPOSITORY);

    Path repository = mavenRepository(runtimeJar);
    Path ivySettings = work.resolve("ivysettings.xml");
    Files.writeString(
        ivySettings,
        "<ivysettings>\n"
            + "  <settings defaultResolver=\"local-repository\"/>\n"
            + "  <resolvers>\n"
            + "    <ibiblio name=\"local-repository\" m2compatible=\"true\" root=\""
            + repository.toUri()
            + "\"/>\n"
            + "  </resolvers>\n"
            + "</ivysettings>\n");
    Path ivyHome = work.resolve("ivy");
    Path demoDir = work.resolve("orders-demo");
    String submit =
        blocks
            .get("submit-local-packages")
            .replace(DOC_REPOSITORY, repository.toUri().toString())
            .replace(DOC_EXAMPLES_JAR, System.getProperty("streamstate.examplesJar"))
            .replace(DOC_DEMO_DIR, demoDir.toString());
    List<String> words = shellWords(submit);
    List<String> args = new ArrayList<>();
    // Test-only: Ivy resolves offline, from the repository above alone.
    args.addAll(List.of("--conf", "spark.jars.ivySettings=" + ivySettings));
    args.addAll(List.of("--conf", "spark.jars.ivy=" + ivyHome));
    args.addAll(words.subList(1, words.size()));

    String output = run(args, conf);
    assertThat(output)
        .contains(
            "found io.streamstate#" + RUNTIME_ARTIFACT + ";" + VERSION + " in local-repository")
        .doesNotContain("UNRESOLVED DEPENDENCIES")
        .contains("starting with a fresh checkpoint")
        .containsPattern("batch +0: .*state commit \\d+ ms \\(streamstate")
        .contains("loads warm/durable 0/4");
    assertThat(ivyHome.resolve("jars/io.streamstate_" + RUNTIME_ARTIFACT + "-" + VERSION + ".jar"))
        .as("the jar Spark put on the classpath, retrieved by Ivy")
        .hasSameBinaryContentAs(runtimeJar);
  }

  /**
   * The Scala snippet, as written, inside a {@code main} that runs a small stateful query on the
   * session it builds: compiled with the Scala compiler against Spark's classpath and the runtime
   * jar alone, and run in a child JVM of those (plus the compiled class), in local mode. The
   * query's state operator reports our provider's custom metrics, which only our provider has.
   */
  @Test
  void theScalaSnippetCompilesAndItsSessionRunsAStatefulQueryOnOurProvider() throws Exception {
    Map<String, String> blocks = blocks();
    Path runtimeJar = runtimeJar();
    String snippet = blocks.get("scala-session");
    String program =
        "object GettingStartedScalaSnippet {\n"
            + "  def main(args: Array[String]): Unit = {\n"
            + snippet
            + "\n"
            + "    val counts = spark.readStream.text(args(0)).groupBy(\"value\").count()\n"
            + "    val query = counts.writeStream\n"
            + "      .outputMode(\"complete\")\n"
            + "      .format(\"memory\")\n"
            + "      .queryName(\"counts\")\n"
            + "      .option(\"checkpointLocation\", args(1))\n"
            + "      .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())\n"
            + "      .start()\n"
            + "    query.awaitTermination()\n"
            + "    val metrics = query.lastProgress.stateOperators(0).customMetrics\n"
            + "    println(\"state metrics: \" + new java.util.TreeMap[String, java.lang.Long](metrics))\n"
            + "    spark.table(\"counts\").collect().map(r => r.getString(0) + \"=\" + r.getLong(1))\n"
            + "      .sorted.foreach(c => println(\"count \" + c))\n"
            + "    spark.stop()\n"
            + "  }\n"
            + "}\n";
    Path source = work.resolve("GettingStartedScalaSnippet.scala");
    Files.writeString(source, program);
    Path classes = Files.createDirectories(work.resolve("classes"));
    String classpath = sparkClasspath() + File.pathSeparator + runtimeJar;
    boolean compiled =
        scala.tools.nsc.Main.process(
            new String[] {
              "-classpath", classpath, "-d", classes.toString(), "-deprecation", source.toString()
            });
    assertThat(compiled).as("scalac compiled the snippet in:%n%s", program).isTrue();

    Path input = Files.createDirectories(work.resolve("input"));
    Files.writeString(input.resolve("part-0.txt"), "apple\npear\napple\n");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(shellWords(System.getProperty("streamstate.sparkJvmFlags")));
    command.add("-Xmx1g");
    // The snippet names no master: a user's spark-submit or spark-shell gives it; here, local mode.
    command.add("-Dspark.master=local[2]");
    command.add("-Dspark.ui.enabled=false");
    command.add("-Dspark.driver.host=127.0.0.1");
    command.add("-Dspark.driver.bindAddress=127.0.0.1");
    command.add("-Dspark.sql.shuffle.partitions=2");
    command.add("-cp");
    command.add(classes + File.pathSeparator + classpath);
    command.add("GettingStartedScalaSnippet");
    command.add(input.toString());
    command.add(work.resolve("checkpoint").toString());
    String output = runChild(command, Map.of());
    assertThat(output)
        .containsPattern("state metrics: \\{.*streamstateCommitLatencyMs=")
        .contains("count apple=2")
        .contains("count pear=1");
  }

  @Test
  void eachClusterLineIsTheLocalLineWithOnlyClusterOptionsChanged() throws IOException {
    Map<String, String> blocks = blocks();
    List<String> local = withoutClusterOptions(shellWords(blocks.get("submit-local")));
    List<String> clusterLines =
        List.of(
            "submit-yarn-client", "submit-yarn-cluster", "submit-k8s-client", "submit-k8s-cluster");
    for (String name : clusterLines) {
      assertThat(blocks).containsKey(name);
      List<String> cluster = withoutClusterOptions(shellWords(blocks.get(name)));
      assertThat(cluster).as(name).isEqualTo(local);
    }
    assertThat(blocks.get("submit-yarn-cluster")).contains("--deploy-mode cluster");
    assertThat(blocks.get("submit-k8s-client")).contains("--deploy-mode client");
  }

  @Test
  void everyMessageQuotedAsOursIsPrintedByOurCode() throws IOException {
    String doc = Files.readString(DOC);
    String sources = ourMainSources();
    List<String> ours = new ArrayList<>();
    Matcher row = Pattern.compile("(?m)^\\| `([^`]+)`[^|]*\\| ours[^|]*\\|").matcher(doc);
    while (row.find()) {
      ours.add(row.group(1));
    }
    assertThat(ours).as("troubleshooting rows quoting our messages").hasSizeGreaterThan(4);
    for (String message : ours) {
      assertThat(sources).as("our code prints \"%s\"", message).contains(message);
    }
  }

  /** The runtime jar of Spark 4.2, which the doc names; the test is skipped on other lines. */
  private static Path runtimeJar() {
    String line = System.getProperty("streamstate.lineArtifact");
    assumeThat(line)
        .as("the documented jar is Spark 4.2's; this build is for another line")
        .isEqualTo("streamstate-spark-4.2_2.13");
    Path runtimeJar =
        ROOT.resolve("spark-runtime-4.2/target/" + RUNTIME_ARTIFACT + "-" + VERSION + ".jar");
    assertThat(runtimeJar)
        .as("the runtime jar (the full build makes it before this module)")
        .exists();
    return runtimeJar;
  }

  /** The YARN cluster of this class, started on first use. */
  private static synchronized MiniYarnOnHdfs yarn() throws Exception {
    if (yarn == null) {
      yarn = MiniYarnOnHdfs.start(clusterWork, GettingStartedIT.class.getSimpleName());
    }
    return yarn;
  }

  /**
   * The doc's YARN line {@code name} without its first word ({@code spark-submit}), the built jars'
   * paths for their names; its {@code hdfs:///} directory as written.
   */
  private List<String> yarnLine(String name) throws IOException {
    String line =
        blocks()
            .get(name)
            .replace(DOC_RUNTIME_JAR, runtimeJar().toString())
            .replace(DOC_EXAMPLES_JAR, System.getProperty("streamstate.examplesJar"));
    List<String> words = shellWords(line);
    assertThat(words.get(0)).isEqualTo("$SPARK_HOME/bin/spark-submit");
    assertThat(demoDir(words)).startsWith("hdfs:///");
    return words.subList(1, words.size());
  }

  /** The demo's directory in a submit line's words ({@code <dir> <batches> <seconds>} end it). */
  private static String demoDir(List<String> words) {
    return words.get(words.size() - 3);
  }

  /** A pattern for the demo's directory of {@code line} qualified on HDFS. */
  private static String onHdfs(List<String> line) {
    return "hdfs://[^/\\s]+" + Pattern.quote(URI.create(demoDir(line)).getPath());
  }

  /** {@code args} without {@code --fresh}: the same run, resuming its checkpoint. */
  private static List<String> withoutFresh(List<String> args) {
    List<String> resume = new ArrayList<>(args);
    assertThat(resume.remove("--fresh")).as("--fresh in %s", args).isTrue();
    return resume;
  }

  /**
   * Runs {@code line} through {@code SparkSubmit} against {@code cluster}: {@code HADOOP_CONF_DIR}
   * set (and on the classpath, as {@code bin/spark-class} puts it), spark-yarn on the classpath as
   * in a Spark distribution, and the test-only settings of the class comment. Its output.
   */
  private String runOnYarn(MiniYarnOnHdfs cluster, List<String> line) throws Exception {
    List<String> args = new ArrayList<>();
    args.addAll(List.of("--conf", "spark.yarn.jars=" + sparkJarsOnEveryNode()));
    args.addAll(List.of("--conf", "spark.executor.instances=1"));
    // The driver (cluster mode) and the executors, whose environment comes from the application
    // master's, on loopback as the rest.
    args.addAll(List.of("--conf", "spark.yarn.appMasterEnv.SPARK_LOCAL_IP=127.0.0.1"));
    args.addAll(line);
    String hadoopConfDir = cluster.hadoopConfDir().toString();
    return run(
        args,
        sparkDefaults(blocks()),
        List.of(sparkYarnClasspath(), hadoopConfDir),
        Map.of("HADOOP_CONF_DIR", hadoopConfDir));
  }

  /**
   * Runs a cluster-mode {@code line} on {@code cluster} (see {@link #runOnYarn}); YARN records its
   * application as succeeded. The driver's output, which in cluster mode is the application master
   * container's.
   */
  private String runDriverOnYarn(MiniYarnOnHdfs cluster, List<String> line) throws Exception {
    Set<ApplicationId> before = cluster.applicationIds();
    runOnYarn(cluster, line);
    ApplicationReport app = cluster.finishedApplicationSince(before);
    assertSucceeded(cluster, app);
    String driver = cluster.applicationMasterStdout(app);
    System.out.println(driver);
    return driver;
  }

  private static void assertSucceeded(MiniYarnOnHdfs cluster, ApplicationReport app)
      throws IOException {
    assertThat(app.getFinalApplicationStatus())
        .as(
            "YARN's final status of %s (%s); its containers' logs:%n%s",
            app.getApplicationId(), app.getDiagnostics(), cluster.containerLogs(app))
        .isEqualTo(FinalApplicationStatus.SUCCEEDED);
  }

  /** What the demo prints on a fresh run with our provider. */
  private static void assertFreshRunOnOurProvider(String output) {
    assertThat(output)
        .contains("starting with a fresh checkpoint")
        .containsPattern("batch +0: .*state commit \\d+ ms \\(streamstate")
        .contains("loads warm/durable 0/4")
        .containsPattern("Parquet at .*: \\d+ rows");
    assertWholeShopMinutes(output);
  }

  /** What the demo prints when it resumes its checkpoint: every partition from our files. */
  private static void assertResumedRunOnOurProvider(String output) {
    assertThat(output)
        .containsPattern("resuming from checkpoint at batch \\d+")
        .contains("loads warm/durable 0/4");
    assertWholeShopMinutes(output);
  }

  /**
   * The demo's output holds whole shop-minutes: 160 orders in each row (800 orders a minute, 5
   * shops), the windows that span a restart too, whose first orders came back from our files.
   */
  private static void assertWholeShopMinutes(String output) {
    Matcher totals =
        Pattern.compile("Parquet at \\S+: (\\d+) rows \\(closed shop-minutes\\), (\\d+) orders")
            .matcher(output);
    assertThat(totals.find()).as("the demo's Parquet totals in:%n%s", output).isTrue();
    assertThat(Long.parseLong(totals.group(2)))
        .as(totals.group())
        .isEqualTo(160 * Long.parseLong(totals.group(1)));
  }

  /**
   * The demo's state in its checkpoint on HDFS is ours: every file under {@code state/} but Spark's
   * metadata has one of our names (none of Spark's providers' {@code 1.delta}, {@code 1.changelog},
   * {@code 1.zip}), the commits are there, and each file is ours by its magic (docs/format.md: a
   * segment journal begins with "SSJL", every other file is framed by "SSTF" and "FTSS").
   */
  private static void assertStateFilesAreOurs(MiniYarnOnHdfs cluster, List<String> line)
      throws IOException {
    FileSystem fs = cluster.fileSystem();
    org.apache.hadoop.fs.Path state =
        new org.apache.hadoop.fs.Path(URI.create(demoDir(line)).getPath() + "/checkpoint/state");
    List<String> names = new ArrayList<>();
    for (RemoteIterator<LocatedFileStatus> it = fs.listFiles(state, true); it.hasNext(); ) {
      String path = it.next().getPath().toUri().getPath();
      names.add(path.substring(state.toUri().getPath().length() + 1));
    }
    List<String> ours =
        names.stream().filter(n -> !SPARK_STATE_METADATA.matcher(n).matches()).sorted().toList();
    assertThat(ours)
        .as("the files under %s but Spark's metadata: %s", state, names)
        .allMatch(n -> OUR_STATE_FILE.matcher(n).matches())
        .anyMatch(n -> n.matches(".*\\.(journal|segment|changelog)"));
    for (String name : ours) {
      if (name.startsWith("_clock/")) {
        continue; // empty
      }
      byte[] bytes = readAll(fs, new org.apache.hadoop.fs.Path(state, name));
      String first = new String(bytes, 0, 4, StandardCharsets.US_ASCII);
      if (name.endsWith(".journal")) {
        assertThat(first).as(name).isEqualTo("SSJL");
      } else {
        String last = new String(bytes, bytes.length - 4, 4, StandardCharsets.US_ASCII);
        assertThat(first + last).as(name).isEqualTo("SSTFFTSS");
      }
    }
  }

  private static byte[] readAll(FileSystem fs, org.apache.hadoop.fs.Path file) throws IOException {
    try (InputStream in = fs.open(file)) {
      return in.readAllBytes();
    }
  }

  /** Spark's classpath file, as the build wrote it (what a Spark distribution's jars are). */
  private static String sparkClasspath() throws IOException {
    return Files.readString(Path.of(System.getProperty("streamstate.sparkClasspathFile"))).trim();
  }

  /** spark-yarn and what it adds to Spark's classpath (a distribution built with YARN has it). */
  private static String sparkYarnClasspath() throws IOException {
    return Files.readString(Path.of(System.getProperty("streamstate.sparkYarnClasspathFile")))
        .trim();
  }

  /**
   * Every jar of {@link #sparkClasspath} and {@link #sparkYarnClasspath} as a {@code local:} URI,
   * for {@code spark.yarn.jars}: the containers put them on their classpath where they are, every
   * node being this host.
   */
  private static String sparkJarsOnEveryNode() throws IOException {
    return Stream.of(sparkClasspath(), sparkYarnClasspath())
        .flatMap(cp -> Stream.of(cp.split(File.pathSeparator)))
        .map(jar -> "local:" + jar)
        .collect(Collectors.joining(","));
  }

  /** A Spark conf directory holding the doc's {@code spark-defaults.conf} lines. */
  private Path sparkDefaults(Map<String, String> blocks) throws IOException {
    Path conf = Files.createDirectories(work.resolve("conf"));
    Files.writeString(conf.resolve("spark-defaults.conf"), blocks.get("spark-defaults"));
    return conf;
  }

  /**
   * A Maven-layout repository holding what {@code mvn install -pl spark-runtime-4.2 -am} leaves in
   * the local repository for the runtime jar's coordinates, and the POMs its POM brings in.
   */
  private Path mavenRepository(Path runtimeJar) throws IOException {
    Path repository = work.resolve("repository");
    Path runtimeDir = repository.resolve("io/streamstate/" + RUNTIME_ARTIFACT + "/" + VERSION);
    Files.createDirectories(runtimeDir);
    String base = RUNTIME_ARTIFACT + "-" + VERSION;
    Files.copy(runtimeJar, runtimeDir.resolve(base + ".jar"));
    Path reducedPom = ROOT.resolve("spark-runtime-4.2/target/dependency-reduced-pom.xml");
    String pom = Files.readString(reducedPom);
    assertThat(pom)
        .as("the runtime jar's POM names no dependency: everything of ours is inside")
        .doesNotContain("<dependency>")
        .contains("<artifactId>streamstate-parent</artifactId>");
    Files.writeString(runtimeDir.resolve(base + ".pom"), pom);
    Path parentDir = repository.resolve("io/streamstate/streamstate-parent/" + VERSION);
    Files.createDirectories(parentDir);
    Files.copy(
        ROOT.resolve("pom.xml"), parentDir.resolve("streamstate-parent-" + VERSION + ".pom"));
    // The parent imports the AWS SDK BOM: Maven downloaded it (and its parent) when it built us.
    Path localRepository = Path.of(System.getProperty("streamstate.localRepository"));
    String aws = System.getProperty("streamstate.awsSdkVersion");
    for (String artifact : List.of("bom", "aws-sdk-java-pom")) {
      Path dir = Path.of("software/amazon/awssdk", artifact, aws);
      Path pomFile = dir.resolve(artifact + "-" + aws + ".pom");
      Files.createDirectories(repository.resolve(dir));
      Files.copy(
          localRepository.resolve(pomFile.toString()), repository.resolve(pomFile.toString()));
    }
    return repository;
  }

  /** {@code words} without {@code option} and its value. */
  private static List<String> withoutOption(List<String> words, String option) {
    List<String> kept = new ArrayList<>(words);
    int at = kept.indexOf(option);
    assertThat(at).as("%s in %s", option, words).isNotNegative();
    kept.subList(at, at + 2).clear();
    return kept;
  }

  /**
   * The cluster-specific parts of a line replaced by placeholders: {@code --master} and {@code
   * --deploy-mode} values and {@code spark.kubernetes.*}/{@code spark.executor.*} settings dropped,
   * jar locations reduced to their file names, the demo's directory argument to "DIR".
   */
  private static List<String> withoutClusterOptions(List<String> words) {
    List<String> kept = new ArrayList<>();
    for (int i = 0; i < words.size(); i++) {
      String w = words.get(i);
      if (w.equals("--master") || w.equals("--deploy-mode")) {
        i++;
        continue;
      }
      if (w.equals("--conf")
          && (words.get(i + 1).startsWith("spark.kubernetes.")
              || words.get(i + 1).startsWith("spark.executor."))) {
        i++;
        continue;
      }
      if (w.endsWith(".jar")) {
        kept.add(w.substring(w.lastIndexOf('/') + 1));
      } else if (i == words.size() - 3) {
        kept.add("DIR"); // <dir> <batches> <seconds> end the line
      } else {
        kept.add(w);
      }
    }
    return kept;
  }

  /** Runs {@code SparkSubmit} with {@code args} in a child JVM of Spark's classpath alone. */
  private String run(List<String> args, Path confDir) throws Exception {
    return run(args, confDir, List.of(), Map.of());
  }

  /**
   * Runs {@code SparkSubmit} with {@code args} in a child JVM of Spark's classpath followed by
   * {@code moreClasspath}, with {@code environment} added to its own.
   */
  private String run(
      List<String> args, Path confDir, List<String> moreClasspath, Map<String, String> environment)
      throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(shellWords(System.getProperty("streamstate.sparkJvmFlags")));
    command.add("-Xmx1536m");
    command.add("-cp");
    List<String> classpath = new ArrayList<>();
    classpath.add(sparkClasspath());
    classpath.addAll(moreClasspath);
    command.add(String.join(File.pathSeparator, classpath));
    command.add("org.apache.spark.deploy.SparkSubmit");
    // Test-only additions (see the class comment), before the application's jar.
    command.addAll(List.of("--conf", "spark.ui.enabled=false"));
    command.addAll(List.of("--conf", "spark.driver.host=127.0.0.1"));
    command.addAll(List.of("--conf", "spark.driver.bindAddress=127.0.0.1"));
    command.addAll(args);
    Map<String, String> childEnvironment = new HashMap<>(environment);
    childEnvironment.put("SPARK_CONF_DIR", confDir.toString());
    return runChild(command, childEnvironment);
  }

  /** Runs {@code command} with {@code environment} added, Spark's on loopback; its output. */
  private String runChild(List<String> command, Map<String, String> environment) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    pb.environment().remove("SPARK_HOME");
    pb.environment().remove("SPARK_CONF_DIR");
    pb.environment().putAll(environment);
    Path log = Files.createTempFile(work, "spark", ".log");
    pb.redirectOutput(log.toFile());
    Process process = pb.start();
    boolean ended = process.waitFor(5, TimeUnit.MINUTES);
    if (!ended) {
      process.destroyForcibly();
    }
    String output = Files.readString(log, StandardCharsets.UTF_8);
    System.out.println(output);
    assertThat(ended).as("the child JVM ended within 5 minutes").isTrue();
    assertThat(process.exitValue()).as("the child JVM's exit code; output:%n%s", output).isZero();
    return output;
  }

  /** The fenced blocks the doc marks as run or checked by this test, by name. */
  private static Map<String, String> blocks() throws IOException {
    String doc = Files.readString(DOC);
    assertThat(doc).as("the doc names the current version").contains(VERSION);
    Map<String, String> blocks = new LinkedHashMap<>();
    Matcher m =
        Pattern.compile(
                "<!-- (?:run|checked) by GettingStartedIT: ([a-z0-9-]+) -->\\n```[a-z]*\\n(.*?)```",
                Pattern.DOTALL)
            .matcher(doc);
    while (m.find()) {
      blocks.put(m.group(1), m.group(2));
    }
    assertThat(blocks)
        .containsKeys(
            "spark-defaults",
            "submit-local",
            "submit-local-packages",
            "scala-session",
            "submit-yarn-client",
            "submit-yarn-cluster",
            "submit-k8s-client",
            "submit-k8s-cluster");
    return blocks;
  }

  /** A shell line's words: backslash-newline joins lines, single quotes group (no expansion). */
  static List<String> shellWords(String text) {
    String joined = text.replace("\\\n", " ");
    List<String> words = new ArrayList<>();
    StringBuilder word = new StringBuilder();
    boolean quoted = false;
    boolean inWord = false;
    for (char c : joined.toCharArray()) {
      if (c == '\'') {
        quoted = !quoted;
        inWord = true;
      } else if (Character.isWhitespace(c) && !quoted) {
        if (inWord) {
          words.add(word.toString());
          word.setLength(0);
          inWord = false;
        }
      } else {
        word.append(c);
        inWord = true;
      }
    }
    if (inWord) {
      words.add(word.toString());
    }
    return words;
  }

  /** Every main source file of ours, concatenated (the messages we print are in them). */
  private static String ourMainSources() throws IOException {
    StringBuilder all = new StringBuilder();
    List<Path> mainSources;
    try (Stream<Path> modules = Files.list(ROOT)) {
      mainSources = modules.map(m -> m.resolve("src/main")).filter(Files::isDirectory).toList();
    }
    for (Path dir : mainSources) {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          // Messages are built from string pieces across lines: join them as the JVM would.
          all.append(Files.readString(f).replaceAll("\"\\s*\\n?\\s*\\+\\s*\"", ""));
        }
      }
    }
    return all.toString();
  }
}
