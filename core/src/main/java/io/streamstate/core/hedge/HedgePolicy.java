package io.streamstate.core.hedge;

import java.time.Duration;
import java.util.Arrays;

/**
 * When a durable write is hedged, and how many hedges are allowed. One instance per process (a
 * Spark executor), shared by every store and every {@link HedgedWriter}: the latency it learns and
 * the budget it enforces are those of the storage as this process sees it. Thread-safe.
 *
 * <h2>Deadline</h2>
 *
 * A write that has not completed {@link #deadline()} after it started is hedged. The deadline is
 * {@code max(floor, multiplier × p)} where {@code p} is the {@code percentile} of the latencies of
 * the last {@code window} successful creates ({@link #recordLatency}); until {@code minSamples} are
 * known it is {@code max(floor, initialDeadline)}. The floor keeps a fast, steady store from
 * hedging on scheduling noise.
 *
 * <h2>Budget</h2>
 *
 * A token bucket: every write earns {@code budgetFraction} tokens ({@link #recordWrite()}), up to
 * {@code budgetBurst}; a hedge spends one ({@link #tryAcquireHedge()}). Over time at most about
 * {@code budgetFraction} of writes are hedged, however slow the storage gets, so that hedging
 * cannot double the load on a store that is slow because it is overloaded. The bucket starts full.
 *
 * <h2>Reserve for stalls</h2>
 *
 * Hedges that scheduling noise makes (a busy executor past a tight deadline) spend the same tokens
 * as hedges of writes stuck behind a slow DataNode, so a stall may find the bucket empty. A second,
 * smaller bucket is kept for that: every write also earns {@code reserveFraction} tokens, up to
 * {@code reserveBurst}; a write still running {@code stalledAfter} after it started, and not hedged
 * because the budget was spent, is hedged with a reserve token ({@link #tryAcquireReserve()}). No
 * noise lasts that long, so the reserve is there when a write is really stuck; it still bounds the
 * hedges of a store that is slow for everyone. Its burst covers the writes one slow DataNode holds
 * at once (a stage's output files, say).
 *
 * <h2>Defaults</h2>
 *
 * <table>
 *   <caption>Settings ({@link Builder}); the Spark adapter will map its configuration onto them</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>enabled ({@link Builder#disable()})</td><td>on</td></tr>
 *   <tr><td>{@link Builder#floor floor}</td><td>20 ms</td></tr>
 *   <tr><td>{@link Builder#initialDeadline initialDeadline}</td><td>200 ms</td></tr>
 *   <tr><td>{@link Builder#multiplier multiplier}</td><td>1.5</td></tr>
 *   <tr><td>{@link Builder#percentile percentile}</td><td>0.95</td></tr>
 *   <tr><td>{@link Builder#window window}</td><td>256 samples</td></tr>
 *   <tr><td>{@link Builder#minSamples minSamples}</td><td>20</td></tr>
 *   <tr><td>{@link Builder#budgetFraction budgetFraction}</td><td>0.05</td></tr>
 *   <tr><td>{@link Builder#budgetBurst budgetBurst}</td><td>5 tokens</td></tr>
 *   <tr><td>{@link Builder#stalledAfter stalledAfter}</td><td>1 s</td></tr>
 *   <tr><td>{@link Builder#reserveFraction reserveFraction}</td><td>0.01</td></tr>
 *   <tr><td>{@link Builder#reserveBurst reserveBurst}</td><td>8 tokens</td></tr>
 * </table>
 */
public final class HedgePolicy {

  /** Settings of a {@link HedgePolicy}; every one has the default listed in the class comment. */
  public static final class Builder {
    private boolean enabled = true;
    private Duration floor = Duration.ofMillis(20);
    private Duration initialDeadline = Duration.ofMillis(200);
    private double multiplier = 1.5;
    private double percentile = 0.95;
    private int window = 256;
    private int minSamples = 20;
    private double budgetFraction = 0.05;
    private double budgetBurst = 5;
    private Duration stalledAfter = Duration.ofSeconds(1);
    private double reserveFraction = 0.01;
    private double reserveBurst = 8;

    private Builder() {}

    /** Turns hedging off: every write is one plain create of its primary name. */
    public Builder disable() {
      enabled = false;
      return this;
    }

    /** The smallest deadline ever used (at least zero). */
    public Builder floor(Duration value) {
      floor = value;
      return this;
    }

    /** The deadline until {@code minSamples} latencies are known (never below the floor). */
    public Builder initialDeadline(Duration value) {
      initialDeadline = value;
      return this;
    }

    /** The factor applied to the latency percentile (at least 1). */
    public Builder multiplier(double value) {
      multiplier = value;
      return this;
    }

    /** Which latency percentile the deadline follows, in (0, 1]. */
    public Builder percentile(double value) {
      percentile = value;
      return this;
    }

    /** How many of the most recent latencies are kept (at least 1). */
    public Builder window(int value) {
      window = value;
      return this;
    }

