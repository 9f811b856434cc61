package io.streamstate.dstream.wal;

import io.streamstate.core.hedge.HedgePolicy;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;

/**
 * The write-ahead log's settings, read from the {@link SparkConf} Spark gives it (the only thing
 * Spark passes a custom {@code WriteAheadLog}): the one place its keys, defaults and parsing live.
 *
 * @param root where the log keeps its files ({@value #DIR}); required
 * @param rollIntervalMillis a journal takes records of times within this span of its first record's
 *     (Spark's own key: {@code spark.streaming.driver|receiver.writeAheadLog .rollingIntervalSecs},
 *     default 60 s); {@code clean} deletes whole files, so this is also the granularity of cleaning
 * @param maxJournalBytes a journal rolls past this size ({@value #MAX_JOURNAL_BYTES})
 * @param hedge the hedging of late appends and creates ({@value #HEDGE_ENABLED}, {@value
 *     #HEDGE_FLOOR_MS}, {@value #HEDGE_INITIAL_DEADLINE_MS})
 * @param hadoopConf the Hadoop configuration: the cluster's defaults and every {@code
 *     spark.hadoop.*} key, as Spark builds it
 */
public record WalSettings(
    URI root,
    long rollIntervalMillis,
    long maxJournalBytes,
    HedgePolicy hedge,
    Configuration hadoopConf) {

  /** Where the log's files go: {@code file://}, {@code hdfs://} or {@code s3a://}. Required. */
  public static final String DIR = "spark.streaming.streamstate.writeAheadLog.dir";

  /** A journal is rolled past this many bytes (default 128 MiB). */
  public static final String MAX_JOURNAL_BYTES =
      "spark.streaming.streamstate.writeAheadLog.maxJournalBytes";

  /** Hedge late appends and creates (default true). */
  public static final String HEDGE_ENABLED =
      "spark.streaming.streamstate.writeAheadLog.hedge.enabled";

  /** The lowest hedge deadline, ms (default 20). */
  public static final String HEDGE_FLOOR_MS =
      "spark.streaming.streamstate.writeAheadLog.hedge.floorMs";

  /** The hedge deadline before enough writes were timed, ms (default 200). */
  public static final String HEDGE_INITIAL_DEADLINE_MS =
      "spark.streaming.streamstate.writeAheadLog.hedge.initialDeadlineMs";

  /** The settings of the log of {@code role} ("driver" or "receiver"). */
  public static WalSettings from(SparkConf conf, String role) {
    if (!conf.contains(DIR)) {
      throw new IllegalArgumentException(
          "The streamstate write-ahead log needs "
              + DIR
              + " (where its files go, e.g. hdfs:///checkpoints/app/wal or"
              + " s3a://bucket/app/wal): Spark passes a custom write-ahead log only its"
              + " configuration, not the checkpoint directory.");
    }
    URI root = URI.create(conf.get(DIR).endsWith("/") ? conf.get(DIR) : conf.get(DIR) + "/");
    long rollSecs =
        conf.getLong("spark.streaming." + role + ".writeAheadLog.rollingIntervalSecs", 60);
    if (rollSecs <= 0) {
      throw new IllegalArgumentException(
          "spark.streaming."
              + role
              + ".writeAheadLog.rollingIntervalSecs must be > 0: "
              + rollSecs);
    }
    long maxBytes = conf.getSizeAsBytes(MAX_JOURNAL_BYTES, "128m");
    boolean hedgeEnabled = conf.getBoolean(HEDGE_ENABLED, true);
    HedgePolicy.Builder hedge =
        HedgePolicy.builder()
            .floor(Duration.ofMillis(conf.getLong(HEDGE_FLOOR_MS, 20)))
            .initialDeadline(Duration.ofMillis(conf.getLong(HEDGE_INITIAL_DEADLINE_MS, 200)));
    if (!hedgeEnabled) {
      hedge.disable();
    }
    return new WalSettings(
        root, rollSecs * 1000, maxBytes, hedge.build(), hadoopConfiguration(conf));
  }

  /** Spark's own rule: the Hadoop defaults, then every {@code spark.hadoop.*} key. */
  static Configuration hadoopConfiguration(SparkConf conf) {
    Configuration hadoop = new Configuration();
    for (scala.Tuple2<String, String> kv : conf.getAll()) {
      if (kv._1().startsWith("spark.hadoop.")) {
        hadoop.set(kv._1().substring("spark.hadoop.".length()), kv._2());
      }
    }
    return hadoop;
  }

  /** For tests: settings at {@code root} with a Hadoop configuration holding {@code hadoop}. */
  static WalSettings of(
      URI root, long rollIntervalMillis, HedgePolicy hedge, Map<String, String> hadoop) {
    Configuration conf = new Configuration();
    hadoop.forEach(conf::set);
    return new WalSettings(root, rollIntervalMillis, 128L << 20, hedge, conf);
  }
}
