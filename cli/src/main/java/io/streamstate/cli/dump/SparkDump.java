package io.streamstate.cli.dump;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.to_json;

import io.streamstate.core.error.RetryableException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The Spark side of {@code streamstate dump}: one store partition's rows read through Spark's own
 * state data source ({@code spark.read.format("statestore")}), which decodes them with the
 * checkpoint's schema through the provider that wrote them, rendered by Spark as JSON lines. The
 * session is the one already running in this JVM, else a local one it stops after. Nothing here
 * parses a state file.
 */
public final class SparkDump {
  private static final String CFM_CLASS = "spark.sql.streaming.checkpointFileManagerClass";

  /**
   * Our checkpoint file manager: the only one that sees the entries of a log journal (Spark's own
   * reads the plain files alone).
   */
  private static final String OUR_CFM =
      "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

  private static final String PARTITION_ID = "partition_id";

  private SparkDump() {}

  /** What to read and keep. */
  public record Request(
      String location,
      Map<String, String> hadoopConf,
      long batchId,
      long operatorId,
      String storeName,
      int partition,
      String keyPrefix,
      Long limit,
      boolean journaledLogs,
      String master) {}

  /**
   * Reads the rows of {@code request}'s store partition, sorted by key, and hands each, as one JSON
   * object (every column of the state data source but {@code partition_id}, null fields kept), to
   * {@code out}.
   *
   * @return the number of rows handed out
   * @throws RetryableException Spark's state data source could not read the store
   */
  public static long run(Request request, Consumer<String> out) {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) {
      active = SparkSession.getDefaultSession();
    }
    boolean own = active.isEmpty();
    SparkSession spark;
    if (own) {
      SparkSession.Builder builder =
          SparkSession.builder()
              .master(request.master())
              .appName("streamstate dump")
              .config("spark.ui.enabled", "false")
              .config("spark.sql.session.timeZone", "UTC");
      request
          .hadoopConf()
          .forEach(
              (k, v) -> builder.config(k.startsWith("spark.hadoop.") ? k : "spark.hadoop." + k, v));
      spark = builder.getOrCreate();
      // Spark logs a failed task's stack trace at ERROR; the command reports it in one line.
      String level = System.getenv("STREAMSTATE_LOG_LEVEL");
      spark.sparkContext().setLogLevel(level == null || level.isBlank() ? "OFF" : level);
    } else {
      spark = active.get();
      request
          .hadoopConf()
          .forEach(
              (k, v) ->
                  spark
                      .sparkContext()
                      .hadoopConfiguration()
                      .set(k.startsWith("spark.hadoop.") ? k.substring(13) : k, v));
    }
    // The state store coordinator, which Spark's providers ask on load, starts with the session's
    // streaming query manager: a session that never ran a query has none until this call.
    spark.streams();
    String previousCfm = spark.conf().get(CFM_CLASS, null);
    try {
      if (request.journaledLogs()) {
        spark.conf().set(CFM_CLASS, OUR_CFM);
      }
      return read(spark, request, out);
    } catch (RetryableException e) {
      throw e;
    } catch (Exception e) { // Spark's exceptions are checked ones thrown unchecked from Scala

      throw new RetryableException(
          "Spark's state data source could not read state/"
              + request.operatorId()
              + "/"
              + request.partition()
              + " ("
              + request.storeName()
              + ") at batch "
              + request.batchId()
              + " of "
              + request.location()
              + ": "
              + firstLine(e),
          e);
    } finally {
      if (own) {
        spark.stop();
      } else if (previousCfm == null) {
        spark.conf().unset(CFM_CLASS);
      } else {
        spark.conf().set(CFM_CLASS, previousCfm);
      }
    }
  }

  private static long read(SparkSession spark, Request request, Consumer<String> out) {
    Dataset<Row> state =
        spark
            .read()
            .format("statestore")
            .option("path", request.location())
            .option("batchId", request.batchId())
            .option("operatorId", request.operatorId())
            .option("storeName", request.storeName())
            .load();
    StructType schema = state.schema();
    if (!List.of(schema.fieldNames()).contains("key")) {
      throw new RetryableException(
          "Spark's state data source gives no key column for this store: " + schema.simpleString());
    }
    List<Column> columns = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!f.name().equals(PARTITION_ID)) {
        columns.add(col(f.name()));
      }
    }
    // Spark 4.2's source has no partition option for a plain read (snapshotPartitionId needs a
    // snapshot of a given batch): every partition is read, one is kept.
    Dataset<Row> rows = state.filter(col(PARTITION_ID).equalTo(request.partition()));
    if (request.keyPrefix() != null) {
      StructType key = (StructType) schema.apply("key").dataType();
      Column first = col("key").getField(key.fields()[0].name()).cast("string");
      rows = rows.filter(first.startsWith(request.keyPrefix()));
    }
    Dataset<Row> lines =
        rows.select(
                col("key").as("_sort_key"),
                to_json(struct(columns.toArray(new Column[0])), Map.of("ignoreNullFields", "false"))
                    .as("json"))
            .orderBy(col("_sort_key"), col("json"))
            .select(col("json"));
    if (request.limit() != null) {
      lines = lines.limit((int) Math.min(Integer.MAX_VALUE, request.limit()));
    }
    long n = 0;
    Iterator<Row> it = lines.toLocalIterator();
    while (it.hasNext()) {
      out.accept(it.next().getString(0));
      n++;
    }
    return n;
  }

  /** The first line of {@code e}'s message, and of its root cause's when it has another. */
  private static String firstLine(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String line = firstLineOf(e);
    return root == e ? line : line + " (cause: " + firstLineOf(root) + ")";
  }

  private static String firstLineOf(Throwable e) {
    String m = e.getMessage();
    if (m == null || m.isBlank()) {
      return e.getClass().getSimpleName();
    }
    m = m.strip();
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }
}
