package io.streamstate.spark.reliability;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * A straggler for speculation tests: the SQL function {@code slow_first_attempt(fromBatch, value)}
 * returns {@code value}; in the first attempt of partition 0 of a stage of micro-batch {@code
 * fromBatch} or later it first sleeps, once per task at its first row, until interrupted (at most
 * {@value #MAX_SLEEP_MS} ms). Spark speculates such a task, and once a speculative attempt succeeds
 * kills this one, interrupting it; the interrupted attempt fails without finishing its rows. It
 * runs in executor JVMs: they load this class from a jar of its own ({@link ClassJar}).
 */
final class SlowFirstAttempt implements UDF2<Long, Long, Long> {
  static final String FUNCTION = "slow_first_attempt";

  /** Never in the normal course: the speculative attempt ends the sleep long before. */
  static final long MAX_SLEEP_MS = 60_000;

  private static final Set<Long> sleptTasks = ConcurrentHashMap.newKeySet();

  static void register(SparkSession spark) {
    spark
        .udf()
        .register(
            FUNCTION,
            functions.udf(new SlowFirstAttempt(), DataTypes.LongType).asNondeterministic());
  }

  @Override
  public Long call(Long fromBatch, Long value) {
    TaskContext task = TaskContext.get();
    if (task == null || task.attemptNumber() != 0 || task.partitionId() != 0) {
      return value;
    }
    String batch = task.getLocalProperty("streaming.sql.batchId");
    if (batch == null
        || Long.parseLong(batch) < fromBatch
        || !sleptTasks.add(task.taskAttemptId())) {
      return value;
    }
    try {
      Thread.sleep(MAX_SLEEP_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "slow first attempt of partition 0 (batch " + batch + ") interrupted", e);
    }
    return value;
  }
}
