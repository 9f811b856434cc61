package io.streamstate.spark.reliability;

import io.streamstate.spark.StreamStateMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.apache.spark.Success$;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.storage.RDDInfo;
import scala.collection.Iterator;

/**
 * The attempts of stateful tasks of streaming queries, as Spark's listener bus reports them: which
 * store each ran (operator and partition), on which executor and host, whether it was speculative,
 * how it ended, and the loads our provider reported in its task's SQL metrics (warm, durable and
 * cold: {@link StreamStateMetrics}). Spark records a task's metric update only when it is not zero,
 * so a load kind the task did not do reads 0.
 *
 * <p>A stage is stateful when one of its RDDs was made by a stateful operator: Spark names an
 * operator's RDDs after the operator's node ({@code SparkPlan.executeQuery} opens an RDD scope of
 * its {@code nodeName}). The listener bus delivers events in order, to listeners in the order they
 * were added: a listener added after this one sees a launch here before its own {@code
 * onTaskStart}.
 */
final class StatefulTaskLog extends SparkListener {
  /** The node names of Spark's stateful operators in {@link ReliabilityQuery}'s plan. */
  private static final Set<String> STATEFUL_NODES =
      Set.of("StreamingDeduplicate", "StreamingSymmetricHashJoin", "StateStoreSave");

  /** Spark's local properties of a micro-batch's jobs (its id; the query run as job group). */
  private static final String BATCH_ID = "streaming.sql.batchId";

  private static final String JOB_GROUP = "spark.jobGroup.id";

  /** A partition of a stateful operator: the stores one task loads and commits. */
  record Store(String operator, int partition) {}

  /** An attempt as it started. */
  record Launch(
      long batch,
      String run,
      Store store,
      int stageId,
      long taskId,
      int attemptNumber,
      String executor,
      String host,
      boolean speculative) {}

  /** An attempt as it ended, with the loads of its stores. */
  record Attempt(
      Launch launch,
      boolean successful,
      String endReason,
      long warmLoads,
      long durableLoads,
      long coldLoads) {}

  private record StatefulStage(long batch, String run, String operator) {}

  private final Map<Integer, StatefulStage> stages = new ConcurrentHashMap<>();
  private final Map<Long, Launch> running = new ConcurrentHashMap<>();
  private final List<Launch> launches = new CopyOnWriteArrayList<>();
  private final List<Attempt> ended = new CopyOnWriteArrayList<>();
  private final Consumer<Launch> onLaunch;

  StatefulTaskLog() {
    this(launch -> {});
  }

  /** A log that also tells {@code onLaunch} of each stateful launch, once recorded. */
  StatefulTaskLog(Consumer<Launch> onLaunch) {
    this.onLaunch = onLaunch;
  }

  /** Every stateful launch so far, in the bus's order. */
  List<Launch> launches() {
    return List.copyOf(launches);
  }

  /** Every ended stateful attempt so far, in the bus's order. */
  List<Attempt> ended() {
    return List.copyOf(ended);
  }

  /**
   * The executor of the last successful attempt of {@code launch}'s store in its query run (whose
   * stores that executor then held), if any.
   */
  Optional<String> lastSuccessfulExecutor(Launch launch) {
    List<Attempt> all = new ArrayList<>(ended);
    for (int i = all.size() - 1; i >= 0; i--) {
      Attempt a = all.get(i);
      if (a.successful()
          && a.launch().store().equals(launch.store())
          && a.launch().run().equals(launch.run())) {
        return Optional.of(a.launch().executor());
      }
    }
    return Optional.empty();
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
    if (submitted.properties() == null) {
      return;
    }
    String batch = submitted.properties().getProperty(BATCH_ID);
    TreeSet<String> operators = new TreeSet<>();
    Iterator<RDDInfo> rdds = submitted.stageInfo().rddInfos().iterator();
    while (rdds.hasNext()) {
      RDDInfo rdd = rdds.next();
      if (rdd.scope().isDefined() && STATEFUL_NODES.contains(rdd.scope().get().name())) {
        operators.add(rdd.scope().get().name());
      }
    }
    if (batch != null && !operators.isEmpty()) {
      stages.put(
          submitted.stageInfo().stageId(),
          new StatefulStage(
              Long.parseLong(batch),
              String.valueOf(submitted.properties().getProperty(JOB_GROUP)),
              String.join("+", operators)));
    }
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart start) {
    StatefulStage stage = stages.get(start.stageId());
    if (stage == null) {
      return;
    }
    TaskInfo info = start.taskInfo();
    Launch launch =
        new Launch(
            stage.batch(),
            stage.run(),
            new Store(stage.operator(), info.index()),
            start.stageId(),
            info.taskId(),
            info.attemptNumber(),
            info.executorId(),
            info.host(),
            info.speculative());
    running.put(info.taskId(), launch);
    launches.add(launch);
    onLaunch.accept(launch);
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    Launch launch = running.remove(end.taskInfo().taskId());
    if (launch == null) {
      return;
    }
    boolean successful = end.reason() == Success$.MODULE$;
    ended.add(
        new Attempt(
            launch,
            successful,
            end.reason() instanceof TaskFailedReason failed
                ? failed.toErrorString()
                : end.reason().toString(),
            metric(end.taskInfo(), StreamStateMetrics.WARM_LOADS.desc()),
            metric(end.taskInfo(), StreamStateMetrics.DURABLE_LOADS.desc()),
            metric(end.taskInfo(), StreamStateMetrics.COLD_LOADS.desc())));
  }

  /** The task's update of the SQL metrics named {@code name} (summed over its operators), or 0. */
  private static long metric(TaskInfo info, String name) {
    long sum = 0;
    Iterator<AccumulableInfo> accums = info.accumulables().iterator();
    while (accums.hasNext()) {
      AccumulableInfo acc = accums.next();
      if (acc.name().isDefined()
          && acc.name().get().equals(name)
          && acc.update().isDefined()
          && acc.update().get() instanceof Long value) {
        sum += value;
      }
    }
    return sum;
  }
}
