package io.streamstate.spark.repartition;

import io.streamstate.spark.StreamStateProvider;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetMap;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeq;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqBase;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadataBase;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadataV2;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import org.apache.spark.sql.internal.SQLConf;
import scala.Option;

/**
 * Moves a stopped query's state from one state store provider to another: Spark's HDFS-backed or
 * RocksDB provider to ours, and ours to Spark's RocksDB provider. Spark pins the provider class in
 * every offset log entry and a restarted query takes it from there, so a query cannot change
 * provider by configuration; this adds one batch whose offset entry is the last committed batch's
 * with the new provider class, and rewrites every store's rows of that batch into the new
 * provider's stores with Spark's own rewriter steps ({@link OfflineRewrite}): the old provider
 * reads them through its own {@code StateStore} API, the new one writes them through its own. No
 * format is parsed here. The query's next run starts after that batch, on the new provider.
 *
 * <p>Spark's HDFS-backed provider cannot be the target: Spark's rewriter opens the new stores with
 * {@code getStore(version, loadEmpty = true)}, which that provider refuses ("doesn't support
 * loadEmpty", HDFSBackedStateStoreProvider.getStore in 4.2.0). Spark's RocksDB provider can hold
 * whatever it held, so a query moved to ours can always move back to it.
 */
public final class OfflineConvert {
  /** Spark's HDFS-backed provider. */
  public static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";

  /** Spark's RocksDB provider. */
  public static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";

  /** Ours. */
  public static final String STREAMSTATE = StreamStateProvider.class.getName();

  /** The providers by the short names the command takes. */
  public static final Map<String, String> PROVIDERS =
      Map.of("streamstate", STREAMSTATE, "hdfs", HDFS, "rocksdb", ROCKSDB);

  private static final String PROVIDER_KEY = SQLConf.STATE_STORE_PROVIDER_CLASS().key();
  private static final String PARTITIONS_KEY = SQLConf.SHUFFLE_PARTITIONS().key();

  private OfflineConvert() {}

  /** What a conversion did: the batch it read, the batch it wrote, the providers. */
  public record Result(long readBatch, long batch, String from, String to, int partitions) {}

  /**
   * Rewrites the state of the query checkpointed at {@code checkpointLocation} into stores of
   * {@code targetProvider}, as a new batch that the query's next run starts after. The query must
   * be stopped. With {@code enforceExactlyOnceSink}, as in Spark's repartitioning, a last batch
   * that did not commit is refused rather than skipped; a conversion to the same provider that
   * failed half way (its offset entry written, no commit) is completed.
   *
   * @throws IllegalArgumentException if the providers are not a pair this can convert, or the
   *     checkpoint already runs on {@code targetProvider}
   * @throws IllegalStateException if the last batch did not commit and {@code
   *     enforceExactlyOnceSink} is set
   */
  public static Result run(
      SparkSession spark,
      String checkpointLocation,
      String targetProvider,
      boolean enforceExactlyOnceSink) {
    SparkSession.setActiveSession(spark);
    // Spark's runner, for its readers and writers of this checkpoint's logs; its partition
    // count is never used.
    OfflineRewrite.Runner runner =
        OfflineRewrite.Runner.open(spark, checkpointLocation, 1, enforceExactlyOnceSink);
    String location = runner.location();
    StreamingQueryCheckpointMetadata checkpoint = runner.checkpoint();

    long lastCommitted = runner.step("getLastCommittedBatchId");
    OffsetSeqBase committed = entry(checkpoint, lastCommitted, location);
    String source = OfflineRewrite.pinnedProvider(checkpoint, lastCommitted);
    requireConvertible(location, lastCommitted, source, targetProvider);
    int partitions = Integer.parseInt(conf(committed, PARTITIONS_KEY, location, lastCommitted));

    long lastBatch = runner.step("getLastBatchId");
    long newBatch;
    if (lastBatch == lastCommitted) {
      newBatch = addBatch(checkpoint, committed, lastBatch + 1, targetProvider);
    } else if (isUnfinishedConversion(checkpoint, committed, lastBatch, targetProvider)) {
      newBatch = lastBatch;
    } else if (enforceExactlyOnceSink) {
      throw new IllegalStateException(
          "The last batch ("
              + lastBatch
              + ") of the checkpoint at "
              + location
              + " did not commit: run the query until it commits, or skip it (its input is read"
              + " again by the next run; a sink that is not exactly-once may then hold it twice)");
    } else {
      runner.step("skipUncommittedBatches", lastBatch, lastCommitted);
      newBatch = addBatch(checkpoint, committed, lastBatch + 1, targetProvider);
    }

    OfflineRewrite.rewriteAndCommit(spark, runner, lastCommitted, newBatch, partitions);
    return new Result(lastCommitted, newBatch, source, targetProvider, partitions);
  }