    /** How many latencies must be known before the deadline follows them (1 to window). */
    public Builder minSamples(int value) {
      minSamples = value;
      return this;
    }

    /** The tokens each write earns, in [0, 1]: about the largest share of writes hedged. */
    public Builder budgetFraction(double value) {
      budgetFraction = value;
      return this;
    }

    /** The most tokens the bucket holds (and holds at start), at least 1: hedges in a burst. */
    public Builder budgetBurst(double value) {
      budgetBurst = value;
      return this;
    }

    /** How long a write runs before it counts as stalled, and may hedge from the reserve (> 0). */
    public Builder stalledAfter(Duration value) {
      stalledAfter = value;
      return this;
    }

    /** The reserve tokens each write earns, in [0, 1]. */
    public Builder reserveFraction(double value) {
      reserveFraction = value;
      return this;
    }

    /** The most reserve tokens (held at start too), at least 0; 0 turns the reserve off. */
    public Builder reserveBurst(double value) {
      reserveBurst = value;
      return this;
    }

    /**
     * Builds the policy.
     *
     * @throws IllegalArgumentException a setting is out of its range (the message names it)
     */
    public HedgePolicy build() {
      return new HedgePolicy(this);
    }
  }

  private final boolean enabled;
  private final long floorNanos;
  private final long initialDeadlineNanos;
  private final double multiplier;
  private final double percentile;
  private final int minSamples;
  private final double budgetFraction;
  private final double budgetBurst;
  private final long stalledAfterNanos;
  private final double reserveFraction;
  private final double reserveBurst;
  private final HedgeMetrics metrics = new HedgeMetrics();

  // Ring buffer of the latest latencies, and the deadline derived from it (-1: recompute).
  private final long[] samples; // guarded by this
  private int nextSample; // guarded by this
  private int sampleCount; // guarded by this
  private long deadlineNanos = -1; // guarded by this

  private final Object budgetLock = new Object();
  private double tokens; // guarded by budgetLock
  private double reserveTokens; // guarded by budgetLock

  private HedgePolicy(Builder b) {
    this.enabled = b.enabled;
    this.floorNanos = nonNegative(b.floor, "floor");
    this.initialDeadlineNanos = nonNegative(b.initialDeadline, "initialDeadline");
    if (!(b.multiplier >= 1 && Double.isFinite(b.multiplier))) {
      throw new IllegalArgumentException("multiplier must be >= 1, was " + b.multiplier);
    }
    this.multiplier = b.multiplier;
    if (!(b.percentile > 0 && b.percentile <= 1)) {
      throw new IllegalArgumentException("percentile must be in (0, 1], was " + b.percentile);
    }
    this.percentile = b.percentile;
    if (b.window < 1) {
      throw new IllegalArgumentException("window must be >= 1, was " + b.window);
    }
    if (b.minSamples < 1 || b.minSamples > b.window) {
      throw new IllegalArgumentException(
          "minSamples must be in [1, window=" + b.window + "], was " + b.minSamples);
    }
    this.minSamples = b.minSamples;
    if (!(b.budgetFraction >= 0 && b.budgetFraction <= 1)) {
      throw new IllegalArgumentException(
          "budgetFraction must be in [0, 1], was " + b.budgetFraction);
    }
    this.budgetFraction = b.budgetFraction;
    if (!(b.budgetBurst >= 1 && Double.isFinite(b.budgetBurst))) {
      throw new IllegalArgumentException("budgetBurst must be >= 1, was " + b.budgetBurst);
    }
    this.budgetBurst = b.budgetBurst;
    this.stalledAfterNanos = nonNegative(b.stalledAfter, "stalledAfter");
    if (stalledAfterNanos == 0) {
      throw new IllegalArgumentException("stalledAfter must be > 0, was " + b.stalledAfter);
    }
    if (!(b.reserveFraction >= 0 && b.reserveFraction <= 1)) {
      throw new IllegalArgumentException(
          "reserveFraction must be in [0, 1], was " + b.reserveFraction);
    }
    this.reserveFraction = b.reserveFraction;
    if (!(b.reserveBurst >= 0 && Double.isFinite(b.reserveBurst))) {
      throw new IllegalArgumentException("reserveBurst must be >= 0, was " + b.reserveBurst);
    }
    this.reserveBurst = b.reserveBurst;
    this.samples = new long[b.window];
    this.tokens = b.budgetBurst;
    this.reserveTokens = b.reserveBurst;
  }

