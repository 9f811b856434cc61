package io.streamstate.testkit.hedge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storages;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.FaultKind;
import io.streamstate.testkit.FaultInjectingStorage.Latency;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HedgedWriter} under stalls, failures, unknown outcomes and torn writes of either copy.
 *
 * <p>Nothing here depends on timing. A deadline of zero hedges whatever has not completed at once,
 * and stalls decide what completes when; a deadline of an hour means "hedge only on failure".
 * Background work (creates of losers, their cleanup) is awaited by shutting the writer's pool down.
 */
class HedgedWriterTest {
  private static final String PRIMARY = "changelog/00000000000000000007.changelog.attempt-3";
  private static final String ALTERNATE = "changelog/00000000000000000007.changelog.attempt-3.h";
  private static final Duration WAIT = Duration.ofSeconds(30); // only for things that do happen

  private final InMemoryStorage disk = new InMemoryStorage();
  private final FaultInjectingStorage storage = FaultInjectingStorage.builder(disk, 6).build();
  private final List<Stall> stalls = new ArrayList<>();
  private ExecutorService pool = Executors.newCachedThreadPool();
  private final ExecutorService callers = Executors.newCachedThreadPool();
  private final byte[] content = randomBytes(4096, 1);

  @AfterEach
  void stopThreads() {
    stalls.forEach(Stall::release);
    pool.shutdownNow();
    callers.shutdownNow();
  }

  // ---- stalls ----

  @Test
  void hedgeWinsOverStalledPrimaryWhoseLateCopyIsThenDeleted() throws Exception {
    Stall primary = stall(PRIMARY);
    HedgedWriter writer = writer(hedgeAtOnce());

    // Returns while the primary is still stalled: the caller never waits for the loser.
    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(result.hedgeFired()).isTrue();
    assertThat(result.hedgeWon()).isTrue();
    assertThat(disk.names()).containsExactly(ALTERNATE);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);

    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    primary.release();
    awaitBackgroundWork();

