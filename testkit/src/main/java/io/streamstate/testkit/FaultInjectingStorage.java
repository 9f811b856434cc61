package io.streamstate.testkit;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.testkit.FaultSchedule.Plan;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A {@link Storage} that wraps another and injects faults into its calls, for tests of the commit
 * and recovery protocols. Every fault it injects is one the {@link Storage} contract allows, so
 * code that is correct against the contract must survive all of them.
 *
 * <h2>Calls</h2>
 *
 * Every call ({@link CallKind}) gets a global index, 0-based, in the order calls arrive; {@link
 * #calls()} is the log of them, handy in failure messages.
 *
 * <h2>Faults</h2>
 *
 * <ul>
 *   <li><b>Scripted:</b> {@link #failBefore(long)} and {@link #failAfter(long)} fail the call with
 *       a given index, so a test can run a protocol once to count its calls, then crash it at each
 *       call in turn. {@link #failBefore(CallKind, String)}, {@link #failAfter(CallKind, String)}
 *       and {@link #tearCreate(String)} fault the next call on a given name instead, for protocols
 *       whose concurrent calls arrive in no fixed order.
 *   <li><b>By rule</b> (see {@link Builder}), drawn from a {@link Random} with the given seed: the
 *       same seed and the same sequence of calls give the same faults.
 *       <ul>
 *         <li><i>error before</i>: the delegate is not called; throws {@link RetryableException}.
 *         <li><i>error after</i>: the delegate call takes effect, then the caller gets an error as
 *             if the reply was lost: {@link OutcomeUnknownException} for {@code create} and {@code
 *             delete}; {@link RetryableException} for {@code open} and {@code list}, which change
 *             nothing (the stream {@code open} returned is closed).
 *         <li><i>torn write</i>: {@code create} publishes only a random, strictly shorter prefix of
 *             the content (a writer that died mid-write on a store that shows partial files), then
 *             throws {@link OutcomeUnknownException}; an append likewise appends only a prefix.
 *             Empty content cannot be torn.
 *         <li><i>latency</i>: a delay drawn from a {@link Latency} before the delegate is called.
 *       </ul>
 *   <li><b>Stalls:</b> {@link #stall} blocks matching calls until {@link Stall#release()}, to test
 *       hedging and timeouts without timing assumptions.
 *   <li><b>Crash:</b> after {@link #crash()} every call fails without reaching the delegate, as if
 *       the process had died, until {@link #recover()}. A call already inside the delegate when the
 *       crash happens completes there, but its caller gets {@link OutcomeUnknownException} ({@link
 *       RetryableException} for reads).
 * </ul>
 *
 * <h2>Appends</h2>
 *
 * If the delegate can append ({@link SupportsAppend}), so can this wrapper: {@link
 * #createAppendable} is a {@link CallKind#CREATE} call, and each append a {@link CallKind#APPEND}
 * call on the file's name, subject to every fault above. An append that fails in any way closes the
 * file for appends, as the contract says: an error before appends nothing ({@link
 * RetryableException}); an error after, a torn append or a crash leave the bytes or a prefix of
 * them ({@link OutcomeUnknownException}).
 *
 * <p>Each injected fault is counted by {@link FaultKind} ({@link #injectedFaults()}). Messages of
 * injected errors start with {@code "injected"} and name the call, for example {@code "injected
 * fault before create of op0/part3/v5.log (call #12)"}.
 *
 * <p>Which call gets which fault (the seeded draws, scripted faults, the record of calls) is {@link
 * FaultSchedule}'s; this class applies a call's faults around the delegate. It stays over 600 lines
 * because its public nested types ({@link CallKind}, {@link FaultKind}, {@link Call}, {@link
 * Latency}, {@link Stall}, {@link Builder}: about 230 lines) are the vocabulary tests import as
 * {@code FaultInjectingStorage.X}; the wrapper itself is under 500.
 *
 * <p>Thread-safe. {@link #close()} does not close the delegate: it belongs to whoever created it,
 * and several wrappers may share one delegate to simulate restarts of a process.
 */
public final class FaultInjectingStorage implements Storage, SupportsAppend {

  /** The kinds of {@link Storage} call, one per method. */
  public enum CallKind {
    CREATE,
    OPEN,
    DELETE,
    LIST,
    /** One {@link AppendableFile#append} to a file made by {@link #createAppendable}. */
    APPEND;

    /** Whether the call changes the store, so that a lost reply leaves its outcome unknown. */
    private boolean mutates() {
      return this == CREATE || this == DELETE || this == APPEND;
    }

    private String verb() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The kinds of injected fault, as counted by {@link #injectedFaults()}. */
  public enum FaultKind {
    /** A call failed before reaching the delegate (by rule or by {@link #failBefore}). */
    ERROR_BEFORE,
    /** A call took effect at the delegate, then failed (by rule or by {@link #failAfter}). */
    ERROR_AFTER,
    /** A create published a truncated file, then failed. */
    TORN_WRITE,
    /** A call was delayed by a non-zero {@link Latency}. */
    LATENCY,
    /** A call blocked on an unreleased {@link Stall}. */
    STALL,
    /** A call failed because the storage was {@linkplain #crash() crashed}. */
    CRASHED
  }

  /**
   * One call in the {@linkplain #calls() log}.
   *
   * @param index the global, 0-based index of the call (the argument of {@link #failBefore})
   * @param kind which method was called
   * @param name the name, or for {@link CallKind#LIST} the prefix
   */
  public record Call(long index, CallKind kind, String name) {
    @Override
    public String toString() {
      return kind.verb() + " of " + name + " (call #" + index + ")";
    }
  }

  /**
   * A distribution of injected delays. Implementations draw only from the given {@link Random}, so
   * that delays are reproducible from the seed.
   */
  @FunctionalInterface
  public interface Latency {

    /** The delay of one call; {@link Duration#ZERO} for none. */
    Duration delay(Random random);

    /** No delay. */
    static Latency none() {
      return random -> Duration.ZERO;
    }

    /** The same delay for every call. */
    static Latency fixed(Duration delay) {
      requireNonNegative(delay, "delay");
      return random -> delay;
    }

    /**
     * Log-normal delays with median {@code p50}; {@code sigma} is the standard deviation of the
     * logarithm (with 1.0 the 99th percentile is about ten times the median).
     */
    static Latency lognormal(Duration p50, double sigma) {
      requireNonNegative(p50, "p50");
      if (!(sigma >= 0)) {
        throw new IllegalArgumentException("sigma must be >= 0, was " + sigma);
      }
      long medianNanos = p50.toNanos();
      return random ->
          Duration.ofNanos(Math.round(medianNanos * Math.exp(sigma * random.nextGaussian())));
    }

    /**
     * Heavy-tailed delays like an object store's: log-normal with median {@code p50} and sigma 1.0,
     * except that with probability {@code stallProbability} the call stalls for a duration drawn
     * uniformly from [{@code minStall}, {@code maxStall}] instead.
     */
    static Latency heavyTailed(
        Duration p50, double stallProbability, Duration minStall, Duration maxStall) {
      requireProbability(stallProbability, "stallProbability");
      requireNonNegative(minStall, "minStall");
      if (maxStall.compareTo(minStall) < 0) {
        throw new IllegalArgumentException(
            "maxStall " + maxStall + " is shorter than minStall " + minStall);
      }
      Latency body = lognormal(p50, 1.0);
      long spanNanos = maxStall.minus(minStall).toNanos();
      return random -> {
        Duration usual = body.delay(random);
        if (random.nextDouble() >= stallProbability) {
          return usual;
        }
        return minStall.plusNanos((long) (random.nextDouble() * spanNanos));
      };
    }
  }

  /**
   * Blocks the calls of one kind whose name matches a predicate until {@link #release()}. Made by
   * {@link FaultInjectingStorage#stall}.
   */
  public static final class Stall {
    private final CallKind kind;
    private final Predicate<String> names;
    private final List<Stall> active;
    private final CountDownLatch released = new CountDownLatch(1);
    private int blockedCalls; // guarded by this

    private Stall(CallKind kind, Predicate<String> names, List<Stall> active) {
      this.kind = kind;
      this.names = names;
      this.active = active;
    }

    /** Lets every blocked call and every later matching call through. Idempotent. */
    public void release() {
      released.countDown();
      active.remove(this);
    }

    /** How many calls have blocked on this stall so far, including ones since released. */
    public synchronized int blockedCalls() {
      return blockedCalls;
    }

    /**
     * Waits until at least {@code calls} calls have blocked on this stall.
     *
     * @return false if {@code timeout} passed first
     */
    public synchronized boolean awaitBlocked(int calls, Duration timeout)
        throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (blockedCalls < calls) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
      return true;
    }

    private boolean blocks(Call call) {
      return call.kind() == kind && released.getCount() > 0 && names.test(call.name());
    }

    private void block(Call call) {
      synchronized (this) {
        blockedCalls++;
        notifyAll();
      }
      try {
        released.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RetryableException("Interrupted while stalled (injected) in " + call, e);
      }
    }
  }

  /**
   * Starts configuring a wrapper of {@code delegate} whose random faults are drawn from {@code
   * seed}. With no further settings it injects nothing until told to.
   */
  public static Builder builder(Storage delegate, long seed) {
    return new Builder(delegate, seed);
  }

  /** Rule-based fault settings; every probability is per call and 0 unless set. */
  public static final class Builder {
    private final Storage delegate;
    private final long seed;
    private final double[] errorBefore = new double[CallKind.values().length];
    private final double[] errorAfter = new double[CallKind.values().length];
    private double tornWrite;
    private final Latency[] latency = new Latency[CallKind.values().length];

    private Builder(Storage delegate, long seed) {
      this.delegate = Objects.requireNonNull(delegate, "delegate");
      this.seed = seed;
      Arrays.fill(latency, Latency.none());
    }

    /** Fails calls of {@code kind} before the delegate with {@code probability}. */
    public Builder errorBefore(CallKind kind, double probability) {
      errorBefore[kind.ordinal()] = requireProbability(probability, "errorBefore");
      return this;
    }

    /** Fails calls of {@code kind} after the delegate took the call, with {@code probability}. */
    public Builder errorAfter(CallKind kind, double probability) {
      errorAfter[kind.ordinal()] = requireProbability(probability, "errorAfter");
      return this;
    }

    /** Tears creates with {@code probability}: only a prefix of the content is published. */
    public Builder tornWrite(double probability) {
      tornWrite = requireProbability(probability, "tornWrite");
      return this;
    }

    /** Delays every call by a draw from {@code latency}. */
    public Builder latency(Latency latency) {
      Objects.requireNonNull(latency, "latency");
      Arrays.fill(this.latency, latency);
      return this;
    }

    /** Delays calls of {@code kind} by a draw from {@code latency}, overriding the default. */
    public Builder latency(CallKind kind, Latency latency) {
      this.latency[kind.ordinal()] = Objects.requireNonNull(latency, "latency");
      return this;
    }

    public FaultInjectingStorage build() {
      return new FaultInjectingStorage(this);
    }
  }

  private final Storage delegate;
  private final long seed;

  /** Which call gets which fault, and the record of calls and faults. */
  private final FaultSchedule schedule;

  private final List<Stall> stalls = new CopyOnWriteArrayList<>();
  private volatile boolean crashed;

  private FaultInjectingStorage(Builder builder) {
    this.delegate = builder.delegate;
    this.seed = builder.seed;
    this.schedule =
        new FaultSchedule(
            builder.seed,
            builder.errorBefore,
            builder.errorAfter,
            builder.tornWrite,
            builder.latency);
  }

  /** The wrapped storage, to inspect what really got written. */
  public Storage delegate() {
    return delegate;
  }

  // ---- scripted faults, crash and stalls ----

  /**
   * Fails the call with global index {@code callIndex} before it reaches the delegate, with {@link
   * RetryableException}. Use {@link #callCount()} for the index of the next call; an index already
   * passed is never reached.
   */
  public void failBefore(long callIndex) {
    schedule.failBefore(callIndex);
  }

  /**
   * Lets the call with global index {@code callIndex} take effect at the delegate, then fails it as
   * if its reply was lost (see the class comment for which exception).
   */
  public void failAfter(long callIndex) {
    schedule.failAfter(callIndex);
  }

  /**
   * Fails the next call of {@code kind} on {@code name} (for {@link CallKind#LIST}, the prefix)
   * before it reaches the delegate, with {@link RetryableException}. One call only.
   */
  public void failBefore(CallKind kind, String name) {
    schedule.failBefore(Objects.requireNonNull(kind, "kind"), name);
  }

  /**
   * Lets the next call of {@code kind} on {@code name} take effect at the delegate, then fails it
   * as if its reply was lost (see the class comment for which exception). One call only.
   */
  public void failAfter(CallKind kind, String name) {
    schedule.failAfter(Objects.requireNonNull(kind, "kind"), name);
  }

  /**
   * Tears the next create of {@code name}: only a strictly shorter prefix of its content is
   * published, then it throws {@link OutcomeUnknownException} (empty content cannot be torn).
   */
  public void tearCreate(String name) {
    schedule.tearCreate(Objects.requireNonNull(name, "name"));
  }

  /**
   * Tears the next create whose name matches {@code names} (for names not known in advance, such as
   * a segment's), as {@link #tearCreate(String)} does. One create only.
   */
  public void tearCreate(Predicate<String> names) {
    schedule.tearCreate(Objects.requireNonNull(names, "names"));
  }

  /**
   * Tears the next append to a file whose name matches {@code names}: only a strictly shorter
   * prefix of its bytes is appended, then it throws {@link OutcomeUnknownException} and the file is
   * closed for appends. One append only.
   */
  public void tearAppend(Predicate<String> names) {
    schedule.tearAppend(Objects.requireNonNull(names, "names"));
  }

  /** From now on every call fails without reaching the delegate, until {@link #recover()}. */
  public void crash() {
    crashed = true;
  }

  /** Ends {@link #crash()}: later calls reach the delegate again. */
  public void recover() {
    crashed = false;
  }

  /**
   * Blocks the later calls of {@code kind} whose name (for {@link CallKind#LIST}, the prefix)
   * matches {@code names}, just before they reach the delegate, until the returned stall is
   * released. A call that wakes up to find the storage crashed fails without reaching it.
   */
  public Stall stall(CallKind kind, Predicate<String> names) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(names, "names");
    Stall stall = new Stall(kind, names, stalls);
    stalls.add(stall);
    return stall;
  }

  // ---- observation ----

  /** The number of calls so far, which is also the index the next call will get. */
  public long callCount() {
    return schedule.callCount();
  }

  /** The number of calls of {@code kind} so far. */
  public long callCount(CallKind kind) {
    return schedule.callCount(kind);
  }

  /** Every call so far, in index order. */
  public List<Call> calls() {
    return schedule.calls();
  }

  /** How many faults of each kind were injected so far (every kind present, zero if none). */
  public Map<FaultKind, Long> injectedFaults() {
    return schedule.injectedFaults();
  }

  // ---- Storage ----

  @Override
  public void create(String name, ContentWriter content) {
    Plan plan = beforeCall(CallKind.CREATE, name);
    if (plan.torn()) {
      createTorn(plan, content);
      return;
    }
    delegate.create(name, content);
    afterCall(plan, null);
  }

  @Override
  public boolean appendSupported() {
    return delegate instanceof SupportsAppend a && a.appendSupported();
  }

  @Override
  public AppendableFile createAppendable(String name) {
    if (!appendSupported()) {
      throw new UnsupportedException(delegate.describe() + " cannot append");
    }
    Plan plan = beforeCall(CallKind.CREATE, name);
    AppendableFile file = ((SupportsAppend) delegate).createAppendable(name);
    try {
      afterCall(plan, null);
    } catch (RuntimeException e) {
      file.close();
      throw e;
    }
    return new FaultyAppendableFile(file);
  }

  @Override
  public void fence(String name) {
    if (!appendSupported()) {
      throw new UnsupportedException(delegate.describe() + " cannot append");
    }
    ((SupportsAppend) delegate).fence(name);
  }

  /** An appendable file of the delegate whose appends are calls of this wrapper. */
  private final class FaultyAppendableFile implements AppendableFile {
    private final AppendableFile file;

    FaultyAppendableFile(AppendableFile file) {
      this.file = file;
    }

    @Override
    public String name() {
      return file.name();
    }

    /**
     * Synchronized, as a real file's append is: an append stalled here (a pipeline that does not
     * answer) holds the file, and the next append waits behind it.
     */
    @Override
    public synchronized long append(byte[] bytes) {
      if (!file.isOpen()) {
        throw new IllegalStateException(file.name() + " is closed for appends");
      }
      Plan plan;
      try {
        plan = beforeCall(CallKind.APPEND, file.name());
      } catch (RuntimeException e) {
        file.close(); // an append that fails closes the file, even before writing anything
        throw e;
      }
      if (plan.torn() && bytes.length > 0) {
        int kept = (int) (plan.tornFraction() * bytes.length);
        file.append(Arrays.copyOf(bytes, kept));
        file.close();
        count(FaultKind.TORN_WRITE);
        throw new OutcomeUnknownException(
            "injected torn write in "
                + plan.call()
                + ": appended "
                + kept
                + " of "
                + bytes.length
                + " bytes");
      }
      long offset = file.append(bytes);
      try {
        afterCall(plan, null);
      } catch (RuntimeException e) {
        file.close();
        throw e;
      }
      return offset;
    }

    @Override
    public long length() {
      return file.length();
    }

    @Override
    public boolean isOpen() {
      return file.isOpen();
    }

    @Override
    public void close() {
      file.close();
    }
  }

  @Override
  public InputStream open(String name) {
    Plan plan = beforeCall(CallKind.OPEN, name);
    InputStream in = delegate.open(name);
    afterCall(plan, in);
    return in;
  }

  @Override
  public boolean delete(String name) {
    Plan plan = beforeCall(CallKind.DELETE, name);
    boolean existed = delegate.delete(name);
    afterCall(plan, null);
    return existed;
  }

  @Override
  public List<FileInfo> list(String prefix) {
    Plan plan = beforeCall(CallKind.LIST, prefix);
    List<FileInfo> files = delegate.list(prefix);
    afterCall(plan, null);
    return files;
  }

  @Override
  public String describe() {
    return delegate.describe();
  }

  /** Does nothing: the delegate belongs to whoever created it. */
  @Override
  public void close() {}

  @Override
  public String toString() {
    return "FaultInjectingStorage[seed=" + seed + ", " + delegate + "]";
  }

  // ---- injection ----

  private Plan beforeCall(CallKind kind, String name) {
    Plan plan = schedule.plan(kind, name);
    rejectIfCrashed(plan);
    if (plan.latency().compareTo(Duration.ZERO) > 0) {
      count(FaultKind.LATENCY);
      sleep(plan);
    }
    for (Stall stall : stalls) {
      if (stall.blocks(plan.call())) {
        count(FaultKind.STALL);
        stall.block(plan.call());
      }
    }
    // Checked again: the process may have died while this call was delayed or stalled.
    rejectIfCrashed(plan);
    if (plan.errorBefore()) {
      count(FaultKind.ERROR_BEFORE);
      throw new RetryableException("injected fault before " + plan.call());
    }
    return plan;
  }

  private void afterCall(Plan plan, Closeable result) {
    if (crashed) {
      count(FaultKind.CRASHED);
      discard(result);
      throw lostReply(plan, "injected crash during " + plan.call() + " (it reached the storage)");
    }
    if (plan.errorAfter()) {
      count(FaultKind.ERROR_AFTER);
      discard(result);
      throw lostReply(plan, "injected fault after " + plan.call() + " (it took effect)");
    }
  }

  private void createTorn(Plan plan, ContentWriter content) {
    String name = plan.call().name();
    byte[] full = buffer(name, content);
    if (full.length == 0) {
      delegate.create(name, ContentWriter.ofBytes(full));
      afterCall(plan, null);
      return;
    }
    int kept = (int) (plan.tornFraction() * full.length); // in [0, length - 1]
    delegate.create(name, out -> out.write(full, 0, kept));
    count(FaultKind.TORN_WRITE);
    throw new OutcomeUnknownException(
        "injected torn write in "
            + plan.call()
            + ": published "
            + kept
            + " of "
            + full.length
            + " bytes");
  }

  private byte[] buffer(String name, ContentWriter content) {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    try {
      content.writeTo(buffer);
    } catch (StreamStateException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      throw new RetryableException(
          "Cannot write " + describe() + "/" + name + ": " + e + " (nothing was published)", e);
    }
    return buffer.toByteArray();
  }

  private void rejectIfCrashed(Plan plan) {
    if (crashed) {
      count(FaultKind.CRASHED);
      throw new RetryableException(
          "injected crash: " + plan.call() + " rejected until recover() (storage is crashed)");
    }
  }

  private static StreamStateException lostReply(Plan plan, String message) {
    return plan.call().kind().mutates()
        ? new OutcomeUnknownException(message)
        : new RetryableException(message);
  }

  private static void discard(Closeable result) {
    if (result != null) {
      try {
        result.close();
      } catch (IOException e) {
        // The call is failing anyway; the injected error is what the caller must see.
      }
    }
  }

  private void sleep(Plan plan) {
    try {
      TimeUnit.NANOSECONDS.sleep(plan.latency().toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RetryableException("Interrupted during injected latency of " + plan.call(), e);
    }
  }

  private void count(FaultKind kind) {
    schedule.count(kind);
  }

  static double requireProbability(double probability, String what) {
    if (!(probability >= 0 && probability <= 1)) {
      throw new IllegalArgumentException(
          what + " probability must be in [0, 1], was " + probability);
    }
    return probability;
  }

  static void requireNonNegative(Duration duration, String what) {
    if (duration.isNegative()) {
      throw new IllegalArgumentException(what + " must not be negative, was " + duration);
    }
  }
}