  /**
   * A new policy with this one's settings and nothing learnt: no latencies, a full budget, zero
   * counters. For writes of another kind, whose latencies must not move this policy's deadline.
   */
  public HedgePolicy withSameSettings() {
    Builder b =
        builder()
            .floor(Duration.ofNanos(floorNanos))
            .initialDeadline(Duration.ofNanos(initialDeadlineNanos))
            .multiplier(multiplier)
            .percentile(percentile)
            .window(samples.length)
            .minSamples(minSamples)
            .budgetFraction(budgetFraction)
            .budgetBurst(budgetBurst)
            .stalledAfter(Duration.ofNanos(stalledAfterNanos))
            .reserveFraction(reserveFraction)
            .reserveBurst(reserveBurst);
    if (!enabled) {
      b.disable();
    }
    return b.build();
  }

  /** Starts configuring a policy; unset settings take their defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** A policy with every default. */
  public static HedgePolicy defaults() {
    return builder().build();
  }

  /** Whether writes are hedged at all; if not, a publish is one plain create. */
  public boolean isEnabled() {
    return enabled;
  }

  /** The current hedge deadline: how long a write runs alone before it is hedged. */
  public Duration deadline() {
    return Duration.ofNanos(deadlineNanos());
  }

  synchronized long deadlineNanos() {
    if (deadlineNanos < 0) {
      deadlineNanos = computeDeadlineNanos();
    }
    return deadlineNanos;
  }

  private long computeDeadlineNanos() { // holds this
    if (sampleCount < minSamples) {
      return Math.max(floorNanos, initialDeadlineNanos);
    }
    long[] sorted = Arrays.copyOf(samples, sampleCount);
    Arrays.sort(sorted);
    // Nearest rank: the smallest sample with at least this share of samples at or below it.
    int rank = (int) Math.ceil(percentile * sorted.length);
    long quantile = sorted[Math.max(rank, 1) - 1];
    double scaled = multiplier * quantile;
    long deadline = scaled >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) scaled;
    return Math.max(floorNanos, deadline);
  }

  /**
   * Records the latency of one successful create, from its start until it returned. Every copy that
   * succeeds is recorded, late losers too, so that the window sees the real tail and not only the
   * winners (which would pull the deadline ever lower); {@link HedgedWriter} records a loser as
   * slow as its race took, no slower (a loser stuck for seconds would lift the deadline for a whole
   * window).
   */
  public void recordLatency(Duration latency) {
    recordLatencyNanos(latency.toNanos());
  }

  synchronized void recordLatencyNanos(long nanos) {
    samples[nextSample] = Math.max(0, nanos);
    nextSample = (nextSample + 1) % samples.length;
    sampleCount = Math.min(sampleCount + 1, samples.length);
    deadlineNanos = -1;
  }

  /** Counts one write and credits the budget with its share ({@code budgetFraction} tokens). */
  public void recordWrite() {
    metrics.writes.increment();
    synchronized (budgetLock) {
      tokens = Math.min(budgetBurst, tokens + budgetFraction);
      reserveTokens = Math.min(reserveBurst, reserveTokens + reserveFraction);
    }
  }

  /** How long a write runs before it counts as stalled (see "Reserve for stalls"). */
  public Duration stalledAfter() {
    return Duration.ofNanos(stalledAfterNanos);
  }

  long stalledAfterNanos() {
    return stalledAfterNanos;
  }

  /** Whether a stalled write may ever hedge from the reserve (its burst is not 0). */
  boolean hasReserve() {
    return reserveBurst >= 1;
  }

  /**
   * Spends one reserve token, for a write stalled past {@link #stalledAfter()} whose hedge the
   * budget refused.
   *
   * @return false if fewer than one reserve token is left
   */
  public boolean tryAcquireReserve() {
    synchronized (budgetLock) {
      if (reserveTokens < 1) {
        return false;
      }
      reserveTokens -= 1;
      return true;
    }
  }

  /**
   * Spends one budget token for a hedge.
   *
   * @return false if fewer than one token is left: the write must not be hedged
   */
  public boolean tryAcquireHedge() {
    synchronized (budgetLock) {
      if (tokens < 1) {
        return false;
      }
      tokens -= 1;
      return true;
    }
  }

  /** The counters of every write published under this policy. */
  public HedgeMetrics metrics() {
    return metrics;
  }

  @Override
  public String toString() {
    return "HedgePolicy["
        + (enabled ? "enabled" : "disabled")
        + ", floor="
        + Duration.ofNanos(floorNanos)
        + ", initialDeadline="
        + Duration.ofNanos(initialDeadlineNanos)
        + ", multiplier="
        + multiplier
        + ", percentile="
        + percentile
        + ", window="
        + samples.length
        + ", minSamples="
        + minSamples
        + ", budgetFraction="
        + budgetFraction
        + ", budgetBurst="
        + budgetBurst
        + ", stalledAfter="
        + Duration.ofNanos(stalledAfterNanos)
        + ", reserveFraction="
        + reserveFraction
        + ", reserveBurst="
        + reserveBurst
        + "]";
  }

  private static long nonNegative(Duration value, String what) {
    if (value == null || value.isNegative()) {
      throw new IllegalArgumentException(what + " must be a duration >= 0, was " + value);
    }
    return value.toNanos();
  }
}
