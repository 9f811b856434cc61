package io.streamstate.spark.reliability;

import io.streamstate.spark.StreamStateMetrics;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Task failures on a seeded (batch, partition, site), first attempt only: the SQL function {@code
 * fault_point(site, seed, value)} returns {@code value}, and in a task the {@link FaultPlan} of
 * that seed names it either throws at once (before the stage's state stores commit: they commit
 * when their output is consumed) or registers a completion listener that throws (after they
 * committed; Spark then runs the task again, and the store version is committed a second time).
 */
final class TaskFaults {
  static final String FUNCTION = "fault_point";
  static final String SITE_JOIN = "join";
  static final String SITE_AGGREGATE = "aggregate";

  /** Spark's local property holding the micro-batch id ({@code MicroBatchExecution}). */
  private static final String BATCH_ID = "streaming.sql.batchId";

  static final AtomicLong failedAttempts = new AtomicLong();

  /**
   * For the driver-kill test (local mode: tasks run in the driver JVM): the batch in whose join
   * task of partition 0 (before its state stores commit) the driver waits to be killed; -1: none.
   */
  static volatile long holdInJoinOfBatch = -1;

  private TaskFaults() {}

  static void register(SparkSession spark) {
    spark
        .udf()
        .register(
            FUNCTION,
            functions
                .udf((UDF3<String, Long, Long, Long>) TaskFaults::at, DataTypes.LongType)
                .asNondeterministic());
  }

  private static Long at(String site, Long seed, Long value) {
    TaskContext task = TaskContext.get();
    if (task == null || task.attemptNumber() != 0) {
      return value;
    }
    String batch = task.getLocalProperty(BATCH_ID);
    if (batch == null) {
      return value;
    }
    if (site.equals(SITE_JOIN)
        && Long.parseLong(batch) == holdInJoinOfBatch
        && task.partitionId() == 0) {
      ReliabilityQuery.holdForKill("in a join task of batch " + batch);
    }
    FaultPlan plan = FaultPlan.forSeed(seed);
    FaultPlan.TaskFault fault =
        plan == null ? null : plan.onTask(Long.parseLong(batch), task.partitionId(), site);
    if (fault == null) {
      return value;
    }
    failedAttempts.incrementAndGet();
    String message = "Injected task fault " + fault + " (stage " + task.stageId() + ", attempt 0)";
    if (fault.kind() == FaultPlan.Kind.TASK_BEFORE_COMMIT) {
      throw new IllegalStateException(message);
    }
    task.addTaskCompletionListener(
        (TaskCompletionListener)
            context -> {
              if (context.isFailed()) {
                // Something else failed the task first (a storage fault of the same schedule on
                // its commit, say): this fault never had a commit to come after.
                plan.preemptedByFailure(fault);
                return;
              }
              if (stateCommitted(context)) {
                plan.provedAfterCommit(fault);
              }
              throw new IllegalStateException(message + " after the state commit");
            });
    return value;
  }

  /**
   * Whether a stateful operator of this task committed its stores. Our stores report their custom
   * metrics only once committed (before, none), and Spark adds a store's metrics to the operator's
   * after the commit (stream-stream join: {@code onOutputCompletion}; aggregation and
   * deduplication: after {@code store.commit()}); of those, the memory cap's share is above 0 for
   * every committed store, even one the watermark left empty (the row count, used before, is 0
   * there, and eight soak schedules were wrongly failed by it).
   */
  private static boolean stateCommitted(TaskContext context) {
    String committedOnly = StreamStateMetrics.MEMORY_CAP.desc();
    scala.collection.Iterator<?> accums = context.taskMetrics().accumulators().iterator();
    while (accums.hasNext()) {
      org.apache.spark.util.AccumulatorV2<?, ?> acc =
          (org.apache.spark.util.AccumulatorV2<?, ?>) accums.next();
      if (acc.name().isDefined()
          && acc.name().get().equals(committedOnly)
          && acc.value() instanceof Long bytes
          && bytes > 0) {
        return true;
      }
    }
    return false;
  }
}
