package io.streamstate.testkit;

import io.streamstate.testkit.FaultInjectingStorage.Call;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.FaultKind;
import io.streamstate.testkit.FaultInjectingStorage.Latency;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Which faults a {@link FaultInjectingStorage} injects into which call, apart from the wrapper that
 * injects them: the seeded draws of the rules (one lock for a call's index and its draws, so that
 * the n-th call always gets the n-th draws of the seed), the scripted faults by index and by name,
 * and the record of calls and injected faults. Stalls and crashes act on the wrapper's calls as
 * they run, so they stay with it.
 */
final class FaultSchedule {
  /** A scripted fault's target: the next call of a kind on a name. */
  private record Target(CallKind kind, String name) {}

  /** What was decided for one call, all at once, so that draws follow the order of calls. */
  record Plan(
      Call call,
      boolean errorBefore,
      boolean errorAfter,
      boolean torn,
      double tornFraction,
      Duration latency) {}

  private final Random random;
  private final double[] errorBefore;
  private final double[] errorAfter;
  private final double tornWrite;
  private final Latency[] latency;

  private final Object planLock = new Object();
  private final AtomicLong nextCallIndex = new AtomicLong();
  private final Map<CallKind, AtomicLong> callCounts = new EnumMap<>(CallKind.class);
  private final Map<FaultKind, AtomicLong> faultCounts = new EnumMap<>(FaultKind.class);
  private final Queue<Call> log = new ConcurrentLinkedQueue<>();
  private final Set<Long> scriptedBefore = ConcurrentHashMap.newKeySet();
  private final Set<Long> scriptedAfter = ConcurrentHashMap.newKeySet();
  private final Set<Target> scriptedBeforeByName = ConcurrentHashMap.newKeySet();
  private final Set<Target> scriptedAfterByName = ConcurrentHashMap.newKeySet();
  private final Set<String> scriptedTorn = ConcurrentHashMap.newKeySet();
  private final List<Predicate<String>> scriptedTornMatching = new CopyOnWriteArrayList<>();
  private final List<Predicate<String>> scriptedTornAppends = new CopyOnWriteArrayList<>();

  FaultSchedule(
      long seed, double[] errorBefore, double[] errorAfter, double tornWrite, Latency[] latency) {
    this.random = new Random(seed);
    this.errorBefore = errorBefore.clone();
    this.errorAfter = errorAfter.clone();
    this.tornWrite = tornWrite;
    this.latency = latency.clone();
    // Fully populated here and never changed in structure after, so concurrent reads are safe.
    for (CallKind kind : CallKind.values()) {
      callCounts.put(kind, new AtomicLong());
    }
    for (FaultKind kind : FaultKind.values()) {
      faultCounts.put(kind, new AtomicLong());
    }
  }

  void failBefore(long callIndex) {
    scriptedBefore.add(callIndex);
  }

  void failAfter(long callIndex) {
    scriptedAfter.add(callIndex);
  }

  void failBefore(CallKind kind, String name) {
    scriptedBeforeByName.add(new Target(kind, name));
  }

  void failAfter(CallKind kind, String name) {
    scriptedAfterByName.add(new Target(kind, name));
  }

  void tearCreate(String name) {
    scriptedTorn.add(name);
  }

  void tearCreate(Predicate<String> names) {
    scriptedTornMatching.add(names);
  }

  void tearAppend(Predicate<String> names) {
    scriptedTornAppends.add(names);
  }

  long callCount() {
    return nextCallIndex.get();
  }

  long callCount(CallKind kind) {
    return callCounts.get(kind).get();
  }

  List<Call> calls() {
    return List.copyOf(log);
  }

  void count(FaultKind kind) {
    faultCounts.get(kind).incrementAndGet();
  }

  Map<FaultKind, Long> injectedFaults() {
    Map<FaultKind, Long> snapshot = new EnumMap<>(FaultKind.class);
    faultCounts.forEach((kind, count) -> snapshot.put(kind, count.get()));
    return Collections.unmodifiableMap(snapshot);
  }

  /** Gives the next call its index and decides, all at once, what is injected into it. */
  Plan plan(CallKind kind, String name) {
    // One lock for index and draws: the n-th call always gets the n-th draws of the seed.
    synchronized (planLock) {
      Call call = new Call(nextCallIndex.getAndIncrement(), kind, name);
      log.add(call);
      callCounts.get(kind).incrementAndGet();
      // Draw the same number of values whatever the settings, so that enabling one fault does
      // not shift the draws of another.
      boolean before = random.nextDouble() < errorBefore[kind.ordinal()];
      boolean after = random.nextDouble() < errorAfter[kind.ordinal()];
      boolean torn =
          random.nextDouble() < tornWrite && (kind == CallKind.CREATE || kind == CallKind.APPEND);
      double tornFraction = random.nextDouble();
      Duration delay = latency[kind.ordinal()].delay(random);
      before |= scriptedBefore.remove(call.index());
      after |= scriptedAfter.remove(call.index());
      before |= scriptedBeforeByName.remove(new Target(kind, name));
      after |= scriptedAfterByName.remove(new Target(kind, name));
      torn |= kind == CallKind.CREATE && scriptedTorn.remove(name);
      if (kind == CallKind.APPEND && !torn) {
        for (Predicate<String> p : scriptedTornAppends) {
          if (p.test(name) && scriptedTornAppends.remove(p)) {
            torn = true;
            break;
          }
        }
      }
      if (kind == CallKind.CREATE && !torn) {
        for (Predicate<String> p : scriptedTornMatching) {
          if (p.test(name) && scriptedTornMatching.remove(p)) {
            torn = true;
            break;
          }
        }
      }
      return new Plan(call, before, after, torn, tornFraction, delay);
    }
  }
}
