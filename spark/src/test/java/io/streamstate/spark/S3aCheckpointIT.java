package io.streamstate.spark;

import io.streamstate.hadoop.S3ProxyFixture;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link RenameFreeCheckpointFileManager} and a query checkpointing on S3A against an in-process
 * S3Proxy (one per class): see {@link RemoteCheckpointTests}.
 */
class S3aCheckpointIT extends RemoteCheckpointTests {
  static final java.nio.file.Path work = TestSessions.newWorkDir(S3aCheckpointIT.class);
  private static S3ProxyFixture s3;
  private static SparkSession spark;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3ProxyFixture.start();
    Map<String, String> extra = new HashMap<>();
    clientSettings().forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = TestSessions.start("S3aCheckpointIT", work, extra);
  }

  @AfterAll
  static void stop() throws Exception {
    if (spark != null) {
      spark.stop();
    }
    if (s3 != null) {
      s3.close();
    }
  }

  /** The settings that reach S3Proxy with Hadoop's shared clients, and count every request. */
  private static Map<String, String> clientSettings() {
    Map<String, String> settings = new HashMap<>(s3.sharedClientSettings());
    settings.put(
        RequestCounts.S3A_INTERCEPTORS_KEY, RequestCounts.S3RequestCounter.class.getName());
    return settings;
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
    return S3ProxyFixture.path("checkpoints/" + name).toString();
  }

  @Override
  protected RequestCounts.Source requests() {
    return RequestCounts.s3();
  }

  @Override
  protected String renameKind() {
    return "copy";
  }

  @Override
  protected Path newRoot(String testName) {
    return S3ProxyFixture.path("cfm/" + testName);
  }

  @Override
  protected Configuration conf() {
    Configuration conf = new Configuration();
    clientSettings().forEach(conf::set);
    return conf;
  }

  @Override
  protected Configuration independentClientConf() {
    Configuration conf = conf();
    conf.setBoolean("fs.s3a.impl.disable.cache", true);
    return conf;
  }

  @Override
  protected String storeName() {
    return "S3 (S3A over S3Proxy)";
  }

  @Override
  protected boolean crashesLeaveTornEntries() {
    return false; // an object store publishes an entry whole at close
  }
}
