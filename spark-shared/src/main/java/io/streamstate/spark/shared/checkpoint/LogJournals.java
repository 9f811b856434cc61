package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.hadoop.HadoopStorage;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The log journals of one process, a component of its {@link ProcessResources}: one {@link
 * LogJournal} per log directory (a log has one writer per process), the background pool that closes
 * and deletes rolled journals, the process's append count, and what the checkpoint file managers
 * learnt about journals (directories known to hold none, stores warned that they cannot journal).
 *
 * <p>{@link #close()} is what the death of the process does to its journals: each writer's journal
 * is closed (on local disk that drops its lock) and the writer forgets the log, so that a manager
 * of the new process takes the log over as a restarted driver would.
 *
 * <p>Public for the adapters' checkpoint file manager ({@code io.streamstate.spark.checkpoint});
 * not an API.
 */
public final class LogJournals implements AutoCloseable {
  private final Map<String, LogJournal> byDir = new ConcurrentHashMap<>();
  private final AtomicLong appends = new AtomicLong();
  private final ExecutorService background;

  /** Log directories known in this process to hold no journal (never enabled there). */
  private final Set<String> noJournals = ConcurrentHashMap.newKeySet();

  /** Stores already warned that they cannot journal: once per process and file system. */
  private final Set<String> warnedNoJournal = ConcurrentHashMap.newKeySet();

  private LogJournals(ExecutorService background) {
    this.background = background;
  }

  /** The log journals of {@code resources}. */
  public static LogJournals of(ProcessResources resources) {
    return resources.component(
        LogJournals.class, () -> new LogJournals(resources.cachedPool("log-journal")));
  }

  /**
   * The journal of the log directory {@code storage} is rooted at, in this process.
   *
   * @param hedger hedges appends with a plain entry file (null: not hedged); the first non-null one
   *     is kept
   * @param rollRecords the journal rolls after this many records (the first caller's holds)
   */
  public LogJournal journal(HadoopStorage storage, HedgedWriter hedger, int rollRecords) {
    LogJournal journal =
        byDir.computeIfAbsent(
            storage.describe(),
            d -> new LogJournal(storage, hedger, rollRecords, appends, background));
    journal.hedgeWith(hedger);
    return journal;
  }

  /** Appends to log journals in this process (tests, metrics). */
  public long appends() {
    return appends.get();
  }

  /** Notes that the log directory {@code dir} holds no journal. */
  public void noteNoJournal(String dir) {
    noJournals.add(dir);
  }

  /** Whether the log directory {@code dir} is known to hold no journal. */
  public boolean knownWithoutJournal(String dir) {
    return noJournals.contains(dir);
  }

  /** Whether to warn that the store {@code fsUri} cannot journal: true once per store. */
  public boolean firstWarningOfNoJournal(String fsUri) {
    return warnedNoJournal.add(fsUri);
  }

  /** The process dies: every writer's journal is closed and forgotten (see the class comment). */
  @Override
  public void close() {
    for (LogJournal journal : byDir.values()) {
      journal.die();
    }
    byDir.clear();
  }
}
