package io.streamstate.spark.reliability;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One seeded fault schedule: a deterministic list of faults derived from a seed, each firing at
 * most once, and counters of what actually fired. Storage faults fire in {@link
 * FaultInjectingFileSystem} on the n-th call of one operation on one kind of checkpoint file; task
 * faults fire in {@link TaskFaults} in the first attempt of one task of one batch.
 *
 * <p>The plan in force is a JVM-wide static (Spark instantiates the file system and runs the tasks;
 * in local mode both are in this JVM). Only paths under the plan's root count, so that maintenance
 * of an earlier schedule's stores cannot move this schedule's counters.
 */
final class FaultPlan {
  /** Storage operations that can fail. */
  enum Op {
    CREATE,
    OPEN,
    LIST,
    DELETE,
    /** An {@code hsync} of an open stream: a segment journal's append, or a file's last write. */
    SYNC
  }

  /** Which checkpoint file an operation is on. */
  enum Target {
    CHANGELOG,
    SNAPSHOT,
    SST,
    /** Group commits: segment journals and segment files under {@code state/_segments}. */
    SEGMENTS,
    OFFSETS,
    COMMITS,
    OTHER;

    boolean ours() {
      return this == CHANGELOG || this == SNAPSHOT || this == SST || this == SEGMENTS;
    }

    static Target of(String path) {
      if (path.contains("/state/_segments/") || path.endsWith("/state/_segments")) {
        return SEGMENTS;
      }
      if (path.contains("/state/")) {
        if (path.contains("/changelog/") || path.endsWith("/changelog")) {
          return CHANGELOG;
        }
        if (path.contains("/snapshot/") || path.endsWith("/snapshot")) {
          return SNAPSHOT;
        }
        if (path.contains("/sst/") || path.endsWith("/sst")) {
          return SST;
        }
        return OTHER;
      }
      if (path.contains("/offsets/") || path.endsWith("/offsets")) {
        return OFFSETS;
      }
      if (path.contains("/commits/") || path.endsWith("/commits")) {
        return COMMITS;
      }
      return OTHER;
    }
  }

  /** What a fault does. */
  enum Kind {
    /** The call fails before it does anything. */
    ERROR_BEFORE,
    /** The call does its work, then fails (a create has published its file: "committed, but"). */
    ERROR_AFTER,
    /** A create leaves the first half of its bytes at the name and fails (a writer that died). */
    TORN,
    /** The call waits {@link #STALL_MILLIS} first. */
    STALL,
    /** A task's first attempt fails before its state stores commit. */
    TASK_BEFORE_COMMIT,
    /** A task's first attempt fails after its state stores committed (a completion listener). */
    TASK_AFTER_COMMIT
  }

  static final long STALL_MILLIS = 1500;

  /** A storage fault: the {@code nth} call (1-based) of {@code op} on {@code target}. */
  record StorageFault(Op op, Target target, int nth, Kind kind) {
    @Override
    public String toString() {
      return kind + "@" + op + "#" + nth + "(" + target + ")";
    }
  }

  /** A task fault: first attempt of partition {@code partition} of {@code site} in a batch. */
  record TaskFault(long batch, int partition, String site, Kind kind) {
    @Override
    public String toString() {
      return kind + "@" + site + "/batch" + batch + "/part" + partition;
    }
  }

  private static final Map<String, FaultPlan> ACTIVE_BY_ROOT = new ConcurrentHashMap<>();
  private static final Map<Long, FaultPlan> ACTIVE_BY_SEED = new ConcurrentHashMap<>();

  final long seed;
  final String root;
  final List<StorageFault> storageFaults;
  final List<TaskFault> taskFaults;
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final Map<Object, Boolean> fired = new ConcurrentHashMap<>();
  private final Map<Kind, AtomicLong> injected = new ConcurrentHashMap<>();
  private final Set<TaskFault> provenAfterCommit = ConcurrentHashMap.newKeySet();

  private final Set<TaskFault> preempted = ConcurrentHashMap.newKeySet();
  private final Map<Target, AtomicLong> deleted = new ConcurrentHashMap<>();

  FaultPlan(long seed, String root, List<StorageFault> storage, List<TaskFault> tasks) {
    this.seed = seed;
    this.root = root;
    this.storageFaults = List.copyOf(storage);
    this.taskFaults = List.copyOf(tasks);
  }

  /**
   * The schedule of {@code seed} for a query of {@code batches} data batches and {@code partitions}
   * shuffle partitions, restricted to files under the local path {@code root}.
   */
  static FaultPlan generate(long seed, String root, int batches, int partitions) {
    return generate(seed, root, batches, partitions, false);
  }

