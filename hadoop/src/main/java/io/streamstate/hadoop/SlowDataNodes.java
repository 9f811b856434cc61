package io.streamstate.hadoop;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.config.ConfigValues;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this process knows of the DataNodes of one cluster: which ones are <em>suspect</em> (a write
 * through them was late, recently) and which ones are <em>known</em> to work (a write through them
 * completed, recently), and from that, where to create files while some are suspect
 * (docs/protocol.md, "Slow DataNodes").
 *
 * <ol>
 *   <li><b>d1 Suspect.</b> When a write is late (its hedge is about to start), every DataNode of
 *       its pipeline becomes suspect for {@value #SUSPECT_MILLIS_KEY} (default {@value
 *       #DEFAULT_SUSPECT_MILLIS} ms) from that report: we cannot tell which of them is slow, and
 *       the slow one is slow for a while (a busy disk, a GC pause, a failing NIC: seconds to tens
 *       of seconds). A later report extends the suspicion and counts once more against each node.
 *   <li><b>d1' Noise.</b> A write reported late whose {@code hsync} returns within {@value
 *       #NOISE_MILLIS} ms of its report was late by scheduling noise (a busy executor past a tight
 *       hedge deadline), not held by a DataNode: its report is withdrawn, and a DataNode left with
 *       no report stops being suspect. Without this, noise on a busy executor kept healthy
 *       DataNodes suspect and pinned every new file to the others, the slow one among them when it
 *       came.
 *   <li><b>d2 Known.</b> When a write's {@code hsync} returns, the DataNodes of its pipeline are
 *       known to work, for {@value #KNOWN_MILLIS} ms from then. Suspicion is not lifted by that (a
 *       late write completes too, once the slow node gets to it): only time lifts it, or d1'.
 *   <li><b>d3 Favoured nodes.</b> While any DataNode is suspect, new files are created on {@code
 *       replication} favoured DataNodes picked at random among the known ones that are not suspect,
 *       so that a hedge copy and the next journal go elsewhere than the late write. If too few are
 *       known, the rest are suspects: first those not reported in the last {@value
 *       #FRESH_REPORT_MILLIS} ms, reported least often first; then fresh ones named less often than
 *       the most named fresh one (the slow node is in every late pipeline of a period, its
 *       neighbours only in some). Fresh suspects named equally often (the three of one late
 *       pipeline) are never favoured: a hedge of that write would meet its slow node again. What is
 *       still short, the file system places as usual. With no suspect, files are placed as usual
 *       (local and rack-aware).
 *   <li><b>d6 Dropped</b> (docs/protocol.md numbering). When a DataNode leaves the pipeline of an
 *       open file between two of its completed {@code hsync}s, HDFS's pipeline recovery removed it:
 *       it failed (died, or its disk or network did). It is no longer known to work and becomes
 *       suspect, as after a late write, so that new files are not favoured onto it (the NameNode
 *       itself keeps placing replicas on a dead DataNode until it misses its heartbeats for 10
 *       minutes, and each such block's pipeline setup fails and is retried elsewhere). A new block
 *       of the file between the two syncs changes the pipeline too: its nodes that are not in the
 *       new block's pipeline are then avoided for the window though healthy, which costs placement
 *       choice, nothing else.
 * </ol>
 *
 * <p>One instance per cluster (file system scheme and authority) per {@link ProcessResources}
 * owner, shared by every storage and checkpoint file manager on it ({@link #of(FileSystem,
 * ProcessResources)}); tests make their own with {@link #SlowDataNodes(long, LongSupplier)}.
 * Thread-safe; the calls on the write path ({@link #recordWorking}, and the others while nothing is
 * suspect) take no lock shared with other writers.
 */
public final class SlowDataNodes {
  private static final Logger LOG = LoggerFactory.getLogger(SlowDataNodes.class);

  /**
   * The Hadoop setting for how long a DataNode stays suspect after a late write through it, in ms
   * or with Spark's time suffixes ("90s"); 0 turns the tracking off (files are placed as usual).
   * Read from the file system's configuration when the cluster is first used in the process.
   */
  public static final String SUSPECT_MILLIS_KEY = "streamstate.datanode.suspectMs";

  /**
   * Long enough to outlast a slow period (5-20 s in the slow-DataNode model we plan for, with GC
   * pauses of tens of seconds), short enough to give a DataNode back soon after: avoiding one node
   * for a minute costs this process only the spread of its new files over one node fewer.
   */
  public static final long DEFAULT_SUSPECT_MILLIS = 60_000;

  /**
   * How long a DataNode stays known after a write through it completed: one not seen since may be
   * gone (decommissioned, dead), and a favoured node the NameNode does not know makes it pick one
   * at random, possibly a suspect.
   */
  public static final long KNOWN_MILLIS = 600_000;

  /**
   * A write reported late that completes within this long of its report was late by scheduling
   * noise (a busy executor past a tight hedge deadline), not held by a DataNode: its report is
   * withdrawn (d1'). A DataNode that holds a pipeline holds it for seconds.
   */
  public static final long NOISE_MILLIS = 1_000;

  /**
   * A suspect reported within this long is <em>fresh</em>: likelier held by a slow period now than
   * one reported earlier (periods last seconds). Fresh suspects named equally often cannot be told
   * apart (one late pipeline names its slow node and two healthy ones once each), so d3 never fills
   * a new file with them: a hedge of that late write would meet its slow node again.
   */
  public static final long FRESH_REPORT_MILLIS = 5_000;

  /** The tracking of each cluster (scheme and authority), a component of a process's owner. */
  private static final class ByCluster {
    final Map<String, SlowDataNodes> clusters = new ConcurrentHashMap<>();
  }

  private final long suspectMillis;
  private final LongSupplier clock;

  /** Last time each known DataNode's write completed (d2). */
  private final Map<String, Long> lastWorked = new ConcurrentHashMap<>();

  /** The suspects (d1), guarded by this. */
  private final Map<String, Suspicion> suspects = new HashMap<>();

  /** Whether {@link #suspects} may be non-empty: the lock-free fast path of the write path. */
  private volatile boolean anySuspects;

  private static final class Suspicion {
    long untilMillis;
    long lastReportMillis;
    int reports;
  }

  /**
   * Tracking of its own (tests, tools): suspects stay for {@code suspectMillis} (0: tracking off),
   * time from {@code clock} (ms).
   */
  public SlowDataNodes(long suspectMillis, LongSupplier clock) {
    if (suspectMillis < 0) {
      throw new IllegalArgumentException("suspectMillis must not be negative: " + suspectMillis);
    }
    this.suspectMillis = suspectMillis;
    this.clock = clock;
  }

  /**
   * The tracking of {@code fs}'s cluster in this process ({@link ProcessResources#shared()}):
   * {@link #of(FileSystem, ProcessResources)}.
   */
  public static SlowDataNodes of(FileSystem fs) {
    return of(fs, ProcessResources.shared());
  }

  /**
   * The tracking of {@code fs}'s cluster held by {@code resources} (one per scheme and authority),
   * made on first use with the window of {@value #SUSPECT_MILLIS_KEY} in {@code fs}'s
   * configuration.
   */
  public static SlowDataNodes of(FileSystem fs, ProcessResources resources) {
    URI uri = fs.getUri();
    String cluster =
        uri.getScheme() + "://" + (uri.getAuthority() == null ? "" : uri.getAuthority());
    return resources
        .component(ByCluster.class, ByCluster::new)
        .clusters
        .computeIfAbsent(
            cluster,
            c -> {
              Configuration conf = fs.getConf();
              String value = conf == null ? null : conf.get(SUSPECT_MILLIS_KEY);
              long window =
                  value == null || value.isBlank()
                      ? DEFAULT_SUSPECT_MILLIS
                      : ConfigValues.parseMillis(SUSPECT_MILLIS_KEY, value);
              return new SlowDataNodes(Math.max(0, window), System::currentTimeMillis);
            });
  }

  /** Whether tracking is on (a window above 0). */
  public boolean enabled() {
    return suspectMillis > 0;
  }

  /** How long a DataNode stays suspect after a late write through it, in ms. */
  public long suspectMillis() {
    return suspectMillis;
  }

  /** d1: a write through {@code pipeline} is late; each of its DataNodes becomes suspect. */
  public void suspect(Collection<String> pipeline) {
    if (!enabled() || pipeline.isEmpty()) {
      return;
    }
    List<String> fresh = addSuspicion(pipeline);
    if (!fresh.isEmpty()) {
      LOG.info(
          "DataNodes {} suspected slow for {} ms: a write through {} was late; new files avoid them",
          fresh,
          suspectMillis,
          pipeline);
    }
  }

  /**
   * d6: pipeline recovery removed {@code nodes} from an open file's pipeline (they failed): they
   * are no longer known to work, and are suspect for the window, so that new files avoid them.
   */
  public void dropped(Collection<String> nodes) {
    if (!enabled() || nodes.isEmpty()) {
      return;
    }
    nodes.forEach(lastWorked::remove);
    addSuspicion(nodes);
    LOG.warn(
        "DataNodes {} left the write pipeline of an open file (pipeline recovery: they failed);"
            + " new files avoid them for {} ms",
        nodes,
        suspectMillis);
  }

  /** Makes each of {@code pipeline} suspect for the window from now; returns the new suspects. */
  private List<String> addSuspicion(Collection<String> pipeline) {
    long now = clock.getAsLong();
    long until = now + suspectMillis;
    List<String> fresh = new ArrayList<>();
    synchronized (this) {
      for (String node : pipeline) {
        Suspicion s = suspects.get(node);
        if (s == null) {
          s = new Suspicion();
          suspects.put(node, s);
          fresh.add(node);
        }
        s.untilMillis = Math.max(s.untilMillis, until);
        s.lastReportMillis = now;
        s.reports++;
      }
      anySuspects = true;
    }
    return fresh;
  }

  /**
   * d1': a write whose lateness was reported at {@code reportedAtMillis} (this tracking's clock,
   * {@link #nowMillis}) completed through {@code pipeline}. If that was within {@link
   * #NOISE_MILLIS}, the report is withdrawn: each of its DataNodes loses one report, and stops
   * being suspect when it has none left. Otherwise nothing changes (a stall's suspicion runs its
   * time).
   */
  public void lateWriteCompleted(Collection<String> pipeline, long reportedAtMillis) {
    if (!enabled() || pipeline.isEmpty()) {
      return;
    }
    if (clock.getAsLong() - reportedAtMillis >= NOISE_MILLIS) {
      return;
    }
    synchronized (this) {
      for (String node : pipeline) {
        Suspicion s = suspects.get(node);
        if (s != null && --s.reports <= 0) {
          suspects.remove(node);
        }
      }
      anySuspects = !suspects.isEmpty();
    }
  }

  /** This tracking's clock, in ms. */
  public long nowMillis() {
    return clock.getAsLong();
  }

  /** d2: a write through {@code pipeline} completed; its DataNodes are known to work. */
  public void recordWorking(Collection<String> pipeline) {
    if (!enabled() || pipeline.isEmpty()) {
      return;
    }
    long now = clock.getAsLong();
    for (String node : pipeline) {
      lastWorked.put(node, now);
    }
  }

  /** Whether any DataNode of {@code pipeline} is suspect now. */
  public boolean anySuspect(Collection<String> pipeline) {
    if (!anySuspects || pipeline.isEmpty()) {
      return false;
    }
    synchronized (this) {
      expire(clock.getAsLong());
      for (String node : pipeline) {
        if (suspects.containsKey(node)) {
          return true;
        }
      }
      return false;
    }
  }

  /**
   * Whether a file writing through {@code pipeline} should move to a new one: the pipeline holds a
   * suspect, and as many known DataNodes as it has are not suspect, so that a new file can be
   * placed away from every suspect (d3). On a cluster too small for that (one DataNode, say), a new
   * file would meet the suspects again: staying costs less than moving.
   */
  public boolean isAvoidable(Collection<String> pipeline) {
    if (!anySuspects || pipeline.isEmpty()) {
      return false;
    }
    long now = clock.getAsLong();
    synchronized (this) {
      expire(now);
      if (pipeline.stream().noneMatch(suspects::containsKey)) {
        return false;
      }
      int healthy = 0;
      for (Map.Entry<String, Long> known : lastWorked.entrySet()) {
        if (now - known.getValue() <= KNOWN_MILLIS && !suspects.containsKey(known.getKey())) {
          healthy++;
        }
      }
      return healthy >= pipeline.size();
    }
  }

  /**
   * d3: the DataNodes to favour for a new file of {@code replication} replicas, or an empty list
   * when nothing is suspect or nothing better than the file system's own choice is known. Fewer
   * than {@code replication} when that is all that is known to be better: the file system places
   * the other replicas as usual.
   */
  public List<String> favoredNodes(int replication) {
    if (!anySuspects || replication <= 0) {
      return List.of();
    }
    long now = clock.getAsLong();
    List<String> healthy = new ArrayList<>();
    List<Map.Entry<String, Integer>> stale = new ArrayList<>();
    List<Map.Entry<String, Integer>> fresh = new ArrayList<>();
    synchronized (this) {
      expire(now);
      if (suspects.isEmpty()) {
        return List.of();
      }
      for (Map.Entry<String, Long> known : lastWorked.entrySet()) {
        if (now - known.getValue() <= KNOWN_MILLIS && !suspects.containsKey(known.getKey())) {
          healthy.add(known.getKey());
        }
      }
      suspects.forEach(
          (node, s) ->
              (now - s.lastReportMillis < FRESH_REPORT_MILLIS ? fresh : stale)
                  .add(Map.entry(node, s.reports)));
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();
    Collections.shuffle(healthy, random);
    List<String> favored = new ArrayList<>(replication);
    fill(favored, healthy, replication);
    // Too few known healthy: first the suspects not reported lately (their period is likelier
    // over), reported least often first; then fresh ones named less often than the most named,
    // which is the slow one (it is in every late pipeline of a period, each neighbour only in
    // some). Fresh ones named equally often are never taken (see FRESH_REPORT_MILLIS).
    fill(favored, leastReportedFirst(stale, random), replication);
    int mostReported = fresh.stream().mapToInt(Map.Entry::getValue).max().orElse(0);
    fresh.removeIf(e -> e.getValue() >= mostReported);
    fill(favored, leastReportedFirst(fresh, random), replication);
    return List.copyOf(favored);
  }

  private static void fill(List<String> favored, List<String> candidates, int replication) {
    for (Iterator<String> it = candidates.iterator();
        it.hasNext() && favored.size() < replication; ) {
      favored.add(it.next());
    }
  }

  private static List<String> leastReportedFirst(
      List<Map.Entry<String, Integer>> suspects, ThreadLocalRandom random) {
    Collections.shuffle(suspects, random); // ties in random order
    suspects.sort(Comparator.comparingInt(Map.Entry::getValue));
    return suspects.stream().map(Map.Entry::getKey).toList();
  }

  /** The suspect DataNodes now. */
  public synchronized Set<String> suspects() {
    expire(clock.getAsLong());
    return Collections.unmodifiableSet(new TreeSet<>(suspects.keySet()));
  }

  /** The DataNodes known to work now (suspect or not). */
  public Set<String> known() {
    long now = clock.getAsLong();
    Set<String> known = new TreeSet<>();
    lastWorked.forEach(
        (node, at) -> {
          if (now - at <= KNOWN_MILLIS) {
            known.add(node);
          }
        });
    return Collections.unmodifiableSet(known);
  }

  /** Lifts the suspicions whose time is over; holds the monitor. */
  private void expire(long now) {
    suspects.values().removeIf(s -> s.untilMillis <= now);
    anySuspects = !suspects.isEmpty();
  }

  @Override
  public String toString() {
    return "SlowDataNodes[suspects=" + suspects() + ", known=" + known() + "]";
  }
}
