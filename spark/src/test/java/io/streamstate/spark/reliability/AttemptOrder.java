package io.streamstate.spark.reliability;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.util.TaskCompletionListener;

/**
 * A re-run that reads its input in another order, and the fault that makes the re-run happen after
 * the state committed.
 *
 * <p>The SQL functions {@code attempt_order_d} (array of doubles) and {@code attempt_order_l}
 * (array of longs) return their array's elements in the order the task attempt sees them: as given
 * in a first attempt, reversed in any later one. Spark promises no order for what a task reads from
 * a shuffle (a cluster fetches remote blocks in random order), nor does a function returning a
 * collection it built from a hash set; in one JVM both are stable, so this function makes the
 * variation deterministic: the same multiset of values, another order, and so other state bytes
 * wherever order matters (a sum of doubles, a join's list of values per key).
 *
 * <p>In a first attempt of a task of batch {@link #failAfterCommitInBatch}, the function also
 * registers a completion listener that fails the task: it runs once the task's output was consumed,
 * so after its stateful operator committed (as {@link TaskFaults}' {@code task_after_commit}), and
 * Spark runs the task again; the retry commits the same store versions again, in the other order.
 */
final class AttemptOrder {
  static final String DOUBLES = "attempt_order_d";
  static final String LONGS = "attempt_order_l";

  /** Spark's local property holding the micro-batch id ({@code MicroBatchExecution}). */
  private static final String BATCH_ID = "streaming.sql.batchId";

  /** The batch whose first task attempts fail after their commit; -1: none. */
  static volatile long failAfterCommitInBatch = -1;

  /** Task attempts that already have their failing listener. */
  private static final Set<Long> armed = ConcurrentHashMap.newKeySet();

  private AttemptOrder() {}

  static void register(SparkSession spark) {
    register(spark, DOUBLES, DataTypes.DoubleType);
    register(spark, LONGS, DataTypes.LongType);
  }

  private static void register(SparkSession spark, String name, DataType element) {
    spark
        .udf()
        .register(
            name,
            functions
                .udf(
                    (UDF1<scala.collection.Seq<Object>, List<Object>>) AttemptOrder::inAttemptOrder,
                    DataTypes.createArrayType(element, false))
                .asNondeterministic());
  }

  /** The order in which the attempt {@code attempt} (0 first) reads {@code values}. */
  static <T> List<T> order(List<T> values, int attempt) {
    List<T> ordered = new ArrayList<>(values);
    if (attempt > 0) {
      Collections.reverse(ordered);
    }
    return ordered;
  }

  private static List<Object> inAttemptOrder(scala.collection.Seq<Object> values) {
    TaskContext task = TaskContext.get();
    List<Object> given = new ArrayList<>(scala.jdk.javaapi.CollectionConverters.asJava(values));
    if (task == null) {
      return given;
    }
    String batch = task.getLocalProperty(BATCH_ID);
    if (task.attemptNumber() == 0
        && batch != null
        && Long.parseLong(batch) == failAfterCommitInBatch
        && armed.add(task.taskAttemptId())) {
      task.addTaskCompletionListener(
          (TaskCompletionListener)
              context -> {
                throw new IllegalStateException(
                    "Injected failure after the state commit (batch "
                        + batch
                        + ", partition "
                        + context.partitionId()
                        + ", attempt 0)");
              });
    }
    return order(given, task.attemptNumber());
  }
}
