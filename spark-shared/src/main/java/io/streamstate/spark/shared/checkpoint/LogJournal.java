package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.journal.JournalFile;
import io.streamstate.core.journal.RollRule;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storages;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.spark.shared.StreamStateSettings;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One of Spark's logs ({@code offsets/} or {@code commits/}) kept in a journal: each entry Spark
 * writes is one append and {@code hsync} to a file the driver keeps open, instead of a new file
 * (docs/protocol.md, "Spark log journal"). On HDFS that asks the NameNode nothing per batch.
 *
 * <p>The journal's format is {@link LogJournalFile} ({@code <log dir>/.journal-<epoch>}); readers
 * replay every journal in epoch order over the plain entry files of the directory ({@link
 * LogJournalReader}). This class is the writer, and answers reads from what it knows once it is the
 * writer.
 *
 * <p><b>One writer.</b> Spark's contract is create-if-absent per entry. The first write of a
 * process takes the log over: it creates the journal of the next epoch (create-if-absent: of two
 * starting writers one fails), fences every older journal ({@link
 * io.streamstate.core.storage.SupportsAppend#fence}: on HDFS lease recovery, so an older writer's
 * next append fails; on local disk a live older writer is reported and this one stops), then reads
 * the log; from then on it knows every entry, and refuses a put of one that exists exactly as a
 * create would. An entry is published as a plain file only as the hedge of a late append; the
 * writer then checks that no newer journal exists, so a writer fenced meanwhile learns it.
 *
 * <p>The open journal's lifecycle (appends, the roll rule's count, retiring after a late append,
 * closing once its last append returns) is core's {@link JournalFile}; this class owns the epochs,
 * the take-over and what the records mean.
 *
 * <p>One instance per log directory per process ({@link LogJournals#journal}); thread-safe.
 *
 * <p>Public for the adapters' checkpoint file manager ({@code io.streamstate.spark.checkpoint});
 * not an API.
 */
public final class LogJournal {
  private static final Logger LOG = LoggerFactory.getLogger(LogJournal.class);

  private final HadoopStorage storage;
  private final LogJournalReader reader;

  /**
   * The journal rolls to the next epoch after this many records (entries and deletes), or twice its
   * live entries if more ({@link StreamStateSettings#LOG_JOURNAL_ROLL_RECORDS}).
   */
  private final int rollRecords;

  /** The process's count of appends to log journals. */
  private final AtomicLong appends;

  /** Closes retired journals and deletes rolled ones: the process's pool. */
  private final Executor background;

  /** Set by the first manager that hedges (a reading manager may have made this journal). */
  private volatile HedgedWriter hedger;

  // Writer state, guarded by this. Null current: not (or no longer) the writer. A journal whose
  // append was late (hedged) is retired: the next write moves on to the next epoch.
  private JournalFile current;
  private long currentEpoch = -1;
  private final NavigableMap<Long, byte[]> entries = new TreeMap<>();
  private final Set<Long> plainEntries = new TreeSet<>();
  private final List<Long> pendingDeletes = new ArrayList<>();

  /** Made by {@link LogJournals#journal}, one per log directory per process. */
  LogJournal(
      HadoopStorage storage,
      HedgedWriter hedger,
      int rollRecords,
      AtomicLong appends,
      Executor background) {
    this.storage = storage;
    this.reader = new LogJournalReader(storage);
    this.hedger = hedger;
    this.rollRecords = rollRecords;
    this.appends = appends;
    this.background = background;
  }

  /** Hedges appends with {@code hedger} from now on, unless this journal already has a hedger. */
  void hedgeWith(HedgedWriter hedger) {
    if (this.hedger == null && hedger != null) {
      this.hedger = hedger;
    }
  }

  /**
   * The process dies: the writer's journal is closed, as the death of its process closes it (and
   * drops its lock), and this journal stops being the writer.
   */
  synchronized void die() {
    if (current != null) {
      current.close();
      release();
    }
  }

  /** Whether the directory holds journals (one listing). */
  public boolean hasJournals() {
    return reader.hasJournals();
  }

  // ---------------------------------------------------------------------------------------------
  // Reading (through LogJournalReader)

  /**
   * Every live entry and its length, in journals or as plain files, for {@code list}: what this
   * writer knows, or, before it writes, what a replay finds. A plain file a fenced writer left
   * after the take-over is not among them.
   */
  public synchronized NavigableMap<Long, Long> liveEntries() {
    NavigableMap<Long, Long> lengths = new TreeMap<>();
    if (current != null) {
      entries.forEach((id, bytes) -> lengths.put(id, (long) bytes.length));
      for (long id : plainEntries) {
        lengths.putIfAbsent(id, -1L);
      }
      return lengths;
    }
    LogJournalReader.Log log = reader.replay();
    log.entries().forEach((id, bytes) -> lengths.put(id, (long) bytes.length));
    for (long id : log.plain()) {
      lengths.putIfAbsent(id, -1L);
    }
    return lengths;
  }

  /** The entry {@code batchId} if a journal holds it (null: read its plain file, if any). */
  public synchronized byte[] get(long batchId) {
    return current != null ? entries.get(batchId) : reader.replay().entries().get(batchId);
  }

  /** Whether entry {@code batchId} exists, in a journal or as a plain file. */
  public synchronized boolean exists(long batchId) {
    if (current != null) {
      return entries.containsKey(batchId) || plainEntries.contains(batchId);
    }
    LogJournalReader.Log log = reader.replay();
    return log.entries().containsKey(batchId) || log.plain().contains(batchId);
  }

  // ---------------------------------------------------------------------------------------------
  // Writing

  /**
   * Adds entry {@code batchId}, durable when this returns (with any deletes still pending).
   *
   * @throws FileAlreadyExistsException the entry exists (in a journal or as a plain file)
   * @throws StreamStateException the append failed, or another writer took the log over
   */
  public void put(long batchId, byte[] bytes) {
    synchronized (this) {
      HedgedWriter hedging = hedger;
      boolean hedged = hedging != null && hedging.policy().isEnabled();
      if (hedged && current != null && rollDue()) {
        putRolling(batchId, bytes, hedging);
        return;
      }
      takeOver();
      if (entries.containsKey(batchId) || plainEntries.contains(batchId)) {
        throw new FileAlreadyExistsException(where(Long.toString(batchId)));
      }
      byte[] record = withPendingDeletes(LogJournalFile.put(batchId, bytes));
      int records = pendingDeletes.size() + 1;
      String entryName = Long.toString(batchId);
      try {
        if (!hedged) {
          current.append(record, records);
        } else {
          HedgedPublish published =
              hedging.publish(
                  new LogJournalCopies.AppendCopy(storage, current, record, records),
                  new LogJournalCopies.PlainEntryCopy(storage, entryName, currentEpoch),
                  bytes);
          if (published.name().equals(entryName)) {
            plainEntries.add(batchId); // the hedge won (the late append may still add a record)
          }
        }
      } catch (RuntimeException e) {
        giveUp();
        throw e;
      }
      appends.incrementAndGet();
      pendingDeletes.clear();
      entries.put(batchId, bytes);
    }
  }

  /**
   * w5 on a hedged writer: the roll and the put are one hedged write, so that a roll stuck on a
   * slow DataNode holds no batch. The next epoch's journal is created (a NameNode request), then
   * one append writes its header, every live entry, the pending deletes and the new entry; its
   * hedge is the entry as a plain file, as for any put. The older journals are deleted only once
   * the new journal's append has completed: until then they hold the live entries. If the hedge
   * won, the new journal is retired at once and the next put rolls again.
   */
  private void putRolling(long batchId, byte[] bytes, HedgedWriter hedging) {
    if (entries.containsKey(batchId) || plainEntries.contains(batchId)) {
      throw new FileAlreadyExistsException(where(Long.toString(batchId)));
    }
    long epoch = currentEpoch + 1;
    JournalFile next = createNextJournal(epoch);
    ByteArrayOutputStream records = new ByteArrayOutputStream();
    records.writeBytes(LogJournalFile.header());
    records.writeBytes(liveRecords());
    records.writeBytes(LogJournalFile.put(batchId, bytes));
    int recordCount = entries.size() + pendingDeletes.size() + 1;
    JournalFile old = current;
    long oldEpoch = currentEpoch;
    // The new journal is this writer's from here: a hedge checks for journals newer than it.
    current = next;
    currentEpoch = epoch;
    String entryName = Long.toString(batchId);
    boolean hedgeWon;
    try {
      HedgedPublish published =
          hedging.publish(
              new LogJournalCopies.AppendCopy(storage, next, records.toByteArray(), recordCount),
              new LogJournalCopies.PlainEntryCopy(storage, entryName, epoch),
              bytes);
      hedgeWon = published.name().equals(entryName);
      if (!hedgeWon) {
        checkNoNewerJournal(epoch);
      }
    } catch (RuntimeException e) {
      old.retire();
      giveUp(); // retires the new journal
      throw e;
    }
    if (hedgeWon) {
      plainEntries.add(batchId); // the new journal is retired: the older ones stay until a roll
      old.retire();
    } else {
      retireAndDeleteUpTo(old, oldEpoch);
    }
    appends.incrementAndGet();
    pendingDeletes.clear();
    entries.put(batchId, bytes);
  }

  /**
   * Creates the journal a roll continues in, empty (the roll appends its start); taken: another
   * writer took the log over.
   */
  private JournalFile createNextJournal(long epoch) {
    AppendableFile file;
    try {
      file = storage.createAppendable(LogJournalFile.name(epoch));
    } catch (FileAlreadyExistsException e) {
      giveUp();
      throw superseded(LogJournalFile.name(epoch));
    }
    return journalOf(file);
  }

  /** {@code file} as this writer's journal: no close-by time, closed in the background. */
  private JournalFile journalOf(AppendableFile file) {
    return new JournalFile(file, file.length(), JournalFile.NO_CLOSE_BY, storage, background);
  }

  /**
   * Whether the journal must roll before the next record (w5): it is closed for appends, retired
   * after a late append, or holds {@code max(rollRecords, 2 × live entries)} records.
   */
  private boolean rollDue() {
    RollRule rule = RollRule.afterRecords(Math.max(rollRecords, 2L * entries.size()));
    return !current.takesAppend(rule, 0, System.currentTimeMillis());
  }

  /** A record of every live journaled entry, then the pending deletes: a new journal's start. */
  private byte[] liveRecords() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Map.Entry<Long, byte[]> e : entries.entrySet()) {
      if (!plainEntries.contains(e.getKey())) {
        out.writeBytes(LogJournalFile.put(e.getKey(), e.getValue()));
      }
    }
    for (long id : pendingDeletes) {
      out.writeBytes(LogJournalFile.delete(id));
    }
    return out.toByteArray();
  }

  /** A newer writer took the log over while this one rolled: it stops being the writer. */
  private void checkNoNewerJournal(long epoch) {
    for (FileInfo f : storage.list("")) {
      if (LogJournalFile.isName(f.name()) && LogJournalFile.epochOf(f.name()) > epoch) {
        throw superseded(f.name());
      }
    }
  }

  /**
   * After a roll: retires the old journal, then, in the background once it is closed, deletes the
   * journals of epochs up to {@code epoch}.
   */
  private void retireAndDeleteUpTo(JournalFile old, long epoch) {
    old.retire();
    old.closed()
        .thenRunAsync(
            () -> {
              for (FileInfo f : storage.list("")) {
                if (LogJournalFile.isName(f.name()) && LogJournalFile.epochOf(f.name()) <= epoch) {
                  storage.delete(f.name());
                }
              }
            },
            background)
        .exceptionally(
            e -> {
              LOG.warn(
                  "Cannot delete the rolled journals of {} (retried at the next roll)",
                  storage.describe(),
                  e);
              return null;
            });
  }

  /**
   * Removes entry {@code batchId}. Deleting an older entry than the newest (Spark's purge of old
   * entries) writes its delete record with the next put: if the process dies first, the entry is
   * back after a restart, one more old entry at the front of the log. Deleting the newest entries
   * (Spark's {@code purgeAfter}) is durable when this returns. A plain file of the entry is deleted
   * too.
   */
  public void delete(long batchId) {
    boolean deletePlain;
    synchronized (this) {
      takeOver();
      boolean journaled = entries.containsKey(batchId);
      deletePlain = plainEntries.contains(batchId);
      if (!journaled && !deletePlain) {
        return;
      }
      long newest = Math.max(entries.isEmpty() ? -1 : entries.lastKey(), lastPlain());
      pendingDeletes.add(batchId);
      if (batchId >= newest) {
        // One record more than it holds, as this journal has always counted: rolls stay put.
        int records = pendingDeletes.size() + 1;
        try {
          current.append(withPendingDeletes(new byte[0]), records);
        } catch (RuntimeException e) {
          giveUp();
          throw e;
        }
        appends.incrementAndGet();
        pendingDeletes.clear();
      }
      entries.remove(batchId);
      plainEntries.remove(batchId);
    }
    if (deletePlain) {
      storage.delete(Long.toString(batchId)); // outside the monitor: a metadata request
    }
  }

  private long lastPlain() {
    return plainEntries.isEmpty() ? -1 : ((TreeSet<Long>) plainEntries).last();
  }

  /** The delete records still pending, then {@code record}. */
  private byte[] withPendingDeletes(byte[] record) {
    if (pendingDeletes.isEmpty()) {
      return record;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (long id : pendingDeletes) {
      out.writeBytes(LogJournalFile.delete(id));
    }
    out.writeBytes(record);
    return out.toByteArray();
  }

  /**
   * Writes every journaled entry out as a plain file and removes the journals, so that a reader
   * without journals (Spark's own manager) sees the whole log. Takes the log over first.
   *
   * @return the entries written out
   */
  public synchronized int writeOut() {
    takeOver();
    int written = 0;
    for (Map.Entry<Long, byte[]> e : entries.entrySet()) {
      if (plainEntries.contains(e.getKey())) {
        continue;
      }
      String name = Long.toString(e.getKey());
      try {
        storage.create(name, ContentWriter.ofBytes(e.getValue()));
      } catch (FileAlreadyExistsException taken) {
        byte[] there = Storages.readAll(storage, name);
        if (!Arrays.equals(there, e.getValue())) {
          throw new ConflictException(
              where(name) + " exists with other content than the journal's entry: not written out",
              taken);
        }
      }
      written++;
    }
    JournalFile last = current;
    Set<Long> live = new TreeSet<>(entries.keySet());
    live.addAll(plainEntries);
    release();
    last.close();
    for (FileInfo f : storage.list("")) {
      // The journals, and entry files the log does not hold (a fenced writer's late hedge, or
      // deleted by a journal record): Spark's own reader would take them for entries.
      if (LogJournalFile.isName(f.name())
          || (LogJournalReader.isEntryName(f.name()) && !live.contains(Long.parseLong(f.name())))) {
        storage.delete(f.name());
      }
    }
    LOG.info("Wrote {} journaled entries of {} out as files", written, storage.describe());
    return written;
  }

  /**
   * After a failed write: the next one takes the log over again, from what storage holds. The
   * journal is retired (closed in the background once no append is in flight).
   */
  private void giveUp() {
    JournalFile file = current;
    release();
    if (file != null) {
      file.retire();
    }
  }

  /** Stops being the writer (the next write takes the log over again). */
  private void release() {
    current = null;
    currentEpoch = -1;
    entries.clear();
    plainEntries.clear();
    pendingDeletes.clear();
  }

  /**
   * Becomes the log's only writer, or stays it: creates the next epoch's journal, fences the older
   * ones, then replays the log (docs/protocol.md, "Spark log journal"). A writer whose journal is
   * full, failed or was retired after a late append continues in the next epoch's.
   */
  private void takeOver() {
    if (current != null) {
      // Roll once the journal holds twice as many records as there are live entries, at least
      // rollRecords: a roll copies the live entries, so it never runs more often than that.
      if (!rollDue()) {
        return;
      }
      rollTo(currentEpoch + 1);
      return;
    }
    long epoch = reader.replay().maxEpoch() + 1;
    AppendableFile mine;
    try {
      mine = storage.createAppendable(LogJournalFile.name(epoch));
    } catch (FileAlreadyExistsException e) {
      throw new ConflictException(
          "Another writer is taking over "
              + storage.describe()
              + " at the same time ("
              + LogJournalFile.name(epoch)
              + " exists): two queries on one checkpoint?",
          e);
    }
    try {
      mine.append(LogJournalFile.header());
      for (FileInfo f : storage.list("")) {
        if (LogJournalFile.isName(f.name()) && LogJournalFile.epochOf(f.name()) < epoch) {
          storage.fence(f.name());
        }
      }
      LogJournalReader.Log log = reader.replay();
      if (log.maxEpoch() > epoch) {
        throw superseded(LogJournalFile.name(log.maxEpoch()));
      }
      entries.clear();
      entries.putAll(log.entries());
      plainEntries.clear();
      plainEntries.addAll(log.plain());
    } catch (RuntimeException e) {
      mine.close();
      try {
        storage.delete(
            LogJournalFile.name(epoch)); // an empty journal, that a live writer must not see
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    current = journalOf(mine);
    currentEpoch = epoch;
    LOG.info("Took over {} with journal epoch {}", storage.describe(), epoch);
  }

  private ConflictException superseded(String newer) {
    return new ConflictException(
        storage.describe()
            + " was taken over by a newer writer ("
            + newer
            + "): two queries on one checkpoint?");
  }

  /**
   * Continues in the journal of {@code epoch}, which starts with every live entry, so that the
   * older journals can go; they are deleted and the old one closed in the background.
   */
  private void rollTo(long epoch) {
    JournalFile old = current;
    long oldEpoch = currentEpoch;
    JournalFile next = createNextJournal(epoch);
    ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
    snapshot.writeBytes(LogJournalFile.header());
    snapshot.writeBytes(liveRecords());
    try {
      next.append(snapshot.toByteArray(), entries.size());
      checkNoNewerJournal(epoch);
    } catch (RuntimeException e) {
      next.close();
      giveUp();
      throw e;
    }
    current = next;
    currentEpoch = epoch;
    pendingDeletes.clear();
    retireAndDeleteUpTo(old, oldEpoch);
  }

  private String where(String name) {
    return reader.where(name);
  }
}
