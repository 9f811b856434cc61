package io.streamstate.spark;

import io.streamstate.hadoop.MiniDfsFixture;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link RenameFreeCheckpointFileManager} and a query checkpointing on HDFS (one in-process
 * MiniDFSCluster for the class): see {@link RemoteCheckpointTests}.
 */
class HdfsCheckpointIT extends RemoteCheckpointTests {
  static final java.nio.file.Path work = TestSessions.newWorkDir(HdfsCheckpointIT.class);
  private static MiniDfsFixture dfs;
  private static SparkSession spark;

  /** Client settings for a one-DataNode cluster (see MiniDfsFixture). */
  private static final Map<String, String> CLIENT_SETTINGS =
      Map.of(
          "dfs.replication", "1",
          "dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    Map<String, String> extra = new java.util.HashMap<>();
    CLIENT_SETTINGS.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = TestSessions.start("HdfsCheckpointIT", work, extra);
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

  @Override
  protected SparkSession spark() {
    return spark;
  }

  @Override
  protected java.nio.file.Path localWork() {
    return work;
  }

  @Override
  protected String checkpointUri(String name) {
    return dfs.path("/checkpoints/" + name).toString();
  }

  @Override
  protected RequestCounts.Source requests() {
    return RequestCounts.hdfs(dfs.cluster());
  }

  @Override
  protected String renameKind() {
    return "rename";
  }

  @Override
  protected Path newRoot(String testName) {
    return dfs.path("/cfm/" + testName);
  }

  @Override
  protected Configuration conf() {
    Configuration conf = new Configuration();
    CLIENT_SETTINGS.forEach(conf::set);
    return conf;
  }

  @Override
  protected Configuration independentClientConf() {
    Configuration conf = conf();
    conf.setBoolean("fs.hdfs.impl.disable.cache", true);
    return conf;
  }

  @Override
  protected String storeName() {
    return "HDFS";
  }
}