  /**
   * As {@link #generate(long, String, int, int)}; with {@code logJournals}, Spark's offset and
   * commit logs are log journals, and their faults are drawn mostly on syncs (each entry is one),
   * torn ones included (a journal record verifies itself).
   */
  static FaultPlan generate(
      long seed, String root, int batches, int partitions, boolean logJournals) {
    Random r = new Random(seed * 0x9E3779B97F4A7C15L + 17);
    List<StorageFault> storage = new ArrayList<>();
    int storageCount = 2 + r.nextInt(4);
    for (int i = 0; i < storageCount; i++) {
      storage.add(randomStorageFault(r, batches, logJournals));
    }
    List<TaskFault> tasks = new ArrayList<>();
    int taskCount = r.nextInt(3);
    for (int i = 0; i < taskCount; i++) {
      tasks.add(
          new TaskFault(
              r.nextInt(batches),
              r.nextInt(partitions),
              r.nextBoolean() ? TaskFaults.SITE_JOIN : TaskFaults.SITE_AGGREGATE,
              r.nextBoolean() ? Kind.TASK_BEFORE_COMMIT : Kind.TASK_AFTER_COMMIT));
    }
    // Every kind in every run of schedules, not only where the draw happens to put it: each seed
    // adds one fault of a kind taken in turn, on a call that happens in every batch (a segment
    // journal's append) or in a join task of the first batches (which always has rows).
    Kind turn = Kind.values()[(int) Math.floorMod(seed, (long) Kind.values().length)];
    if (turn == Kind.TASK_BEFORE_COMMIT || turn == Kind.TASK_AFTER_COMMIT) {
      tasks.add(
          new TaskFault(
              r.nextInt(Math.min(2, batches)), r.nextInt(partitions), TaskFaults.SITE_JOIN, turn));
    } else {
      storage.add(new StorageFault(Op.SYNC, Target.SEGMENTS, 1 + r.nextInt(2 * batches), turn));
    }
    // One task fault per task: a second on the same task would fire on its next row, and a
    // task_before_commit there would turn a task_after_commit into one before the commit. The
    // last drawn stays.
    Map<String, TaskFault> onePerTask = new java.util.LinkedHashMap<>();
    for (TaskFault t : tasks) {
      onePerTask.remove(t.batch() + "/" + t.partition() + "/" + t.site());
      onePerTask.put(t.batch() + "/" + t.partition() + "/" + t.site(), t);
    }
    tasks = new ArrayList<>(onePerTask.values());
    return new FaultPlan(seed, root, storage, tasks);
  }

  private static StorageFault randomStorageFault(Random r, int batches, boolean logJournals) {
    // Only files the query writes: with group commit (the default) commits go to segment
    // journals, never to changelog files, and this query's small snapshots inline their SSTs, so
    // faults drawn on those would never fire (their paths are covered by the engine's tests).
    // Spark's offsets and commits are written once a batch.
    Target target =
        switch (r.nextInt(10)) {
          case 0, 1, 2, 3 -> Target.SEGMENTS;
          case 4, 5 -> Target.SNAPSHOT;
          case 6 -> Target.OFFSETS;
          case 7 -> Target.COMMITS;
          default -> Target.OTHER;
        };
    int opDraw = r.nextInt(10);
    boolean journaled =
        target == Target.SEGMENTS
            || (logJournals && (target == Target.OFFSETS || target == Target.COMMITS));
    Op op =
        journaled
            // Group commits append to a journal (a sync each); journals and hedges are created
            // rarely.
            ? switch (opDraw) {
              case 0, 1, 2, 3, 4 -> Op.SYNC;
              case 5, 6 -> Op.CREATE;
              case 7 -> Op.OPEN;
              case 8 -> Op.LIST;
              default -> Op.DELETE;
            }
            : switch (opDraw) {
              case 0, 1, 2, 3, 4, 5 -> Op.CREATE;
              case 6, 7 -> Op.OPEN;
              case 8 -> Op.LIST;
              default -> Op.DELETE;
            };
    int perBatch =
        target == Target.SEGMENTS
            ? (op == Op.SYNC ? 3 : 1)
            : target.ours() || target == Target.OTHER ? 12 : 1;
    boolean tearable =
        (op == Op.CREATE || op == Op.SYNC) && target.ours() || journaled && op == Op.SYNC;
    int nth = 1 + r.nextInt(Math.max(1, perBatch * batches));
    Kind kind =
        switch (r.nextInt(8)) {
          case 0, 1, 2 -> Kind.ERROR_BEFORE;
          case 3, 4 -> Kind.ERROR_AFTER;
          case 5 -> Kind.STALL;
          // A torn file of Spark's own logs cannot be recovered without a hand (spark/README.md,
          // "Caveat"): torn files only where the provider promises to handle them.
          default -> tearable ? Kind.TORN : Kind.ERROR_BEFORE;
        };
    return new StorageFault(op, target, nth, kind);
  }

  /** Puts the plan in force (its root must not overlap another plan's). */
  static void install(FaultPlan plan) {
    ACTIVE_BY_ROOT.put(plan.root, plan);
    ACTIVE_BY_SEED.put(plan.seed, plan);
  }

  static void uninstall(FaultPlan plan) {
    ACTIVE_BY_ROOT.remove(plan.root, plan);
    ACTIVE_BY_SEED.remove(plan.seed, plan);
  }

