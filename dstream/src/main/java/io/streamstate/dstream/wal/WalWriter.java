package io.streamstate.dstream.wal;

import io.streamstate.core.format.WalFile;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.journal.JournalAppendCopy;
import io.streamstate.core.journal.JournalFile;
import io.streamstate.core.journal.RollRule;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * The write path of one process's log of one role: group commit and hedged writes.
 *
 * <ul>
 *   <li><b>Group commit.</b> Writers queue their records; one of them (the leader, whichever finds
 *       no write in progress) writes everything queued as one append (one {@code hsync}) or one
 *       segment, and completes each writer's handle. Concurrent receivers of an executor share one
 *       sync instead of one each.
 *   <li><b>Journal</b> where the storage appends (HDFS, local disk): the group goes to the open
 *       journal, hedged: if the append is late past the hedge deadline, the same records are
 *       published as a segment file (create-if-absent), the late journal is reported (on HDFS its
 *       pipeline's DataNodes become suspect) and retired, and the next group goes to a new journal
 *       placed elsewhere. The late append is never taken back: a reader keeps one copy of a record
 *       by its sequence number.
 *   <li><b>Segments</b> where it cannot (object stores): each group is one object, created with
 *       create-if-absent, hedged by a second name. No rename, no object per record.
 * </ul>
 *
 * <p>A journal takes records whose times are below its stop time (its first record's plus the roll
 * interval) and up to its size limit; the stop time is in its name, for {@code clean}.
 */
final class WalWriter {

  /** A group holds at most this many payload bytes; more waits for the next group. */
  private static final long MAX_GROUP_BYTES = 64L << 20;

  private final Storage storage;
  private final SupportsAppend appends; // null: segments only
  private final String writerDir;
  private final WalSettings settings;
  private final HedgedWriter hedger;
  private final Executor closer;
  private final RollRule rollRule;
  private final Consumer<String> fileWritten;

  // Guarded by this.
  private final List<Pending> queue = new ArrayList<>();
  private boolean writing;
  private long nextSeq;
  private long nextFile;
  private boolean closed;

  // The open journal: the leader's group appends and a late append's hedge both touch it.
  private final Object journalLock = new Object();
  private JournalFile journal; // guarded by journalLock
  private long journalStop; // guarded by journalLock

  private record Pending(byte[] payload, long time, CompletableFuture<WalRecordHandle> done) {}

  WalWriter(
      Storage storage,
      String writerDir,
      WalSettings settings,
      HedgedWriter hedger,
      Executor closer,
      Consumer<String> fileWritten) {
    this.storage = storage;
    this.appends =
        storage instanceof SupportsAppend a && a.appendSupported()
            ? (SupportsAppend) storage
            : null;
    this.writerDir = writerDir;
    this.settings = settings;
    this.hedger = hedger;
    this.closer = closer;
    this.rollRule =
        RollRule.afterBytesOrMillis(settings.maxJournalBytes(), RollRule.UNBOUNDED)
            .orWhenSuspectedSlow();
    this.fileWritten = fileWritten;
  }

  /** Whether groups go to journals (else to segments only). */
  boolean journaled() {
    return appends != null;
  }

  /** Writes one record; durable when this returns. */
  WalRecordHandle write(byte[] payload, long time) {
    Pending mine = new Pending(payload, time, new CompletableFuture<>());
    boolean lead;
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException("The write-ahead log in " + writerDir + " is closed");
      }
      queue.add(mine);
      lead = !writing;
      if (lead) {
        writing = true;
      }
    }
    if (lead) {
      lead();
    }
    try {
      return mine.done().join();
    } catch (java.util.concurrent.CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw e;
    }
  }

  /** Writes groups until the queue is empty, then gives up the lead. */
  private void lead() {
    while (true) {
      List<Pending> group = new ArrayList<>();
      long firstSeq;
      long groupNo;
      synchronized (this) {
        long bytes = 0;
        while (!queue.isEmpty()
            && (group.isEmpty() || bytes + queue.get(0).payload().length <= MAX_GROUP_BYTES)) {
          Pending p = queue.remove(0);
          bytes += p.payload().length;
          group.add(p);
        }
        if (group.isEmpty()) {
          writing = false;
          notifyAll();
          return;
        }
        firstSeq = nextSeq;
        nextSeq += group.size();
        groupNo = nextFile++;
      }
      try {
        List<WalRecordHandle> handles = writeGroup(group, firstSeq, groupNo);
        for (int i = 0; i < group.size(); i++) {
          group.get(i).done().complete(handles.get(i));
        }
      } catch (RuntimeException e) {
        for (Pending p : group) {
          p.done().completeExceptionally(e);
        }
      }
    }
  }

  private List<WalRecordHandle> writeGroup(List<Pending> group, long firstSeq, long groupNo) {
    ByteArrayOutputStream records = new ByteArrayOutputStream();
    long[] starts = new long[group.size()];
    long minTime = Long.MAX_VALUE;
    long maxTime = Long.MIN_VALUE;
    for (int i = 0; i < group.size(); i++) {
      Pending p = group.get(i);
      starts[i] = records.size();
      records.writeBytes(WalFile.record(firstSeq + i, p.time(), p.payload()));
      minTime = Math.min(minTime, p.time());
      maxTime = Math.max(maxTime, p.time());
    }
    byte[] chunk = records.toByteArray();
    long segmentStop = maxTime + 1;
    String segment = WalNames.segment(writerDir, segmentStop, groupNo, false);
    ContentWriter segmentContent =
        out -> {
          out.write(WalFile.header());
          out.write(chunk);
        };
    // Journaled: the append, hedged by a segment. Otherwise: a segment, hedged by a second name.
    HedgeCopy primary =
        appends != null
            ? new GroupAppend(minTime, maxTime, group.size())
            : HedgeCopy.create(storage, segment, segmentContent);
    String alternate =
        appends != null ? segment : WalNames.segment(writerDir, segmentStop, groupNo, true);
    HedgedPublish won =
        hedger.publish(primary, HedgeCopy.create(storage, alternate, segmentContent), chunk);
    String file;
    long base;
    int at = won.name().lastIndexOf('#'); // an append: <journal>#<offset>
    if (at >= 0) {
      file = won.name().substring(0, at);
      base = Long.parseLong(won.name().substring(at + 1));
    } else {
      file = won.name();
      base = WalFile.HEADER_LENGTH;
      fileWritten.accept(file);
    }
    List<WalRecordHandle> handles = new ArrayList<>(group.size());
    for (long start : starts) {
      handles.add(new WalRecordHandle(file, base + start));
    }
    return handles;
  }

  /**
   * Retires the open journal if its stop time is at most {@code threshTime} (it takes no record
   * that old any more), so that {@code clean} may delete it.
   *
   * @return the name of the journal it may not delete (the open one), or null
   */
  synchronized String retireJournalBefore(long threshTime) {
    while (writing) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    synchronized (journalLock) {
      if (journal == null) {
        return null;
      }
      if (journalStop <= threshTime) {
        journal.retire();
        journal = null;
        return null;
      }
      return journal.name();
    }
  }

  /** Waits for the writes in progress, then closes the open journal. */
  synchronized void close() {
    closed = true;
    while (writing) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    synchronized (journalLock) {
      if (journal != null) {
        journal.retire();
        journal = null;
      }
    }
  }

  /**
   * One group appended to the open journal, or to a new one it starts (the create and the header go
   * with the group's append, so the hedge covers them too): the hedged write's primary copy.
   * Returns {@code <journal>#<offset of the group's first record>}.
   */
  private final class GroupAppend extends JournalAppendCopy {
    private final long minTime;
    private final long maxTime;
    private final int records;
    private volatile JournalFile target;
    private boolean hedged; // guarded by journalLock

    GroupAppend(long minTime, long maxTime, int records) {
      this.minTime = minTime;
      this.maxTime = maxTime;
      this.records = records;
    }

    @Override
    protected JournalFile journal() {
      return target;
    }

    @Override
    protected void hedgeStarting() {
      synchronized (journalLock) {
        hedged = true;
      }
    }

    @Override
    public String write(byte[] content) {
      long now = System.currentTimeMillis();
      synchronized (journalLock) {
        if (journal != null
            && maxTime < journalStop
            && journal.tryReserve(rollRule, content.length, now)) {
          target = journal;
        }
      }
      if (target != null) {
        return target.name() + "#" + target.appendReserved(content);
      }
      long stop = Math.max(minTime + settings.rollIntervalMillis(), maxTime + 1);
      long n;
      synchronized (WalWriter.this) {
        n = nextFile++;
      }
      String name = WalNames.journal(writerDir, stop, n);
      AppendableFile created = appends.createAppendable(name);
      fileWritten.accept(name);
      JournalFile opened = new JournalFile(created, 0, JournalFile.NO_CLOSE_BY, storage, closer);
      boolean late;
      synchronized (journalLock) {
        late = hedged;
        if (!late) {
          if (journal != null) {
            journal.retire();
          }
          journal = opened;
          journalStop = stop;
          opened.becameCurrent(now);
        }
        target = opened;
      }
      byte[] header = WalFile.header();
      byte[] first = new byte[header.length + content.length];
      System.arraycopy(header, 0, first, 0, header.length);
      System.arraycopy(content, 0, first, header.length, content.length);
      try {
        return name + "#" + (opened.append(first, records) + header.length);
      } finally {
        if (late) {
          opened.retire(); // its hedge won before it existed: no later group goes here
        }
      }
    }

    @Override
    public String describe() {
      JournalFile j = target;
      return j == null ? "an append to a new journal in " + writerDir : "an append to " + j.name();
    }
  }
}
