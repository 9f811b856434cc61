package io.streamstate.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.hadoop.MiniDfsFixture;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A small YARN cluster in this JVM, set up as Spark's own YARN tests set theirs up ({@code
 * BaseYarnClusterSuite}): a MiniYARNCluster of one ResourceManager and one NodeManager, whose
 * containers are child JVMs, and a MiniDFSCluster of one DataNode ({@link MiniDfsFixture}) as the
 * default file system. {@link #hadoopConfDir()} holds the {@code core-site.xml} and {@code
 * yarn-site.xml} a client of this cluster needs, for a {@code spark-submit} child's {@code
 * HADOOP_CONF_DIR}.
 *
 * <p>Every daemon runs on this host under the name MiniYARNCluster gives it ({@code
 * InetAddress.getLocalHost()}). The containers run the JVM of the NodeManager's {@code JAVA_HOME}
 * (this JVM's environment; the build sets it).
 */
final class MiniYarnOnHdfs implements AutoCloseable {
  /**
   * The NodeManager's memory: one container for the application master (in cluster mode the driver:
   * 1 GiB heap and Spark's 384 MiB overhead) and one for an executor (1 GiB heap and the doc's
   * {@code spark.executor.memoryOverhead=1g}), in 256 MiB steps. YARN only accounts for it (the
   * mini cluster checks no container's memory).
   */
  private static final int NODE_MEMORY_MB = 4096;

  private final MiniDfsFixture dfs;
  private final MiniYARNCluster yarn;
  private final YarnClient client;
  private final Path hadoopConfDir;

  private MiniYarnOnHdfs(
      MiniDfsFixture dfs, MiniYARNCluster yarn, YarnClient client, Path hadoopConfDir) {
    this.dfs = dfs;
    this.yarn = yarn;
    this.client = client;
    this.hadoopConfDir = hadoopConfDir;
  }

  /**
   * Starts HDFS (under {@code baseDir}) and YARN (a MiniYARNCluster named {@code name}, which keeps
   * its NodeManager's local and log directories, the containers' output among them, under {@code
   * target/}), and writes the client configuration under {@code baseDir}.
   */
  static MiniYarnOnHdfs start(Path baseDir, String name) throws Exception {
    MiniDfsFixture dfs = MiniDfsFixture.start(baseDir.resolve("dfs"));
    MiniYARNCluster yarn = null;
    YarnClient client = null;
    try {
      yarn = new MiniYARNCluster(name, 1, 1, 1);
      yarn.init(yarnSite());
      yarn.start();
      // start() may return before the ResourceManager has put its bound port in the
      // configuration (as BaseYarnClusterSuite notes).
      Configuration conf = yarn.getConfig();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> !conf.get(YarnConfiguration.RM_ADDRESS).endsWith(":0"));
      assertThat(yarn.waitForNodeManagersToConnect(30_000))
          .as("the NodeManager registered")
          .isTrue();
      client = YarnClient.createYarnClient();
      client.init(new YarnConfiguration(conf));
      client.start();
      Path confDir = Files.createDirectories(baseDir.resolve("hadoop-conf"));
      writeXml(confDir.resolve("core-site.xml"), coreSite(dfs));
      writeXml(confDir.resolve("yarn-site.xml"), clientYarnSite(conf));
      return new MiniYarnOnHdfs(dfs, yarn, client, confDir);
    } catch (Exception | Error e) {
      if (client != null) {
        client.stop();
      }
      if (yarn != null) {
        yarn.stop();
      }
      dfs.close();
      throw e;
    }
  }

  /** The cluster's own configuration: small, on this host, none of its checks of the machine. */
  private static YarnConfiguration yarnSite() {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.setInt("yarn.minicluster." + YarnConfiguration.NM_PMEM_MB, NODE_MEMORY_MB);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
    // A nearly full disk must not mark the node unhealthy (it would get no container).
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    // hadoop-client-minicluster has no capacity-scheduler.xml: its one queue, written out.
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.setInt("yarn.scheduler.capacity.root.default.capacity", 100);
    conf.setFloat("yarn.scheduler.capacity.root.default.user-limit-factor", 1);
    conf.setInt("yarn.scheduler.capacity.root.default.maximum-capacity", 100);
    conf.set("yarn.scheduler.capacity.root.default.state", "RUNNING");
    conf.set("yarn.scheduler.capacity.root.default.acl_submit_applications", "*");
    conf.set("yarn.scheduler.capacity.root.default.acl_administer_queue", "*");
    conf.setInt("yarn.scheduler.capacity.node-locality-delay", -1);
    // Stopping the NodeManager waits this long (plus 1.25 s) for the containers it kills: a
    // client-mode application master outlives its application by a moment.
    conf.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 1000);
    return conf;
  }

  /** The default file system (this HDFS) and its client settings for one DataNode. */
  private static Configuration coreSite(MiniDfsFixture dfs) {
    Configuration site = new Configuration(false);
    site.set("fs.defaultFS", dfs.fileSystem().getUri().toString());
    site.set("dfs.replication", "1");
    site.set("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");
    return site;
  }

  /** The ResourceManager's addresses, as bound, for clients and application masters. */
  private static Configuration clientYarnSite(Configuration cluster) {
    Configuration site = new Configuration(false);
    for (String key :
        List.of(
            YarnConfiguration.RM_HOSTNAME,
            YarnConfiguration.RM_ADDRESS,
            YarnConfiguration.RM_SCHEDULER_ADDRESS,
            YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
            YarnConfiguration.RM_ADMIN_ADDRESS,
            YarnConfiguration.RM_WEBAPP_ADDRESS)) {
      site.set(key, cluster.get(key));
    }
    return site;
  }

  private static void writeXml(Path file, Configuration site) throws IOException {
    try (OutputStream out = Files.newOutputStream(file)) {
      site.writeXml(out);
    }
  }

  /** {@code core-site.xml} and {@code yarn-site.xml} for a client of this cluster. */
  Path hadoopConfDir() {
    return hadoopConfDir;
  }

  /** A client of the cluster's HDFS (closed with the cluster). */
  FileSystem fileSystem() {
    return dfs.fileSystem();
  }

  /** The ids of every application the ResourceManager knows. */
  Set<ApplicationId> applicationIds() throws IOException, YarnException {
    return client.getApplications().stream()
        .map(ApplicationReport::getApplicationId)
        .collect(Collectors.toSet());
  }

  /**
   * The one application submitted since {@code before} was taken, once YARN has recorded its end (a
   * client-mode driver's exit precedes its application master's by a moment).
   */
  ApplicationReport finishedApplicationSince(Set<ApplicationId> before) throws Exception {
    List<ApplicationId> added =
        applicationIds().stream().filter(id -> !before.contains(id)).toList();
    assertThat(added).as("applications submitted").hasSize(1);
    ApplicationId id = added.get(0);
    await()
        .atMost(Duration.ofMinutes(1))
        .until(
            () ->
                Set.of(
                        YarnApplicationState.FINISHED,
                        YarnApplicationState.FAILED,
                        YarnApplicationState.KILLED)
                    .contains(client.getApplicationReport(id).getYarnApplicationState()));
    return client.getApplicationReport(id);
  }

  /**
   * What the application master's container printed on stdout (in cluster mode, the driver's
   * output), from the NodeManager's log directory.
   */
  String applicationMasterStdout(ApplicationReport app) throws Exception {
    ContainerId am =
        client.getApplicationAttemptReport(app.getCurrentApplicationAttemptId()).getAMContainerId();
    return Files.readString(logDir(app).resolve(am.toString()).resolve("stdout"));
  }

  /** The output of every container of {@code app}, for a failure's message. */
  String containerLogs(ApplicationReport app) throws IOException {
    Path appDir = logDir(app);
    if (!Files.isDirectory(appDir)) {
      return "(no container logs at " + appDir + ")";
    }
    Set<String> outputs = Set.of("prelaunch.err", "stdout", "stderr");
    StringBuilder all = new StringBuilder();
    try (Stream<Path> files = Files.walk(appDir)) {
      for (Path f :
          files.filter(f -> outputs.contains(f.getFileName().toString())).sorted().toList()) {
        all.append("==> ").append(appDir.relativize(f)).append(" <==\n");
        all.append(Files.readString(f, StandardCharsets.UTF_8)).append('\n');
      }
    }
    return all.toString();
  }

  /** Where the NodeManager keeps the logs of {@code app}'s containers (no log aggregation). */
  private Path logDir(ApplicationReport app) {
    String dirs = yarn.getNodeManager(0).getConfig().get(YarnConfiguration.NM_LOG_DIRS);
    return Path.of(dirs.split(",")[0]).resolve(app.getApplicationId().toString());
  }

  @Override
  public void close() {
    try {
      client.stop();
      yarn.stop();
    } finally {
      dfs.close();
    }
  }
}
