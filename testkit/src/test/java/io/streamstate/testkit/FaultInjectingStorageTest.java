package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storages;
import io.streamstate.testkit.FaultInjectingStorage.Call;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.FaultKind;
import io.streamstate.testkit.FaultInjectingStorage.Latency;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FaultInjectingStorageTest {
  private final InMemoryStorage memory = new InMemoryStorage();
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  // ---- reproducibility ----

  @Test
  void sameSeedReproducesFaultSequence() {
    List<String> first = runWorkload(faulty(new InMemoryStorage(), 7));
    List<String> second = runWorkload(faulty(new InMemoryStorage(), 7));

    assertThat(second).isEqualTo(first);
    assertThat(first).anyMatch(outcome -> outcome.contains("OutcomeUnknownException"));
    assertThat(first).anyMatch(outcome -> outcome.contains("RetryableException"));
    assertThat(first).anyMatch(outcome -> outcome.contains("torn"));
  }

  @Test
  void differentSeedsGiveDifferentFaultSequences() {
    assertThat(runWorkload(faulty(new InMemoryStorage(), 8)))
        .isNotEqualTo(runWorkload(faulty(new InMemoryStorage(), 7)));
  }

  @Test
  void faultRatesFollowConfiguredProbabilities() {
    FaultInjectingStorage storage =
        FaultInjectingStorage.builder(memory, 1).errorBefore(CallKind.CREATE, 0.2).build();

    int failed = 0;
    for (int i = 0; i < 2000; i++) {
      try {
        storage.create("f/" + i, bytes("x"));
      } catch (RetryableException e) {
        failed++;
      }
    }

    assertThat(failed).isBetween(300, 500);
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.ERROR_BEFORE, (long) failed);
    assertThat(memory.names()).hasSize(2000 - failed);
  }

  @Test
  void appliesErrorRulesOnlyToConfiguredKinds() {
    FaultInjectingStorage storage =
        FaultInjectingStorage.builder(memory, 3).errorBefore(CallKind.OPEN, 1.0).build();

    storage.create("a", bytes("x"));
    assertThat(storage.delete("a")).isTrue();
    assertThat(storage.list("")).isEmpty();
    assertThatThrownBy(() -> storage.open("a"))
        .isInstanceOf(RetryableException.class)
        .hasMessage("injected fault before open of a (call #3)");
  }

  // ---- scripted faults ----

  @Test
  void failBeforeLeavesNothingWritten() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    storage.create("a", bytes("a"));
    storage.failBefore(1);

    assertThatThrownBy(() -> storage.create("dir/b", bytes("b")))
        .isInstanceOf(RetryableException.class)
        .hasMessage("injected fault before create of dir/b (call #1)");
    assertThat(memory.names()).containsExactly("a");

    // Fires once: the retry goes through.
    storage.create("dir/b", bytes("b"));
    assertThat(memory.bytes("dir/b")).isEqualTo(utf8("b"));
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.ERROR_BEFORE, 1L);
  }

  @Test
  void failAfterLeavesFileWrittenButReportsOutcomeUnknown() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    storage.failAfter(0);

    assertThatThrownBy(() -> storage.create("dir/b", bytes("complete")))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessage("injected fault after create of dir/b (call #0) (it took effect)");
    assertThat(memory.bytes("dir/b")).isEqualTo(utf8("complete"));
    assertThatThrownBy(() -> storage.create("dir/b", bytes("complete")))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.ERROR_AFTER, 1L);
  }

  @Test
  void failAfterOfDeleteDeletesButReportsOutcomeUnknown() {
    memory.create("gone", bytes("x"));
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    storage.failAfter(0);

    assertThatThrownBy(() -> storage.delete("gone"))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageContaining("after delete of gone");
    assertThat(memory.names()).isEmpty();
  }

  @Test
  void errorAfterOfReadsIsRetryableBecauseReadsChangeNothing() {
    memory.create("a", bytes("x"));
    FaultInjectingStorage storage =
        FaultInjectingStorage.builder(memory, 1)
            .errorAfter(CallKind.OPEN, 1.0)
            .errorAfter(CallKind.LIST, 1.0)
            .build();

    assertThatThrownBy(() -> storage.open("a"))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("injected fault after open of a");
    assertThatThrownBy(() -> storage.list(""))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("injected fault after list of ");
  }

  @Test
  void failBeforeCanCrashEachCallOfASequenceInTurn() {
    // A two-step publish (data first, then the manifest that references it), run once to count.
    FaultInjectingStorage counter = FaultInjectingStorage.builder(new InMemoryStorage(), 1).build();
    publish(counter);
    long calls = counter.callCount();
    assertThat(calls).isEqualTo(2);

    for (long crashAt = 0; crashAt < calls; crashAt++) {
      InMemoryStorage disk = new InMemoryStorage();
      FaultInjectingStorage storage = FaultInjectingStorage.builder(disk, 1).build();
      storage.failBefore(crashAt);

      assertThatThrownBy(() -> publish(storage)).isInstanceOf(RetryableException.class);
      // Whatever step failed, a manifest never exists without its data.
      assertThat(!disk.names().contains("v1.manifest") || disk.names().contains("v1.data"))
          .as("state after failing call %d of %s: %s", crashAt, storage.calls(), disk.names())
          .isTrue();
    }
  }

  @Test
  void faultsScriptedByNameHitOnlyTheNextCallOfThatKindOnThatName() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    storage.failBefore(CallKind.CREATE, "b");
    storage.failAfter(CallKind.CREATE, "c");

    storage.create("a", bytes("a"));
    assertThat(storage.list("b")).isEmpty(); // another kind on the name: not faulted
    assertThatThrownBy(() -> storage.create("b", bytes("b")))
        .isInstanceOf(RetryableException.class)
        .hasMessage("injected fault before create of b (call #2)");
    assertThatThrownBy(() -> storage.create("c", bytes("c")))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessage("injected fault after create of c (call #3) (it took effect)");
    storage.create("b", bytes("b")); // one call only: the retry goes through

    assertThat(memory.names()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(storage.injectedFaults())
        .containsEntry(FaultKind.ERROR_BEFORE, 1L)
        .containsEntry(FaultKind.ERROR_AFTER, 1L);
  }

  @Test
  void tearCreateTearsOnlyTheNextCreateOfThatName() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 5).build();
    storage.tearCreate("torn");
    byte[] content = utf8("a longer content than one byte");

    storage.create("whole", ContentWriter.ofBytes(content));
    assertThatThrownBy(() -> storage.create("torn", ContentWriter.ofBytes(content)))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageStartingWith("injected torn write in create of torn (call #1)");
    storage.create("torn2", ContentWriter.ofBytes(content));

    assertThat(memory.bytes("whole")).isEqualTo(content);
    assertThat(memory.bytes("torn2")).isEqualTo(content);
    assertThat(memory.bytes("torn").length).isLessThan(content.length);
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.TORN_WRITE, 1L);
  }

  // ---- torn writes ----

  @Test
  void tornWriteLeavesStrictlyShorterPrefixPublished() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 5).tornWrite(1.0).build();
    byte[] content = new byte[1000];
    new Random(9).nextBytes(content);

    List<Integer> lengths = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String name = "torn/" + i;
      assertThatThrownBy(() -> storage.create(name, ContentWriter.ofBytes(content)))
          .isInstanceOf(OutcomeUnknownException.class)
          .hasMessageStartingWith("injected torn write in create of " + name)
          .hasMessageEndingWith("of 1000 bytes");
      byte[] published = memory.bytes(name);
      assertThat(published.length).isLessThan(content.length);
      assertThat(published).isEqualTo(Arrays.copyOf(content, published.length));
      lengths.add(published.length);
    }

    assertThat(lengths).doesNotHaveDuplicates();
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.TORN_WRITE, 20L);
  }

  @Test
  void tornWriteCannotShortenEmptyContent() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 5).tornWrite(1.0).build();

    storage.create("empty", ContentWriter.ofBytes(new byte[0]));

    assertThat(memory.bytes("empty")).isEmpty();
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.TORN_WRITE, 0L);
  }

  // ---- crash ----

  @Test
  void crashRejectsEveryCallUntilRecovered() {
    memory.create("existing", bytes("x"));
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();

    storage.crash();

    assertThatThrownBy(() -> storage.create("new", bytes("y")))
        .isInstanceOf(RetryableException.class)
        .hasMessageStartingWith("injected crash: create of new (call #0) rejected");
    assertThatThrownBy(() -> storage.open("existing")).isInstanceOf(RetryableException.class);
    assertThatThrownBy(() -> storage.delete("existing")).isInstanceOf(RetryableException.class);
    assertThatThrownBy(() -> storage.list("")).isInstanceOf(RetryableException.class);
    assertThat(memory.names()).containsExactly("existing");
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.CRASHED, 4L);

    storage.recover();
    storage.create("new", bytes("y"));
    assertThat(memory.names()).containsExactly("existing", "new");
  }

  @Test
  void callInFlightWhenCrashedTakesEffectButReportsOutcomeUnknown() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();

    assertThatThrownBy(
            () ->
                storage.create(
                    "in-flight",
                    out -> {
                      out.write(utf8("whole"));
                      storage.crash(); // the process dies while the store finishes the write
                    }))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessage("injected crash during create of in-flight (call #0) (it reached the storage)");
    assertThat(memory.bytes("in-flight")).isEqualTo(utf8("whole"));
  }

  // ---- stalls ----

  @Test
  void stallBlocksMatchingCallsUntilReleased() throws Exception {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    Stall stall = storage.stall(CallKind.CREATE, name -> name.startsWith("slow/"));

    Future<?> slow = pool.submit(() -> storage.create("slow/1", bytes("s")));
    await().atMost(Duration.ofSeconds(5)).until(() -> stall.blockedCalls() == 1);

    storage.create("fast/1", bytes("f")); // does not match: not blocked
    storage.open("fast/1").close();
    assertThat(slow).isNotDone();
    assertThat(memory.names()).containsExactly("fast/1");

    stall.release();
    slow.get(5, TimeUnit.SECONDS);
    assertThat(memory.bytes("slow/1")).isEqualTo(utf8("s"));
    storage.create("slow/2", bytes("s")); // released for good
    assertThat(storage.injectedFaults()).containsEntry(FaultKind.STALL, 1L);
  }

  @Test
  void stallCanBeAwaitedWithoutAwaitility() throws Exception {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    Stall stall = storage.stall(CallKind.OPEN, name -> true);
    memory.create("a", bytes("a"));

    Future<byte[]> read = pool.submit(() -> Storages.readAll(storage, "a"));
    Future<byte[]> secondRead = pool.submit(() -> Storages.readAll(storage, "a"));

    assertThat(stall.awaitBlocked(2, Duration.ofSeconds(5))).isTrue();
    assertThat(stall.awaitBlocked(3, Duration.ofMillis(1))).isFalse();
    stall.release();
    assertThat(read.get(5, TimeUnit.SECONDS)).isEqualTo(utf8("a"));
    assertThat(secondRead.get(5, TimeUnit.SECONDS)).isEqualTo(utf8("a"));
  }

  @Test
  void stalledCallFailsWithoutEffectIfCrashedBeforeRelease() throws Exception {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();
    Stall stall = storage.stall(CallKind.CREATE, name -> true);
    Future<?> stalled = pool.submit(() -> storage.create("late", bytes("l")));
    assertThat(stall.awaitBlocked(1, Duration.ofSeconds(5))).isTrue();

    storage.crash();
    stall.release();

    assertThatThrownBy(() -> stalled.get(5, TimeUnit.SECONDS))
        .cause()
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("injected crash: create of late");
    assertThat(memory.names()).isEmpty();
  }

  // ---- observation and latency ----

  @Test
  void countsAndLogsCallsByKind() {
    FaultInjectingStorage storage = FaultInjectingStorage.builder(memory, 1).build();

    storage.create("a", bytes("a"));
    Storages.readAll(storage, "a");
    storage.list("a");
    storage.delete("a");
    storage.delete("a");

    assertThat(storage.callCount()).isEqualTo(5);
    assertThat(storage.callCount(CallKind.CREATE)).isEqualTo(1);
    assertThat(storage.callCount(CallKind.OPEN)).isEqualTo(1);
    assertThat(storage.callCount(CallKind.LIST)).isEqualTo(1);
    assertThat(storage.callCount(CallKind.DELETE)).isEqualTo(2);
    assertThat(storage.calls())
        .containsExactly(
            new Call(0, CallKind.CREATE, "a"),
            new Call(1, CallKind.OPEN, "a"),
            new Call(2, CallKind.LIST, "a"),
            new Call(3, CallKind.DELETE, "a"),
            new Call(4, CallKind.DELETE, "a"));
    assertThat(storage.injectedFaults())
        .containsOnlyKeys(FaultKind.values())
        .doesNotContainValue(1L);
  }

  @Test
  void countsCallsDelayedByLatency() {
    FaultInjectingStorage storage =
        FaultInjectingStorage.builder(memory, 1)
            .latency(CallKind.CREATE, Latency.fixed(Duration.ofNanos(1000)))
            .build();

    storage.create("a", bytes("a"));
    storage.delete("a");

    assertThat(storage.injectedFaults()).containsEntry(FaultKind.LATENCY, 1L);
  }

  @Test
  void heavyTailedLatencyHasGivenMedianAndStallRate() {
    Latency latency =
        Latency.heavyTailed(
            Duration.ofMillis(10), 0.05, Duration.ofSeconds(1), Duration.ofSeconds(2));
    Random random = new Random(11);

    long[] millis = new long[10_001];
    for (int i = 0; i < millis.length; i++) {
      millis[i] = latency.delay(random).toMillis();
    }
    Arrays.sort(millis);

    assertThat(millis[millis.length / 2]).isCloseTo(10L, within(2L));
    long stalls = Arrays.stream(millis).filter(m -> m >= 1000).count();
    assertThat(stalls / (double) millis.length).isCloseTo(0.05, within(0.01));
    assertThat(millis[millis.length - 1]).isLessThan(2000);
  }

  @Test
  void rejectsProbabilityOutsideZeroToOne() {
    assertThatThrownBy(() -> FaultInjectingStorage.builder(memory, 1).tornWrite(1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("tornWrite probability must be in [0, 1], was 1.5");
  }

  // ---- helpers ----

  private static FaultInjectingStorage faulty(InMemoryStorage delegate, long seed) {
    return FaultInjectingStorage.builder(delegate, seed)
        .errorBefore(CallKind.CREATE, 0.1)
        .errorAfter(CallKind.CREATE, 0.1)
        .tornWrite(0.1)
        .errorBefore(CallKind.OPEN, 0.1)
        .errorAfter(CallKind.DELETE, 0.1)
        .build();
  }

  /** A fixed sequence of calls; one line per call with its outcome and what was stored. */
  private static List<String> runWorkload(FaultInjectingStorage storage) {
    InMemoryStorage disk = (InMemoryStorage) storage.delegate();
    List<String> outcomes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      String name = "w/" + (i % 50);
      String outcome;
      try {
        switch (i % 3) {
          case 0 -> storage.create(name, ContentWriter.ofBytes(new byte[100 + i]));
          case 1 -> Storages.readAll(storage, name);
          default -> storage.delete(name);
        }
        outcome = "ok";
      } catch (StreamStateException e) {
        // Only injected messages: others name the storage instance, which differs per run.
        outcome =
            e.getClass().getSimpleName()
                + (e.getMessage().startsWith("injected") ? ": " + e.getMessage() : "");
      }
      String stored = disk.names().contains(name) ? disk.bytes(name).length + " bytes" : "absent";
      outcomes.add(i + " " + outcome + " -> " + stored);
    }
    outcomes.add(storage.injectedFaults().toString());
    return outcomes;
  }

  private static void publish(FaultInjectingStorage storage) {
    storage.create("v1.data", bytes("data"));
    storage.create("v1.manifest", bytes("manifest -> v1.data"));
  }

  private static ContentWriter bytes(String content) {
    return ContentWriter.ofBytes(utf8(content));
  }

  private static byte[] utf8(String content) {
    return content.getBytes(UTF_8);
  }
}
