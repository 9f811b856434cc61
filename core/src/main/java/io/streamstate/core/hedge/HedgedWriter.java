package io.streamstate.core.hedge;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes one durable file with a hedge against a slow create (see {@code docs/protocol.md},
 * "Hedged writes").
 *
 * <ol>
 *   <li><b>h1</b> Start {@code create(primaryName)} on the executor.
 *   <li><b>h2</b> Wait for it until the policy's {@linkplain HedgePolicy#deadline() deadline}. If
 *       it succeeded, that is the result.
 *   <li><b>h3</b> If it is still running, or failed (then the hedge serves as the retry), and the
 *       budget has a token: tell the primary copy ({@link HedgeCopy#hedgeStarted}: a create reports
 *       its write as late to a storage that {@linkplain SupportsLateWriteReports takes such
 *       reports}), then start {@code create(alternateName)} with the same bytes, which therefore
 *       already avoids what made the primary late. At most one hedge per publish. Without a token,
 *       wait for the primary alone; if it is still running when it counts as stalled ({@link
 *       HedgePolicy#stalledAfter}) and the policy's reserve has a token, hedge it then (the reserve
 *       is kept for stuck writes: hedges of scheduling noise cannot spend it).
 *   <li><b>h4</b> The first create to succeed wins; publish returns its name at once, without
 *       waiting for the other.
 *   <li><b>h5</b> The loser cleans up after itself, on its own executor thread: if its create
 *       succeeds later, its file is deleted; if it fails cleanly there is nothing to clean; if its
 *       outcome is unknown its name is left alone (never clean up what may be in flight: a torn or
 *       duplicate file for retention).
 * </ol>
 *
 * <p>Both names must be attempt-unique (chosen by the caller so that no other writer ever creates
 * them). Then the two creates never contend with anyone, and which copy wins needs no arbitration:
 * both hold the same bytes, and the caller records the winning name. A {@link
 * FileAlreadyExistsException} on such a name can only come from an earlier try of the same name
 * whose outcome was unknown, so it is treated as an unknown outcome for that copy.
 *
 * <p>If every started copy fails, publish throws {@link OutcomeUnknownException} if any outcome is
 * unknown (the caller must read both names back), else {@link RetryableException}. The first copy's
 * failure is the cause, the second's is suppressed. An interrupt of the caller while it waits gives
 * {@link OutcomeUnknownException} (the creates already started may still complete) and keeps the
 * thread's interrupt status.
 *
 * <p>Thread-safe; one writer may serve every store of a process. The creates run on the executor
 * given at construction, which must run tasks on threads other than the caller's and accept at
 * least two at once per concurrent publish (a cached thread pool does).
 */
public final class HedgedWriter {
  private static final Logger LOG = LoggerFactory.getLogger(HedgedWriter.class);
  private static final int PRIMARY = 0;
  private static final int ALTERNATE = 1;

  private final HedgePolicy policy;
  private final Executor executor;

  /** The name of the pool of {@link ProcessResources} that hedged writers' creates run on. */
  public static final String POOL = "hedged-write";

  /**
   * A writer whose creates run on the owner's pool of daemon threads (cached: threads are made as
   * needed and end after a minute idle).
   */
  public HedgedWriter(HedgePolicy policy, ProcessResources resources) {
    this(policy, resources.cachedPool(POOL));
  }

  /** A writer whose creates run on {@code executor} (see the class comment for what it needs). */
  public HedgedWriter(HedgePolicy policy, Executor executor) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.executor = Objects.requireNonNull(executor, "executor");
  }

  /**
   * A writer with this one's settings and executor but a policy of its own ({@link
   * HedgePolicy#withSameSettings}), made on first use and then always the same: for another kind of
   * write (snapshot uploads beside commits), whose latencies grow with file size and must neither
   * stretch this writer's deadline nor spend its budget.
   */
  public HedgedWriter companion() {
    HedgedWriter c = companion;
    if (c == null) {
      synchronized (this) {
        c = companion;
        if (c == null) {
          c = new HedgedWriter(policy.withSameSettings(), executor);
          companion = c;
        }
      }
    }
    return c;
  }

  private volatile HedgedWriter companion;

  /** The policy that decides deadlines and budget, and holds the metrics. */
  public HedgePolicy policy() {
    return policy;
  }

  /**
   * Publishes {@code content} as a new file at {@code primaryName}, or, if that create is late or
   * fails, at {@code alternateName}; returns which name won. With hedging disabled this is one
   * plain create of {@code primaryName} in the calling thread.
   *
   * <p>{@code content} is not copied: it must not change afterwards, since a losing create may
   * still be writing it after publish returned.
   *
   * @param storage where to publish
   * @param primaryName the attempt-unique name tried first
   * @param alternateName the attempt-unique name of the hedge, different from {@code primaryName}
   * @param content the bytes of the file
   * @return the winning name and how it was reached
   * @throws RetryableException every started create failed and none published anything
   * @throws OutcomeUnknownException every started create failed and at least one may have published
   *     (or the name already existed, or the caller was interrupted): read both names back
   */
  public HedgedPublish publish(
      Storage storage, String primaryName, String alternateName, byte[] content) {
    Objects.requireNonNull(storage, "storage");
    Objects.requireNonNull(primaryName, "primaryName");
    Objects.requireNonNull(alternateName, "alternateName");
    if (primaryName.equals(alternateName)) {
      throw new IllegalArgumentException(
          "The alternate name must differ from the primary name: " + primaryName);
    }
    return publish(
        HedgeCopy.create(storage, primaryName), HedgeCopy.create(storage, alternateName), content);
  }

  /**
   * As {@link #publish(Storage, String, String, byte[])}, for content too large to hold in memory
   * (a file spilled to local disk, for example): each started copy calls {@code content} once, so
   * it must write the same bytes every time and may be called from two threads at once.
   */
  public HedgedPublish publish(
      Storage storage, String primaryName, String alternateName, ContentWriter content) {
    Objects.requireNonNull(storage, "storage");
    Objects.requireNonNull(primaryName, "primaryName");
    Objects.requireNonNull(alternateName, "alternateName");
    Objects.requireNonNull(content, "content");
    if (primaryName.equals(alternateName)) {
      throw new IllegalArgumentException(
          "The alternate name must differ from the primary name: " + primaryName);
    }
    return publish(
        HedgeCopy.create(storage, primaryName, content),
        HedgeCopy.create(storage, alternateName, content),
        new byte[0]);
  }

  /**
   * As {@link #publish(Storage, String, String, byte[])}, with the two copies given as {@link
   * HedgeCopy}s (a journal append as the primary, for example). A complete losing copy is {@link
   * HedgeCopy#discard discarded}; one that cannot be is counted in {@code losersLeft}.
   */
  public HedgedPublish publish(HedgeCopy primary, HedgeCopy alternate, byte[] content) {
    Objects.requireNonNull(primary, "primary");
    Objects.requireNonNull(alternate, "alternate");
    Objects.requireNonNull(content, "content");
    if (Thread.currentThread().isInterrupted()) {
      throw new RetryableException(
          "Interrupted before publishing " + primary.describe() + " (nothing was started)");
    }
    policy.recordWrite();
    if (!policy.isEnabled()) {
      return publishUnhedged(primary, content);
    }
    return new Race(primary, alternate, content).run(policy.deadlineNanos());
  }

  private HedgedPublish publishUnhedged(HedgeCopy copy, byte[] content) {
    long start = System.nanoTime();
    String name;
    try {
      name = copy.write(content);
    } catch (FileAlreadyExistsException e) {
      throw new OutcomeUnknownException(alreadyExists(copy), e);
    }
    long latency = System.nanoTime() - start;
    policy.recordLatencyNanos(latency);
    return new HedgedPublish(name, false, false, Duration.ofNanos(latency));
  }

  private static String alreadyExists(HedgeCopy copy) {
    return "Cannot publish "
        + copy.describe()
        + ": the attempt-unique name already exists, so an earlier try of it may have published"
        + " it; read it back";
  }

  /** Whether a failed create may still have published (anything but a clean failure). */
  private static boolean outcomeUnknown(Throwable failure) {
    return failure != null && !(failure instanceof RetryableException);
  }

  /** The state of one publish: its two copies and who won. Its monitor guards all fields. */
  private final class Race {
    private final HedgeCopy[] copies;
    private final String[] written = new String[2];
    private final byte[] content;
    private final long startNanos = System.nanoTime();
    private final boolean[] started = new boolean[2];
    private final boolean[] done = new boolean[2];
    private final Throwable[] failures = new Throwable[2];
    private int winner = -1;
    private long winnerLatencyNanos;
    private String noHedgeReason = "";

    Race(HedgeCopy primary, HedgeCopy alternate, byte[] content) {
      this.copies = new HedgeCopy[] {primary, alternate};
      this.content = content;
    }

    synchronized HedgedPublish run(long deadlineNanos) {
      // h1
      if (!start(PRIMARY)) {
        throw new RetryableException(
            "Cannot publish "
                + where(PRIMARY)
                + ": the executor rejected its create (nothing was started)");
      }
      try {
        // h2: the primary alone until the deadline. Waiting releases the monitor, so completions
        // get in; the wait ends as soon as the primary is done.
        long left;
        while (!done[PRIMARY] && (left = deadlineNanos - (System.nanoTime() - startNanos)) > 0) {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        if (winner >= 0) {
          return result();
        }
        // h3: late or failed. Decided under the monitor, so a primary that succeeded meanwhile
        // is seen above and no needless hedge starts.
        boolean hedged = hedge();
        if (!hedged && !done[PRIMARY] && policy.hasReserve()) {
          // h3': the budget was spent (by hedges of noise, it may be): a primary still running
          // when it counts as stalled is hedged from the reserve kept for stuck writes.
          long stalledAt = policy.stalledAfterNanos();
          while (!done[PRIMARY] && (left = stalledAt - (System.nanoTime() - startNanos)) > 0) {
            TimeUnit.NANOSECONDS.timedWait(this, left);
          }
          if (winner >= 0) {
            return result();
          }
          if (!done[PRIMARY]) {
            hedged = hedgeFromReserve();
          }
        }
        // h4: the first success, or every started copy failed.
        while (winner < 0 && !(done[PRIMARY] && (!hedged || done[ALTERNATE]))) {
          wait();
        }
        if (winner >= 0) {
          return result();
        }
        throw failure();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new OutcomeUnknownException(
            "Interrupted while publishing "
                + where(PRIMARY)
                + (started[ALTERNATE] ? " (hedged as " + where(ALTERNATE) + ")" : "")
                + ": the creates already started may still complete; read the names back",
            e);
      }
    }

    /** Starts the hedge if the budget allows; holds the monitor. */
    private boolean hedge() {
      if (!policy.tryAcquireHedge()) {
        policy.metrics().hedgesSkippedForBudget.increment();
        noHedgeReason = " (not hedged: the hedge budget is spent)";
        LOG.debug("Not hedging {}: the hedge budget is spent", where(PRIMARY));
        return false;
      }
      return startHedge("it passed its deadline");
    }

    /** Starts the hedge of a stalled primary if the reserve allows; holds the monitor. */
    private boolean hedgeFromReserve() {
      if (!policy.tryAcquireReserve()) {
        noHedgeReason = " (not hedged: the hedge budget and its reserve are spent)";
        LOG.debug("Not hedging {}: the hedge budget and its reserve are spent", where(PRIMARY));
        return false;
      }
      if (!startHedge("it stalled and the budget was spent")) {
        return false;
      }
      policy.metrics().hedgesFromReserve.increment();
      return true;
    }

    /** Starts the alternate copy (a token is spent); holds the monitor. */
    private boolean startHedge(String why) {
      boolean afterFailure = done[PRIMARY];
      // Before the hedge starts: what the late copy reports (its slow DataNodes, say) steers the
      // hedge's own create away from it.
      try {
        copies[PRIMARY].hedgeStarted();
      } catch (RuntimeException e) {
        LOG.warn("Ignoring a failure of {} to note that it is hedged", where(PRIMARY), e);
      }
      if (!start(ALTERNATE)) {
        noHedgeReason = " (not hedged: the executor rejected the hedge)";
        return false;
      }
      policy.metrics().hedgesFired.increment();
      if (afterFailure) {
        policy.metrics().hedgesAfterFailure.increment();
      }
      LOG.debug(
          "Hedging {} as {}: {}",
          where(PRIMARY),
          where(ALTERNATE),
          afterFailure ? "it failed" : why);
      return true;
    }

    /** Submits the create of one copy; holds the monitor. */
    private boolean start(int copy) {
      long submitted = System.nanoTime();
      started[copy] = true;
      try {
        executor.execute(() -> create(copy, submitted));
        return true;
      } catch (RejectedExecutionException e) {
        started[copy] = false;
        LOG.warn("Executor rejected the create of {}", where(copy), e);
        return false;
      }
    }

    /** Runs on the executor: one create, then the decision and, for a loser, its cleanup. */
    private void create(int copy, long submittedNanos) {
      Throwable failure = null;
      String name = null;
      try {
        name = copies[copy].write(content);
      } catch (Throwable t) { // handed to the waiting caller; an Error is rethrown below too
        failure = t;
      }
      long now = System.nanoTime();
      boolean lost;
      synchronized (this) {
        done[copy] = true;
        failures[copy] = failure;
        written[copy] = name;
        HedgeMetrics metrics = policy.metrics();
        if (failure == null) {
          // A copy that lost counts as slow as the race took, no slower: it shows the tail, but
          // a loser stuck for seconds behind what the hedge went around (a slow DataNode) would
          // lift the deadline of every write after it for a whole window.
          long sample = now - submittedNanos;
          if (winner >= 0) {
            sample = Math.min(sample, startNanos + winnerLatencyNanos - submittedNanos);
          }
          policy.recordLatencyNanos(sample);
        }
        if (failure == null && winner < 0) {
          winner = copy;
          winnerLatencyNanos = now - startNanos;
          if (copy == ALTERNATE) {
            metrics.hedgesWon.increment();
          }
          if (outcomeUnknown(failures[1 - copy])) {
            metrics.losersLeft.increment();
          }
        } else if (winner >= 0 && outcomeUnknown(failure)) {
          metrics.losersLeft.increment(); // I11: what may still be in flight is left alone
        }
        lost = failure == null && winner != copy;
        notifyAll();
      }
      if (lost) {
        // h5: the winner is recorded by the caller; this complete copy is garbage nobody refers to.
        cleanUp(copy);
      } else if (failure instanceof Error error) {
        throw error;
      }
    }

    private void cleanUp(int copy) {
      String name;
      synchronized (this) {
        name = written[copy];
      }
      try {
        if (!copies[copy].discard(name)) {
          policy.metrics().losersLeft.increment();
          return;
        }
        policy.metrics().losersCleaned.increment();
        LOG.debug("Deleted {}, the losing copy of a hedged write", where(copy));
      } catch (RuntimeException e) {
        policy.metrics().cleanupFailures.increment();
        LOG.warn(
            "Cannot delete {}, the losing copy of a hedged write; left for retention",
            where(copy),
            e);
      }
    }

    private HedgedPublish result() {
      return new HedgedPublish(
          written[winner],
          started[ALTERNATE],
          winner == ALTERNATE,
          Duration.ofNanos(winnerLatencyNanos));
    }

    /** The exception for a publish whose every started copy failed; holds the monitor. */
    private RuntimeException failure() {
      Throwable primary = failures[PRIMARY];
      Throwable alternate = started[ALTERNATE] ? failures[ALTERNATE] : null;
      for (Throwable t : new Throwable[] {primary, alternate}) {
        if (t instanceof Error error) { // never turned into something a caller would retry
          Throwable other = t == primary ? alternate : primary;
          if (other != null) {
            error.addSuppressed(other);
          }
          throw error;
        }
      }
      StringBuilder what = new StringBuilder("Cannot publish ").append(where(PRIMARY));
      if (alternate != null) {
        what.append(" or its hedge ")
            .append(where(ALTERNATE))
            .append(": the primary failed (")
            .append(describe(primary))
            .append("), the hedge failed (")
            .append(describe(alternate))
            .append(")");
      } else {
        what.append(": ").append(describe(primary)).append(noHedgeReason);
      }
      StreamStateException e;
      if (outcomeUnknown(primary) || outcomeUnknown(alternate)) {
        what.append("; it may have been published: read the names back before deciding");
        e = new OutcomeUnknownException(what.toString(), primary);
      } else {
        what.append("; nothing was published");
        e = new RetryableException(what.toString(), primary);
      }
      if (alternate != null) {
        e.addSuppressed(alternate);
      }
      return e;
    }

    private String describe(Throwable failure) {
      if (failure instanceof FileAlreadyExistsException) {
        return "the attempt-unique name already exists, an earlier try of it may have published it";
      }
      return String.valueOf(failure.getMessage());
    }

    private String where(int copy) {
      return copies[copy].describe();
    }
  }
}