    assertThat(disk.names()).as("the late primary was deleted").containsExactly(ALTERNATE);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 0, 1, 0, 1, 0, 0));
  }

  @Test
  void aLateLoserCountsAsSlowAsItsRaceNeverSlower() throws Exception {
    Stall primary = stall(PRIMARY);
    // The deadline is the slowest latency recorded (percentile 1, multiplier 1), from one sample.
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ZERO)
            .initialDeadline(Duration.ZERO)
            .percentile(1.0)
            .multiplier(1.0)
            .minSamples(1)
            .build();
    HedgedWriter writer = writer(policy);

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    assertThat(result.hedgeWon()).isTrue();
    // The primary is held until after the race ended: its own latency exceeds the race's.
    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    primary.release();
    awaitBackgroundWork();

    assertThat(metrics(writer).losersCleaned()).as("the late primary completed").isEqualTo(1);
    assertThat(policy.deadline())
        .as("the late primary is a sample no slower than the race it lost")
        .isLessThanOrEqualTo(result.latency());
  }

  @Test
  void primaryReleasedPastItsDeadlineWinsWhileTheHedgeIsStalled() throws Exception {
    Stall primary = stall(PRIMARY);
    Stall hedge = stall(ALTERNATE);
    HedgedWriter writer = writer(hedgeAtOnce());

    Future<HedgedPublish> publish = publishAsync(writer);
    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    assertThat(hedge.awaitBlocked(1, WAIT)).isTrue();
    assertThat(publish).isNotDone();
    primary.release();
    HedgedPublish result = publish.get();

    assertThat(result.name()).isEqualTo(PRIMARY);
    assertThat(result.hedgeFired()).isTrue();
    assertThat(result.hedgeWon()).isFalse();

    hedge.release();
    awaitBackgroundWork();

    assertThat(disk.names()).as("the late hedge was deleted").containsExactly(PRIMARY);
    assertThat(disk.bytes(PRIMARY)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 0, 0, 0, 1, 0, 0));
  }

  @Test
  void whenBothCopiesStallTheOneReleasedFirstWins() throws Exception {
    Stall primary = stall(PRIMARY);
    Stall hedge = stall(ALTERNATE);
    HedgedWriter writer = writer(hedgeAtOnce());

    Future<HedgedPublish> publish = publishAsync(writer);
    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    assertThat(hedge.awaitBlocked(1, WAIT)).isTrue();
    hedge.release();
    HedgedPublish result = publish.get();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(result.hedgeWon()).isTrue();

    primary.release();
    awaitBackgroundWork();

    assertThat(disk.names()).containsExactly(ALTERNATE);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 0, 1, 0, 1, 0, 0));
  }

  @Test
  void hedgeWinsOverStalledPrimaryOnLocalDisk(@TempDir Path root) throws Exception {
    LocalStorage local = new LocalStorage(root);
    FaultInjectingStorage faulty = FaultInjectingStorage.builder(local, 6).build();
    Stall primary = faulty.stall(CallKind.CREATE, PRIMARY::equals);
    stalls.add(primary);
    HedgedWriter writer = writer(hedgeAtOnce());

    HedgedPublish result = writer.publish(faulty, PRIMARY, ALTERNATE, content);
    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    primary.release();
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(local.list("").stream().map(FileInfo::name)).containsExactly(ALTERNATE);
    assertThat(Storages.readAll(local, ALTERNATE)).isEqualTo(content);
    assertThat(metrics(writer).losersCleaned()).isEqualTo(1);
  }

  // ---- failures ----

  @Test
  void primaryFailingBeforeItsDeadlineIsRetriedAtOnceByTheHedge() throws Exception {
    storage.failBefore(CallKind.CREATE, PRIMARY);
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(result.hedgeFired()).isTrue();
    assertThat(result.hedgeWon()).isTrue();
    assertThat(disk.names()).containsExactly(ALTERNATE);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 1, 1, 0, 0, 0, 0));
  }

  @Test
  void primaryWinsWhenTheHedgeFails() throws Exception {
    Stall primary = stall(PRIMARY);
    storage.failBefore(CallKind.CREATE, ALTERNATE);
    HedgedWriter writer = writer(hedgeAtOnce());

    Future<HedgedPublish> publish = publishAsync(writer);
    await().atMost(WAIT).until(() -> injected(FaultKind.ERROR_BEFORE) == 1);
    assertThat(publish).as("a failed hedge does not end the publish").isNotDone();
    primary.release();
    HedgedPublish result = publish.get();
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(PRIMARY);
    assertThat(result.hedgeFired()).isTrue();
    assertThat(result.hedgeWon()).isFalse();
    assertThat(disk.names()).containsExactly(PRIMARY);
    assertThat(disk.bytes(PRIMARY)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 0, 0, 0, 0, 0, 0));
  }

  @Test
  void bothCopiesFailingCleanlyIsRetryableWithBothCauses() {
    storage.failBefore(CallKind.CREATE, PRIMARY);
    storage.failBefore(CallKind.CREATE, ALTERNATE);
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(RetryableException.class)
        .hasMessageStartingWith(
            "Cannot publish "
                + storage.describe()
                + "/"
                + PRIMARY
                + " or its hedge "
                + storage.describe()
                + "/"
                + ALTERNATE)
        .hasMessageEndingWith("; nothing was published")
        .satisfies(
            e -> {
              assertThat(e.getCause())
                  .isInstanceOf(RetryableException.class)
                  .hasMessageStartingWith("injected fault before create of " + PRIMARY);
              assertThat(e.getSuppressed()).hasSize(1);
              assertThat(e.getSuppressed()[0])
                  .isInstanceOf(RetryableException.class)
                  .hasMessageStartingWith("injected fault before create of " + ALTERNATE);
            });
    assertThat(disk.names()).isEmpty();
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 1, 0, 0, 0, 0, 0));
  }

  // ---- unknown outcomes ----

  @Test
  void primaryOfUnknownOutcomeIsHedgedAtOnceAndLeftInPlace() throws Exception {
    storage.failAfter(CallKind.CREATE, PRIMARY); // published, but the caller saw an error
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    // Never clean up after an unknown outcome: both complete, both the same bytes.
    assertThat(disk.names()).containsExactlyInAnyOrder(PRIMARY, ALTERNATE);
    assertThat(disk.bytes(PRIMARY)).isEqualTo(content);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 1, 1, 0, 0, 0, 1));
  }

  @Test
  void bothOutcomesUnknownIsOutcomeUnknown() {
    storage.failAfter(CallKind.CREATE, PRIMARY);
    storage.failAfter(CallKind.CREATE, ALTERNATE);
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageEndingWith("; it may have been published: read the names back before deciding")
        .satisfies(
            e -> {
              assertThat(e.getCause()).hasMessageContaining("after create of " + PRIMARY);
              assertThat(e.getSuppressed())
                  .singleElement()
                  .satisfies(
                      s -> assertThat(s).hasMessageContaining("after create of " + ALTERNATE));
            });
    assertThat(disk.names()).containsExactlyInAnyOrder(PRIMARY, ALTERNATE);
  }

  @Test
  void oneCleanFailureAndOneUnknownOutcomeIsOutcomeUnknown() {
    storage.failBefore(CallKind.CREATE, PRIMARY);
    storage.failAfter(CallKind.CREATE, ALTERNATE);
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasCauseInstanceOf(RetryableException.class)
        .satisfies(
            e ->
                assertThat(e.getSuppressed())
                    .singleElement()
                    .isInstanceOf(OutcomeUnknownException.class));
    assertThat(disk.names()).containsExactly(ALTERNATE);
  }

  @Test
  void takenPrimaryNameIsAnUnknownOutcomeOfAnEarlierTryAndIsHedged() throws Exception {
    disk.create(PRIMARY, ContentWriter.ofBytes(content)); // an earlier try, its reply lost
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(disk.names()).containsExactlyInAnyOrder(PRIMARY, ALTERNATE);
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 1, 1, 0, 0, 0, 1));
  }

  @Test
  void bothNamesTakenIsOutcomeUnknownNeverAConflict() {
    disk.create(PRIMARY, ContentWriter.ofBytes(content));
    disk.create(ALTERNATE, ContentWriter.ofBytes(content));
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageContaining("the attempt-unique name already exists")
        .hasCauseInstanceOf(FileAlreadyExistsException.class);
  }

  @Test
  void takenNameWithoutHedgingIsOutcomeUnknown() {
    disk.create(PRIMARY, ContentWriter.ofBytes(content));
    HedgedWriter writer = writer(HedgePolicy.builder().disable().build());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageEndingWith("an earlier try of it may have published it; read it back")
        .hasCauseInstanceOf(FileAlreadyExistsException.class);
  }

  // ---- torn writes ----

  @Test
  void tornHedgeIsNeverReportedAsTheWinner() throws Exception {
    Stall primary = stall(PRIMARY);
    storage.tearCreate(ALTERNATE);
    HedgedWriter writer = writer(hedgeAtOnce());

    Future<HedgedPublish> publish = publishAsync(writer);
    await().atMost(WAIT).until(() -> injected(FaultKind.TORN_WRITE) == 1);
    assertThat(publish).isNotDone();
    primary.release();
    HedgedPublish result = publish.get();
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(PRIMARY);
    assertThat(disk.bytes(PRIMARY)).isEqualTo(content);
    byte[] torn = disk.bytes(ALTERNATE); // left for retention
    assertThat(torn.length).isLessThan(content.length);
    assertThat(torn).isEqualTo(Arrays.copyOf(content, torn.length));
    assertThat(metrics(writer)).isEqualTo(counts(1, 1, 0, 0, 0, 0, 0, 1));
  }

  @Test
  void tornPrimaryIsRetriedByTheHedgeAndNeverReportedAsTheWinner() throws Exception {
    storage.tearCreate(PRIMARY);
    HedgedWriter writer = writer(hedgeOnlyOnFailure());

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(disk.bytes(ALTERNATE)).isEqualTo(content);
    assertThat(disk.bytes(PRIMARY).length).isLessThan(content.length);
  }

  // ---- budget ----

  @Test
  void withTheBudgetAndItsReserveSpentNoHedgeFiresAndTheWriteWaitsForThePrimary() throws Exception {
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ZERO)
            .initialDeadline(Duration.ZERO)
            .budgetBurst(1)
            .budgetFraction(0)
            .reserveBurst(0)
            .build();
    HedgedWriter writer = writer(policy);
    Stall first = stall(PRIMARY);
    assertThat(writer.publish(storage, PRIMARY, ALTERNATE, content).hedgeWon()).isTrue();
    first.release();

    Stall second = stall("second");
    Future<HedgedPublish> publish =
        callers.submit(() -> writer.publish(storage, "second", "second.h", content));
    assertThat(second.awaitBlocked(1, WAIT)).isTrue();
    await().atMost(WAIT).until(() -> metrics(writer).hedgesSkippedForBudget() == 1);
    assertThat(publish).isNotDone();
    second.release();
    HedgedPublish result = publish.get();
    awaitBackgroundWork();

    assertThat(result.name()).isEqualTo("second");
    assertThat(result.hedgeFired()).isFalse();
    assertThat(storage.calls()).noneMatch(call -> call.name().equals("second.h"));
    assertThat(disk.names()).containsExactlyInAnyOrder(ALTERNATE, "second");
    assertThat(metrics(writer)).isEqualTo(counts(2, 1, 0, 1, 1, 1, 0, 0));
  }

  @Test
  void aWriteStalledWithTheBudgetSpentIsHedgedFromTheReserve() throws Exception {
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ZERO)
            .initialDeadline(Duration.ZERO)
            .budgetBurst(1)
            .budgetFraction(0)
            .stalledAfter(Duration.ofMillis(1))
            .reserveBurst(1)
            .reserveFraction(0)
            .build();
    assertThat(policy.tryAcquireHedge()).isTrue(); // hedges of noise spent the budget
    HedgedWriter writer = writer(policy);
    Stall stuck = stall(PRIMARY);

    // Returns while the primary is still stuck: the reserve paid for its hedge.
    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    assertThat(result.name()).isEqualTo(ALTERNATE);
    assertThat(result.hedgeWon()).isTrue();
    assertThat(stuck.awaitBlocked(1, WAIT)).isTrue();
    stuck.release();

    // The reserve is spent too: the next stuck write waits for its primary.
    Stall second = stall("second");
    Future<HedgedPublish> publish =
        callers.submit(() -> writer.publish(storage, "second", "second.h", content));
    assertThat(second.awaitBlocked(1, WAIT)).isTrue();
    await().atMost(WAIT).until(() -> metrics(writer).hedgesSkippedForBudget() == 2);
    second.release();
    assertThat(publish.get().hedgeFired()).isFalse();
    awaitBackgroundWork();
    assertThat(metrics(writer)).isEqualTo(new HedgeMetrics.Snapshot(2, 1, 0, 1, 2, 1, 0, 0, 1));
  }

  @Test
  void failedPrimaryWithTheBudgetSpentFailsWithItsOwnCause() {
    HedgePolicy policy =
        HedgePolicy.builder()
            .initialDeadline(Duration.ofHours(1))
            .budgetBurst(1)
            .budgetFraction(0)
            .build();
    assertThat(policy.tryAcquireHedge()).isTrue(); // spend the only token
    storage.failBefore(CallKind.CREATE, PRIMARY);
    HedgedWriter writer = writer(policy);

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(RetryableException.class)
        .hasMessage(
            "Cannot publish "
                + storage.describe()
                + "/"
                + PRIMARY
                + ": injected fault before create of "
                + PRIMARY
                + " (call #0) (not hedged: the hedge budget is spent); nothing was published")
        .satisfies(e -> assertThat(e.getSuppressed()).isEmpty());
    assertThat(storage.calls()).hasSize(1);
  }

  // ---- threads ----

  @Test
  void interruptedCallerGetsOutcomeUnknownAndKeepsItsInterruptStatus() throws Exception {
    HedgePolicy policy =
        HedgePolicy.builder()
            .initialDeadline(Duration.ZERO)
            .floor(Duration.ZERO)
            .budgetBurst(1)
            .budgetFraction(0)
            .build();
    assertThat(policy.tryAcquireHedge()).isTrue(); // no budget left: the primary runs alone
    Stall primary = stall(PRIMARY);
    HedgedWriter writer = writer(policy);
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicBoolean interruptKept = new AtomicBoolean();
    Thread caller =
        new Thread(
            () -> {
              try {
                writer.publish(storage, PRIMARY, ALTERNATE, content);
              } catch (RuntimeException e) {
                thrown.set(e);
                interruptKept.set(Thread.currentThread().isInterrupted());
              }
            });
    caller.start();
    assertThat(primary.awaitBlocked(1, WAIT)).isTrue();
    await().atMost(WAIT).until(() -> metrics(writer).hedgesSkippedForBudget() == 1);
    caller.interrupt();
    caller.join(WAIT.toMillis());

    assertThat(thrown.get())
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessageContaining("Interrupted while publishing")
        .hasCauseInstanceOf(InterruptedException.class);
    assertThat(interruptKept).isTrue();

    // The create the caller abandoned completes, and is kept: the caller must read it back.
    primary.release();
    awaitBackgroundWork();
    assertThat(disk.names()).containsExactly(PRIMARY);
  }

  @Test
  void interruptedBeforeStartingIsRetryableAndStartsNothing() {
    HedgedWriter writer = writer(hedgeAtOnce());
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
          .isInstanceOf(RetryableException.class)
          .hasMessageEndingWith("(nothing was started)");
    } finally {
      assertThat(Thread.interrupted()).isTrue();
    }
    assertThat(storage.callCount()).isZero();
  }

  @Test
  void disabledHedgingIsOnePlainCreateInTheCallingThread() {
    Executor refusing =
        task -> {
          throw new RejectedExecutionException("no threads in this test");
        };
    HedgedWriter writer = new HedgedWriter(HedgePolicy.builder().disable().build(), refusing);

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);

    assertThat(result.name()).isEqualTo(PRIMARY);
    assertThat(result.hedgeFired()).isFalse();
    assertThat(storage.calls()).hasSize(1);
    assertThat(disk.bytes(PRIMARY)).isEqualTo(content);
    assertThat(metrics(writer)).isEqualTo(counts(1, 0, 0, 0, 0, 0, 0, 0));
  }

  @Test
  void rejectedPrimaryIsRetryable() {
    Executor refusing =
        task -> {
          throw new RejectedExecutionException("no threads in this test");
        };
    HedgedWriter writer = new HedgedWriter(hedgeAtOnce(), refusing);

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, ALTERNATE, content))
        .isInstanceOf(RetryableException.class)
        .hasMessageEndingWith(": the executor rejected its create (nothing was started)");
    assertThat(storage.callCount()).isZero();
  }

  @Test
  void sharedPoolServesWritersBuiltWithoutAnExecutor() {
    Stall primary = stall(PRIMARY);
    HedgedWriter writer = new HedgedWriter(hedgeAtOnce(), ProcessResources.shared());

    HedgedPublish result = writer.publish(storage, PRIMARY, ALTERNATE, content);
    primary.release();

    assertThat(result.name()).isEqualTo(ALTERNATE);
    await().atMost(WAIT).until(() -> disk.names().equals(Set.of(ALTERNATE)));
  }

  @Test
  void rejectsSameNameForBothCopies() {
    HedgedWriter writer = writer(hedgeAtOnce());

    assertThatThrownBy(() -> writer.publish(storage, PRIMARY, PRIMARY, content))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("The alternate name must differ from the primary name: " + PRIMARY);
  }

  // ---- metrics over a sequence ----

  @Test
  void metricsCountEveryOutcomeExactly() throws Exception {
    // A window of one latency: the deadline is the latest recorded latency, set before each write.
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ZERO)
            .multiplier(1)
            .percentile(1)
            .window(1)
            .minSamples(1)
            .budgetBurst(5)
            .budgetFraction(0)
            .build();
    Duration hour = Duration.ofHours(1);

    // 1: fast, no hedge.
    run(policy, hour, "w1", "w1.h", () -> {});
    // 2: primary fails, the hedge is the retry and wins (token 1).
    run(policy, hour, "w2", "w2.h", () -> storage.failBefore(CallKind.CREATE, "w2"));
    // 3: primary stalls, the hedge wins, the late primary is deleted (token 2).
    Stall w3 = stall("w3");
    run(policy, Duration.ZERO, "w3", "w3.h", () -> {}, w3);
    // 4: both stall, the primary wins, deleting the late hedge fails (token 3).
    Stall w4 = stall("w4");
    Stall w4h = stall("w4.h");
    storage.failBefore(CallKind.DELETE, "w4.h");
    policy.recordLatency(Duration.ZERO);
    Future<HedgedPublish> w4publish =
        callers.submit(
            () -> new HedgedWriter(policy, pool).publish(storage, "w4", "w4.h", content));
    assertThat(w4h.awaitBlocked(1, WAIT)).isTrue();
    w4.release();
    assertThat(w4publish.get().name()).isEqualTo("w4");
    w4h.release();
    awaitBackgroundWork();
    // 5: primary of unknown outcome, hedge fails: no winner, outcome unknown (token 4).
    policy.recordLatency(hour);
    storage.failAfter(CallKind.CREATE, "w5");
    storage.failBefore(CallKind.CREATE, "w5.h");
    assertThatThrownBy(() -> new HedgedWriter(policy, pool).publish(storage, "w5", "w5.h", content))
        .isInstanceOf(OutcomeUnknownException.class);
    // 6: primary stalls, the hedge is torn, the primary wins; the torn hedge is left (token 5).
    Stall w6 = stall("w6");
    storage.tearCreate("w6.h");
    policy.recordLatency(Duration.ZERO);
    Future<HedgedPublish> w6publish =
        callers.submit(
            () -> new HedgedWriter(policy, pool).publish(storage, "w6", "w6.h", content));
    await().atMost(WAIT).until(() -> injected(FaultKind.TORN_WRITE) == 1);
    w6.release();
    assertThat(w6publish.get().name()).isEqualTo("w6");
    // 7: primary stalls, no token left: skipped, the primary wins.
    Stall w7 = stall("w7");
    policy.recordLatency(Duration.ZERO);
    Future<HedgedPublish> w7publish =
        callers.submit(
            () -> new HedgedWriter(policy, pool).publish(storage, "w7", "w7.h", content));
    await().atMost(WAIT).until(() -> policy.metrics().snapshot().hedgesSkippedForBudget() == 1);
    w7.release();
    assertThat(w7publish.get().name()).isEqualTo("w7");
    awaitBackgroundWork();

    assertThat(policy.metrics().snapshot())
        .isEqualTo(
            new HedgeMetrics.Snapshot(
                /* writes */ 7,
                /* hedgesFired */ 5,
                /* hedgesAfterFailure */ 2,
                /* hedgesWon */ 2,
                /* hedgesSkippedForBudget */ 1,
                /* losersCleaned */ 1,
                /* cleanupFailures */ 1,
                /* losersLeft */ 1));
    assertThat(disk.names())
        .containsExactlyInAnyOrder("w1", "w2.h", "w3.h", "w4", "w4.h", "w5", "w6", "w6.h", "w7");
  }

  // ---- many writers ----

  @Test
  void concurrentPublishesUnderHeavyTailedLatencyLeaveOneCompleteCopyEachWithinBudget()
      throws Exception {
    long seed = 11;
    FaultInjectingStorage slow =
        FaultInjectingStorage.builder(disk, seed)
            .latency(
                CallKind.CREATE,
                Latency.heavyTailed(
                    Duration.ofMillis(1), 0.05, Duration.ofMillis(20), Duration.ofMillis(60)))
            .build();
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ofMillis(2))
            .initialDeadline(Duration.ofMillis(5))
            .budgetFraction(0.1)
            .budgetBurst(3)
            .build();
    HedgedWriter writer = writer(policy);
    int writes = 200;

    List<Callable<HedgedPublish>> tasks = new ArrayList<>();
    for (int i = 0; i < writes; i++) {
      int write = i;
      tasks.add(() -> writer.publish(slow, "f" + write, "f" + write + ".h", contentOf(write)));
    }
    ExecutorService eight = Executors.newFixedThreadPool(8);
    List<Future<HedgedPublish>> results;
    try {
      results = eight.invokeAll(tasks);
    } finally {
      eight.shutdown();
    }
    awaitBackgroundWork();

    HedgeMetrics.Snapshot metrics = policy.metrics().snapshot();
    for (int i = 0; i < writes; i++) {
      String winner = results.get(i).get().name();
      String loser = winner.endsWith(".h") ? "f" + i : "f" + i + ".h";
      assertThat(winner).as("seed %d write %d", seed, i).isIn("f" + i, "f" + i + ".h");
      assertThat(disk.bytes(winner)).as("seed %d write %d", seed, i).isEqualTo(contentOf(i));
      assertThat(disk.names()).as("seed %d write %d", seed, i).doesNotContain(loser);
    }
    assertThat(disk.names()).hasSize(writes);
    assertThat(metrics.writes()).isEqualTo(writes);
    assertThat(metrics.hedgesFired()).isLessThanOrEqualTo(3 + writes / 10);
    assertThat(metrics.losersCleaned()).isEqualTo(metrics.hedgesFired());
    assertThat(metrics.cleanupFailures()).isZero();
  }

  // ---- helpers ----

  /** Deadline zero: whatever has not completed when publish checks is hedged at once. */
  private static HedgePolicy hedgeAtOnce() {
    return HedgePolicy.builder().floor(Duration.ZERO).initialDeadline(Duration.ZERO).build();
  }

  /** A deadline no test reaches: only a failed primary is hedged. */
  private static HedgePolicy hedgeOnlyOnFailure() {
    return HedgePolicy.builder().initialDeadline(Duration.ofHours(1)).build();
  }

  private HedgedWriter writer(HedgePolicy policy) {
    return new HedgedWriter(policy, pool);
  }

  private Stall stall(String name) {
    Stall stall = storage.stall(CallKind.CREATE, name::equals);
    stalls.add(stall);
    return stall;
  }

  private Future<HedgedPublish> publishAsync(HedgedWriter writer) {
    return callers.submit(() -> writer.publish(storage, PRIMARY, ALTERNATE, content));
  }

  /** Sets the deadline (the window holds one latency), publishes, releases the given stalls. */
  private void run(
      HedgePolicy policy,
      Duration deadline,
      String primary,
      String alternate,
      Runnable setUp,
      Stall... releaseAfter)
      throws Exception {
    setUp.run();
    policy.recordLatency(deadline);
    HedgedPublish result =
        new HedgedWriter(policy, pool).publish(storage, primary, alternate, content);
    assertThat(result.name()).isIn(primary, alternate);
    for (Stall stall : releaseAfter) {
      assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
      stall.release();
    }
    awaitBackgroundWork();
  }

  /** Waits for every create and cleanup started so far, then gives the writers a fresh pool. */
  private void awaitBackgroundWork() throws InterruptedException {
    ExecutorService done = pool;
    pool = Executors.newCachedThreadPool();
    done.shutdown();
    assertThat(done.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
  }

  private long injected(FaultKind kind) {
    return storage.injectedFaults().get(kind);
  }

  private static HedgeMetrics.Snapshot metrics(HedgedWriter writer) {
    return writer.policy().metrics().snapshot();
  }

  private static HedgeMetrics.Snapshot counts(
      long writes,
      long fired,
      long afterFailure,
      long won,
      long skipped,
      long cleaned,
      long cleanupFailures,
      long left) {
    return new HedgeMetrics.Snapshot(
        writes, fired, afterFailure, won, skipped, cleaned, cleanupFailures, left);
  }

  private static byte[] contentOf(int write) {
    return randomBytes(100 + write, write);
  }

  private static byte[] randomBytes(int length, long seed) {
    byte[] bytes = new byte[length];
    new Random(seed).nextBytes(bytes);
    return bytes;
  }
}