  /**
   * What a fault-injecting file system does before {@code op} on {@code path}: throws the
   * schedule's error-before fault, sleeps through a stall, and returns a fault to apply after the
   * call (null: none). The one copy of this rule for {@code faultfs} and {@code faulthdfs}.
   */
  static StorageFault beforeCall(Op op, String path) throws IOException {
    FaultPlan plan = forPath(path);
    StorageFault fault = plan == null ? null : plan.onCall(op, path);
    if (fault == null) {
      return null;
    }
    switch (fault.kind()) {
      case ERROR_BEFORE:
        throw new IOException("Injected fault " + fault + " before " + op + " " + path);
      case STALL:
        try {
          Thread.sleep(STALL_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("interrupted in an injected stall");
        }
        return null;
      default:
        return fault;
    }
  }

  /** The plan in force for a local path, or null. */
  static FaultPlan forPath(String localPath) {
    for (FaultPlan plan : ACTIVE_BY_ROOT.values()) {
      if (localPath.startsWith(plan.root)) {
        return plan;
      }
    }
    return null;
  }

  /** The plan in force with this seed, or null. */
  static FaultPlan forSeed(long seed) {
    return ACTIVE_BY_SEED.get(seed);
  }

  /** The storage fault for this call, if one fires now (counts the call). */
  StorageFault onCall(Op op, String localPath) {
    if (!localPath.startsWith(root)) {
      return null;
    }
    Target target = Target.of(localPath);
    int n = calls.computeIfAbsent(op + "/" + target, k -> new AtomicInteger()).incrementAndGet();
    for (StorageFault f : storageFaults) {
      if (f.op() == op && f.target() == target && f.nth() == n && fire(f)) {
        return f;
      }
    }
    return null;
  }

  /** Records that a delete of {@code localPath} removed a file or directory. */
  void onDeleted(String localPath) {
    if (localPath.startsWith(root)) {
      deleted.computeIfAbsent(Target.of(localPath), t -> new AtomicLong()).incrementAndGet();
    }
  }

  /** Deletes that removed something, by target (retention, sweeps, Spark's log purge). */
  Map<Target, Long> deletedByTarget() {
    Map<Target, Long> m = new EnumMap<>(Target.class);
    deleted.forEach((t, n) -> m.put(t, n.get()));
    return m;
  }

  /** The task fault for this task attempt, if one fires now. */
  TaskFault onTask(long batch, int partition, String site) {
    for (TaskFault f : taskFaults) {
      if (f.batch() == batch && f.partition() == partition && f.site().equals(site) && fire(f)) {
        return f;
      }
    }
    return null;
  }

  private boolean fire(Object fault) {
    if (fired.putIfAbsent(fault, Boolean.TRUE) != null) {
      return false;
    }
    Kind kind = fault instanceof StorageFault s ? s.kind() : ((TaskFault) fault).kind();
    injected.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    return true;
  }

  /** The faults that fired, by kind. */
  Map<Kind, Long> injectedByKind() {
    Map<Kind, Long> m = new EnumMap<>(Kind.class);
    injected.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  /** Records that the task of {@code fault} had committed its state when it failed. */
  void provedAfterCommit(TaskFault fault) {
    provenAfterCommit.add(fault);
  }

  /**
   * Records that the task of after-commit {@code fault} had already failed when it would have
   * failed it (another fault failed it first): no proof is owed for it.
   */
  void preemptedByFailure(TaskFault fault) {
    preempted.add(fault);
  }

  /** The after-commit faults whose task another failure ended first. */
  Set<TaskFault> preemptedByFailure() {
    return Set.copyOf(preempted);
  }

  /**
   * The {@code TASK_AFTER_COMMIT} faults that fired in a task whose state stores had not been seen
   * to commit first.
   */
  List<TaskFault> afterCommitFaultsNotProven() {
    List<TaskFault> unproven = new ArrayList<>();
    for (Object f : fired.keySet()) {
      if (f instanceof TaskFault t
          && t.kind() == Kind.TASK_AFTER_COMMIT
          && !provenAfterCommit.contains(t)
          && !preempted.contains(t)) {
        unproven.add(t);
      }
    }
    return unproven;
  }

  /** The storage faults that fired, by operation and target ({@code SYNC(SEGMENTS)}). */
  Map<String, Long> firedStorageByTarget() {
    Map<String, Long> m = new TreeMap<>();
    fired
        .keySet()
        .forEach(
            f -> {
              if (f instanceof StorageFault s) {
                m.merge(s.op() + "(" + s.target() + ")", 1L, Long::sum);
              }
            });
    return m;
  }

  /** The faults that fired, for a log line. */
  List<String> firedFaults() {
    List<String> names = new ArrayList<>();
    fired.keySet().forEach(f -> names.add(f.toString()));
    names.sort(null);
    return names;
  }

  /** Calls seen per operation and target (for a log line). */
  Map<String, Integer> callCounts() {
    Map<String, Integer> m = new TreeMap<>();
    calls.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  @Override
  public String toString() {
    return "seed " + seed + ": storage " + storageFaults + ", tasks " + taskFaults;
  }
}
