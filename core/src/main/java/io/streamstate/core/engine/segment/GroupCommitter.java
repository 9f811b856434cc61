package io.streamstate.core.engine.segment;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CommitIds;
import io.streamstate.core.engine.StorageClock;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit: the commits of one version that stores of one storage root make concurrently in
 * this process are published as one segment file instead of one changelog each (docs/protocol.md,
 * "Group commit"). Every member's commit returns only once the segment is durable, so durability is
 * exactly that of a changelog; what changes is the number of files per batch.
 *
 * <p>When to write: a store announces each transaction that may commit ({@link #expect}); a segment
 * is written as soon as every announced transaction of its version that began together with its
 * members (within {@code waveMillis} of the earliest) has either joined it, been withdrawn, or
 * belongs to a thread that is itself waiting here (a task that commits two stores commits them one
 * after the other), or once the first member has waited {@code maxWaitMillis}. So a lone commit is
 * written at once, a wave of tasks that started together shares one file, and a task that started
 * much later (a stage with more partitions than task slots) is not waited for: tasks that begin
 * together tend to end together, and those that began later would only hold the early ones' slots.
 *
 * <p>With a journal, a segment also waits while another one is being appended: the commits that
 * arrive meanwhile go together in the next append (the classic group commit). And the wave is empty
 * by default there ({@link #DEFAULT_WAVE}): an append creates no file, so waiting for other tasks
 * would only hold this task's slot idle (on 2 cores that wait was most of a commit's time, issue
 * 21). Where each segment is a file (S3), the wave saves files and requests, and is 250 ms.
 *
 * <p>A thread's commits complete together ({@link #defer}): a task that commits several stores of
 * one version one after the other (a stream-stream join commits four) would otherwise wait for one
 * durable write per store. While the committing thread holds another announced transaction of the
 * same version, its member joins the forming segment and the commit returns before the segment is
 * durable; the thread's last commit of that version (or the withdrawal of its last transaction)
 * writes the segment and waits for every member it deferred, failing if any is not durable. So the
 * task still succeeds only once all its commits are durable, with one write for all of them.
 * Whoever needs a deferred commit durable earlier (its store's next load or snapshot) writes the
 * segment itself ({@link #await}).
 *
 * <p>A failed segment fails every member the same way a changelog would fail its one commit: {@link
 * RetryableException} (nothing published) or {@link OutcomeUnknownException}.
 */
public final class GroupCommitter {
  private static final Logger LOG = LoggerFactory.getLogger(GroupCommitter.class);

  /**
   * The default wave ({@code waveMillis}): none when segments are appended to a journal, 250 ms
   * when each is a file.
   */
  public static final long DEFAULT_WAVE = -1;

  /** A segment is written early once its members hold this many bytes. */
  private static final long MAX_SEGMENT_BYTES = 64L << 20;

  private final Storage storage;
  private final HedgedWriter hedger;
  private final long maxWaitNanos;
  private final long waveNanos;
  private final SegmentCatalog catalog;

  /** Appends segments to a journal; null: a segment file each. */
  private final SegmentJournalWriter journal;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Set<Ticket> announced = new HashSet<>();
  private final Map<Thread, Integer> waiting = new HashMap<>();
  private final Map<Long, Group> forming = new HashMap<>();

  /** The groups holding members each thread deferred ({@link #defer}), until it settles them. */
  private final Map<Thread, List<Group>> deferredBy = new HashMap<>();

  /** Segment writes running now (under {@link #lock}). */
  private int writesInFlight;

  /** The shared committers of a process (a component of its {@link ProcessResources}). */
  private static final class Shared {
    final Map<String, GroupCommitter> byKey = new HashMap<>();
  }

  private final AtomicLong segmentsWritten = new AtomicLong();
  private final AtomicLong membersWritten = new AtomicLong();

  /** A transaction that may commit {@code version}, announced by the thread that began it. */
  public static final class Ticket {
    final long version;
    final Thread thread;
    final long announcedNanos = System.nanoTime();

    private Ticket(long version, Thread thread) {
      this.version = version;
      this.thread = thread;
    }
  }

  /** What one member's commit did. */
  public record Result(String segment, int members, boolean wroteIt, HedgedPublish published) {}

  /** A member that joined its segment without waiting for it ({@link #defer}). */
  public static final class Deferred {
    private final Group group;
    private final Thread owner;

    private Deferred(Group group, Thread owner) {
      this.group = group;
      this.owner = owner;
    }
  }

  private static final class Group {
    final long version;
    final long firstArrivalNanos;
    long earliestAnnouncedNanos = Long.MAX_VALUE;
    final List<Segment.Member> members = new ArrayList<>();
    long bytes;
    boolean flushing;
    boolean done;
    Thread writer;
    String name;
    HedgedPublish published;
    RuntimeException failure;

    Group(long version, long firstArrivalNanos) {
      this.version = version;
      this.firstArrivalNanos = firstArrivalNanos;
    }
  }

  /**
   * @param resources the process's: the root's segment catalog, the journal's background threads
   * @param hedger hedges segment writes (null: plain writes)
   * @param maxWaitMillis how long the first member of a segment waits for the others at most
   * @param waveMillis a segment waits only for transactions announced within this long of its
   *     earliest member's announcement; {@link #DEFAULT_WAVE}: 0 with a journal, 250 without
   * @param journal how to append segments to a journal where the storage can append ({@link
   *     SupportsAppend}); null, or a storage that cannot: a segment file each
   */
  public GroupCommitter(
      ProcessResources resources,
      Storage storage,
      HedgedWriter hedger,
      long maxWaitMillis,
      long waveMillis,
      SegmentJournalSettings journal) {
    if (maxWaitMillis < 0 || (waveMillis < 0 && waveMillis != DEFAULT_WAVE)) {
      throw new IllegalArgumentException(
          "maxWaitMillis and waveMillis must be >= 0: " + maxWaitMillis + ", " + waveMillis);
    }
    this.storage = storage;
    this.hedger = hedger;
    this.maxWaitNanos = TimeUnit.MILLISECONDS.toNanos(maxWaitMillis);
    this.catalog = SegmentCatalog.of(resources, storage);
    this.journal =
        journal != null && SegmentJournalWriter.canAppend(storage)
            ? new SegmentJournalWriter(
                resources, storage, journal, StorageClock.of(resources, storage)::estimateNow)
            : null;
    this.waveNanos =
        TimeUnit.MILLISECONDS.toNanos(
            waveMillis != DEFAULT_WAVE ? waveMillis : this.journal != null ? 0 : 250);
  }

  /**
   * The committer of {@code storage} in {@code resources}'s process for this hedger, wait and
   * journal (normally one per storage root): stores group only with stores that share it.
   */
  public static GroupCommitter shared(
      ProcessResources resources,
      Storage storage,
      HedgedWriter hedger,
      long maxWaitMillis,
      long waveMillis,
      SegmentJournalSettings journal) {
    String key =
        System.identityHashCode(storage)
            + "/"
            + System.identityHashCode(hedger)
            + "/"
            + maxWaitMillis
            + "/"
            + waveMillis
            + "/"
            + journal;
    Shared shared = resources.component(Shared.class, Shared::new);
    synchronized (shared) {
      GroupCommitter existing = shared.byKey.get(key);
      if (existing == null || existing.storage != storage || existing.hedger != hedger) {
        existing =
            new GroupCommitter(resources, storage, hedger, maxWaitMillis, waveMillis, journal);
        shared.byKey.put(key, existing);
      }
      return existing;
    }
  }

  public Storage storage() {
    return storage;
  }

  /** Segments this committer published. */
  public long segmentsWritten() {
    return segmentsWritten.get();
  }

  /** Whether segments go to a journal (the storage can append and a journal was asked for). */
  public boolean appendsToJournal() {
    return journal != null;
  }

  /** Segments appended to a journal (of {@link #segmentsWritten()}). */
  public long journalAppends() {
    return journal == null ? 0 : journal.appends();
  }

  /** Commits published in those segments (members / segments is the grouping achieved). */
  public long membersWritten() {
    return membersWritten.get();
  }

  /** {segments, members} summed over the shared committers of {@code resources}'s process. */
  public static long[] sharedTotals(ProcessResources resources) {
    Shared shared = resources.component(Shared.class, Shared::new);
    synchronized (shared) {
      long[] totals = new long[2];
      for (GroupCommitter c : shared.byKey.values()) {
        totals[0] += c.segmentsWritten();
        totals[1] += c.membersWritten();
      }
      return totals;
    }
  }

  /** Announces a transaction of the calling thread that may commit {@code version}. */
  public Ticket expect(long version) {
    Ticket t = new Ticket(version, Thread.currentThread());
    lock.lock();
    try {
      announced.add(t);
    } finally {
      lock.unlock();
    }
    return t;
  }

  /**
   * Withdraws a ticket (the transaction will not commit); segments stop waiting for it. If it was
   * the thread's last of its version and the thread deferred members of that version, their
   * segments are written now (a failure there reaches whoever awaits them: their stores' next load
   * or snapshot finds them not durable).
   */
  public void withdraw(Ticket t) {
    lock.lock();
    try {
      if (announced.remove(t)) {
        changed.signalAll();
        if (Thread.currentThread() == t.thread
            && deferredBy.containsKey(t.thread)
            && !holdsTicket(t.thread, t.version, null)) {
          RuntimeException failure = settleDeferred(t.thread, t.version);
          if (failure != null) {
            LOG.warn(
                "Group commit of version {}: a segment holding commits this thread made before it"
                    + " withdrew its last transaction failed; their stores load from durable"
                    + " storage next",
                t.version,
                failure);
          }
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Commits one store's changelog as a member of a segment of {@code ticket}'s version; returns
   * once the segment is durable.
   *
   * @throws RetryableException the segment failed and nothing was published
   * @throws OutcomeUnknownException the segment may or may not have been published
   */
  public Result commit(Ticket ticket, Segment.Member member) {
    Thread me = Thread.currentThread();
    lock.lock();
    try {
      Group group = join(ticket, member);
      waiting.merge(me, 1, Integer::sum);
      changed.signalAll();
      try {
        while (!group.done) {
          if (!group.flushing) {
            long waited = System.nanoTime() - group.firstArrivalNanos;
            if (waited >= maxWaitNanos
                || group.bytes >= MAX_SEGMENT_BYTES
                || ((journal == null || writesInFlight == 0) && allArrived(group))) {
              write(group);
              continue;
            }
            changed.awaitNanos(maxWaitNanos - waited);
          } else {
            changed.await();
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        if (!group.flushing) {
          group.members.remove(member);
          group.bytes -= member.changelog().length;
          if (group.members.isEmpty()) {
            forming.remove(group.version, group);
          }
          throw new RetryableException(
              "Interrupted while waiting for the group commit of version "
                  + ticket.version
                  + "; nothing was published",
              e);
        }
        throw new OutcomeUnknownException(
            "Interrupted while the group commit of version " + ticket.version + " was written", e);
      } finally {
        waiting.merge(me, -1, (a, b) -> a + b == 0 ? null : a + b);
      }
      RuntimeException deferredFailure = settleDeferred(me, ticket.version);
      if (group.failure != null) {
        throw memberFailure(group.failure);
      }
      if (deferredFailure != null) {
        // This member is durable, but an earlier commit of this thread, which returned on the
        // promise of this one, is not (or not known to be).
        throw new OutcomeUnknownException(
            "Group commit of version "
                + ticket.version
                + ": a commit this thread made before, which waited for this one, failed: "
                + deferredFailure.getMessage(),
            deferredFailure);
      }
      return new Result(group.name, group.members.size(), group.writer == me, group.published);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Adds a member to the forming segment of its version without waiting for it to be written, if
   * the calling thread holds another announced transaction of that version (it will commit again,
   * or withdraw, and settle this member then); else returns null and adds nothing ({@link #commit}
   * is the way then).
   */
  public Deferred defer(Ticket ticket, Segment.Member member) {
    Thread me = Thread.currentThread();
    lock.lock();
    try {
      Group open = forming.get(ticket.version);
      long bytes = open == null ? 0 : open.bytes;
      if (!holdsTicket(me, ticket.version, ticket)
          || bytes + member.changelog().length >= MAX_SEGMENT_BYTES) {
        return null; // commit() then: it writes the segment now
      }
      Group group = join(ticket, member);
      List<Group> mine = deferredBy.computeIfAbsent(me, t -> new ArrayList<>());
      if (!mine.contains(group)) {
        mine.add(group);
      }
      changed.signalAll();
      return new Deferred(group, me);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Makes a deferred member durable now: writes its segment if nobody is writing it yet, else waits
   * for that write; returns once it is durable.
   *
   * @throws RetryableException the segment failed and nothing was published
   * @throws OutcomeUnknownException the segment may or may not have been published
   */
  public void await(Deferred deferred) {
    lock.lock();
    try {
      writeOrAwait(deferred.group);
      // A failed segment stays on its owner's list: the owner's last commit must fail too.
      List<Group> mine = deferredBy.get(deferred.owner);
      if (mine != null) {
        mine.removeIf(g -> g.done && g.failure == null);
        if (mine.isEmpty()) {
          deferredBy.remove(deferred.owner);
        }
      }
      if (deferred.group.failure != null) {
        throw memberFailure(deferred.group.failure);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Adds a member to the forming segment of its ticket's version; called with the lock held. */
  private Group join(Ticket ticket, Segment.Member member) {
    announced.remove(ticket);
    Group group = forming.get(ticket.version);
    if (group == null) {
      group = new Group(ticket.version, System.nanoTime());
      forming.put(ticket.version, group);
    }
    group.members.add(member);
    group.bytes += member.changelog().length;
    group.earliestAnnouncedNanos = Math.min(group.earliestAnnouncedNanos, ticket.announcedNanos);
    return group;
  }

  /**
   * Whether {@code thread} holds an announced ticket of {@code version} other than {@code except}.
   */
  private boolean holdsTicket(Thread thread, long version, Ticket except) {
    for (Ticket t : announced) {
      if (t != except && t.thread == thread && t.version == version) {
        return true;
      }
    }
    return false;
  }

  /**
   * Writes (or waits for) every segment holding members {@code thread} deferred of {@code version},
   * and forgets the thread's deferred members of other versions (left by a commit that failed or
   * was interrupted: their stores make them durable, or find them failed, before using them).
   * Called with the lock held by the thread itself. Returns the first failure among the segments of
   * {@code version}, or null when all are durable.
   */
  private RuntimeException settleDeferred(Thread thread, long version) {
    List<Group> mine = deferredBy.remove(thread);
    if (mine == null) {
      return null;
    }
    RuntimeException failure = null;
    for (Group group : mine) {
      if (group.version != version) {
        continue;
      }
      writeOrAwait(group);
      if (failure == null && group.failure != null) {
        failure = group.failure;
      }
    }
    return failure;
  }

  /**
   * Writes {@code group}'s segment if nobody is writing it yet, else waits for that write; returns
   * once it is done (durable or failed). Called with the lock held.
   */
  private void writeOrAwait(Group group) {
    boolean interrupted = false;
    while (!group.done) {
      if (!group.flushing) {
        write(group);
      } else {
        try {
          changed.await();
        } catch (InterruptedException e) {
          interrupted = true; // the write is running: its outcome is what we report
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether no transaction of the group's wave may still join it. */
  private boolean allArrived(Group group) {
    for (Ticket t : announced) {
      if (t.version == group.version
          && !waiting.containsKey(t.thread)
          && t.announcedNanos - group.earliestAnnouncedNanos <= waveNanos) {
        return false;
      }
    }
    return true;
  }

  /** Writes the group's segment; called with the lock held, releases it while writing. */
  private void write(Group group) {
    group.flushing = true;
    writesInFlight++;
    group.writer = Thread.currentThread();
    forming.remove(group.version, group);
    List<Segment.Member> members = List.copyOf(group.members);
    lock.unlock();
    String name = null;
    HedgedPublish published = null;
    RuntimeException failure = null;
    try {
      Segment segment = new Segment(group.version, members);
      long id = CommitIds.next(); // I2: the segment's names are this write's own
      name = SegmentCatalog.name(group.version, id);
      byte[] framed = FramedFile.frame(FileKind.SEGMENT, segment.encode());
      HedgeCopy file = HedgeCopy.create(storage, name);
      // Appended to the journal where there is one (the file when none is available), hedged by a
      // file of its own.
      HedgeCopy primary = journal != null ? journal.copy(id, file) : file;
      try {
        if (hedger != null && hedger.policy().isEnabled()) {
          published =
              hedger.publish(
                  primary,
                  HedgeCopy.create(storage, SegmentCatalog.hedgeName(group.version, id)),
                  framed);
          name = published.name();
        } else {
          name = primary.write(framed);
        }
      } catch (FileAlreadyExistsException e) {
        // Segment ids are random 64-bit numbers: nothing of ours was published.
        throw new RetryableException(
            "The attempt-unique name " + FramedFile.location(storage, name) + " is taken", e);
      }
      catalog.remember(name, segment);
      segmentsWritten.incrementAndGet();
      membersWritten.addAndGet(members.size());
    } catch (RuntimeException e) {
      failure = e;
    } finally {
      lock.lock();
    }
    group.name = name;
    group.published = published;
    group.failure = failure;
    group.done = true;
    writesInFlight--;
    changed.signalAll();
  }

  /** A failure of the shared write, as this member's own (each thread gets its own exception). */
  private static RuntimeException memberFailure(RuntimeException cause) {
    String message = "Group commit failed: " + cause.getMessage();
    if (cause instanceof OutcomeUnknownException) {
      return new OutcomeUnknownException(message, cause);
    }
    if (cause instanceof RetryableException) {
      return new RetryableException(message, cause);
    }
    return new StreamStateException(message, cause);
  }
}