  /**
   * Refuses a provider class this cannot convert to.
   *
   * @throws IllegalArgumentException it is not ours or Spark's RocksDB provider
   */
  public static void requireTarget(String target) {
    if (HDFS.equals(target)) {
      throw new IllegalArgumentException(
          "Cannot convert to Spark's HDFS-backed provider: Spark's state rewriter opens the new"
              + " stores empty (getStore with loadEmpty), which that provider refuses; convert to"
              + " Spark's RocksDB provider (rocksdb) instead");
    }
    if (!PROVIDERS.containsValue(target)) {
      throw new IllegalArgumentException(
          "Cannot convert to " + target + ": the targets are " + STREAMSTATE + " and " + ROCKSDB);
    }
  }

  private static void requireConvertible(
      String location, long batch, String source, String target) {
    requireTarget(target);
    if (source == null || !PROVIDERS.containsValue(source)) {
      throw new IllegalArgumentException(
          "The checkpoint at "
              + location
              + " ran batch "
              + batch
              + " with state store provider "
              + source
              + ": the sources are "
              + HDFS
              + ", "
              + ROCKSDB
              + " and "
              + STREAMSTATE);
    }
    if (source.equals(target)) {
      throw new IllegalArgumentException(
          "The checkpoint at "
              + location
              + " already runs on "
              + target
              + " (batch "
              + batch
              + ")");
    }
  }

  /**
   * Whether the uncommitted {@code lastBatch} is a conversion to {@code target} that failed half
   * way: it pins {@code target} and the committed batch's offsets.
   */
  private static boolean isUnfinishedConversion(
      StreamingQueryCheckpointMetadata checkpoint,
      OffsetSeqBase committed,
      long lastBatch,
      String target) {
    if (!target.equals(OfflineRewrite.pinnedProvider(checkpoint, lastBatch))) {
      return false;
    }
    Option<OffsetSeqBase> last = checkpoint.offsetLog().get(lastBatch);
    return last.isDefined() && offsetsOf(last.get()).equals(offsetsOf(committed));
  }

  private static Object offsetsOf(OffsetSeqBase entry) {
    return entry instanceof OffsetMap m ? m.offsetsMap() : entry.offsets();
  }

  /** Writes {@code batch}'s offset entry: {@code committed}'s, pinning {@code target}. */
  private static long addBatch(
      StreamingQueryCheckpointMetadata checkpoint,
      OffsetSeqBase committed,
      long batch,
      String target) {
    OffsetSeqBase entry;
    if (committed instanceof OffsetSeq v1) {
      OffsetSeqMetadata m = v1.metadataOpt().get();
      entry =
          new OffsetSeq(
              v1.offsets(),
              Option.apply(
                  new OffsetSeqMetadata(
                      m.batchWatermarkMs(),
                      m.batchTimestampMs(),
                      m.conf().updated(PROVIDER_KEY, target))));
    } else if (committed instanceof OffsetMap v2) {
      OffsetSeqMetadataV2 m = v2.metadata();
      entry =
          new OffsetMap(
              v2.offsetsMap(),
              new OffsetSeqMetadataV2(
                  m.batchWatermarkMs(),
                  m.batchTimestampMs(),
                  m.conf().updated(PROVIDER_KEY, target),
                  m.sourceMetadataInfo(),
                  m.controlBatchInfo()));
    } else {
      throw new IllegalArgumentException(
          "Unknown offset log entry version " + committed.version() + " before batch " + batch);
    }
    if (!checkpoint.offsetLog().add(batch, entry)) {
      throw new IllegalStateException(
          "Offset log entry " + batch + " exists: another writer is running on this checkpoint");
    }
    return batch;
  }

  private static OffsetSeqBase entry(
      StreamingQueryCheckpointMetadata checkpoint, long batch, String location) {
    Option<OffsetSeqBase> entry = checkpoint.offsetLog().get(batch);
    if (entry.isEmpty() || entry.get().metadataOpt().isEmpty()) {
      throw new IllegalArgumentException(
          "The checkpoint at "
              + location
              + " has no offset log entry with metadata for its last committed batch "
              + batch);
    }
    return entry.get();
  }

  private static String conf(OffsetSeqBase entry, String key, String location, long batch) {
    OffsetSeqMetadataBase metadata = entry.metadataOpt().get();
    Option<String> value = metadata.conf().get(key);
    if (value.isEmpty()) {
      throw new IllegalArgumentException(
          "The offset log entry of batch " + batch + " at " + location + " does not pin " + key);
    }
    return value.get();
  }
}
