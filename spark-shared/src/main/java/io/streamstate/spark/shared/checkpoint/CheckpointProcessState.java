package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.ProcessResources;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the checkpoint file managers of one process share besides hedgers and log journals, a
 * component of its {@link ProcessResources}: stores already warned about single-writer mode, and
 * counters for tests and tools.
 *
 * <p>Public for the adapters' checkpoint file manager ({@code io.streamstate.spark.checkpoint});
 * not an API.
 */
public final class CheckpointProcessState {
  private final Set<String> warnedSingleWriter = ConcurrentHashMap.newKeySet();
  private final AtomicLong existsAnsweredLocally = new AtomicLong();
  private final AtomicLong primaryFailuresAfterHedge = new AtomicLong();

  private CheckpointProcessState() {}

  /** The state of {@code resources}. */
  public static CheckpointProcessState of(ProcessResources resources) {
    return resources.component(CheckpointProcessState.class, CheckpointProcessState::new);
  }

  /** Whether to warn that the store {@code fsUri} is single-writer: true once per store. */
  public boolean firstWarningOfSingleWriter(String fsUri) {
    return warnedSingleWriter.add(fsUri);
  }

  /** Times {@code exists} answered "absent" without a request. */
  public AtomicLong existsAnsweredLocally() {
    return existsAnsweredLocally;
  }

  /** Primary writes of log entries that failed after their hedge copy had won. */
  AtomicLong primaryFailuresAfterHedge() {
    return primaryFailuresAfterHedge;
  }
}
