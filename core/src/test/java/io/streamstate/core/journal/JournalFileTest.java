package io.streamstate.core.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class JournalFileTest {
  private static final RollRule NO_LIMIT = RollRule.afterRecords(RollRule.UNBOUNDED);

  /** Runs nothing until told: what the closer was handed, and when it runs. */
  private final Queue<Runnable> closerTasks = new ArrayDeque<>();

  private final Executor closer = closerTasks::add;

  /** Names the storage suspects of being slow, and the late writes reported to it. */
  private final Set<String> suspects = new HashSet<>();

  private final List<String> reported = new ArrayList<>();

  private final FakeAppendableFile file = new FakeAppendableFile("j-1");

  private Storage storage() {
    return (Storage)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Storage.class, SupportsLateWriteReports.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "isSuspectedSlow" -> suspects.contains((String) args[0]);
                  case "reportLateWrite" -> {
                    reported.add((String) args[0]);
                    yield null;
                  }
                  default -> throw new UnsupportedOperationException(method.getName());
                });
  }

  private JournalFile journal(long closeBy) {
    return new JournalFile(file, 8, closeBy, storage(), closer);
  }

  private void runCloser() {
    while (!closerTasks.isEmpty()) {
      closerTasks.poll().run();
    }
  }

  @Test
  void anIdleJournalIsClosedInTheBackgroundWhenRetired() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    j.append(new byte[] {1, 2}, 1);

    j.retire();

    assertThat(file.closes).as("not in the caller's thread").hasValue(0);
    assertThat(j.takesAppend(NO_LIMIT, 1, 0)).isFalse();
    runCloser();
    assertThat(file.closes).hasValue(1);
    assertThat(j.closed()).isCompleted();
  }

  @Test
  void aRetiredJournalIsClosedOnlyOnceItsStalledAppendReturns() throws Exception {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    file.hold();
    assertThat(j.tryReserve(NO_LIMIT, 3, 0)).isTrue();
    CompletableFuture<Long> append =
        CompletableFuture.supplyAsync(() -> j.appendReserved(new byte[3]));
    assertThat(file.appendStarted.await(10, TimeUnit.SECONDS)).isTrue();

    j.retire(); // returns although the append is stalled
    runCloser();

    assertThat(j.appendsInFlight()).isEqualTo(1);
    assertThat(file.closes).as("the late append is never cut").hasValue(0);
    file.release();
    assertThat(append.get(10, TimeUnit.SECONDS)).isEqualTo(0L);
    assertThat(j.appendsInFlight()).isZero();
    runCloser();
    assertThat(file.closes).hasValue(1);
  }

  @Test
  void aReservedAppendKeepsARetiredJournalOpenUntilItIsWritten() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    j.reserve(4);
    j.retire();
    runCloser();
    assertThat(file.isOpen()).isTrue();

    assertThat(j.appendReserved(new byte[4])).isEqualTo(0L);

    runCloser();
    assertThat(file.isOpen()).isFalse();
  }

  @Test
  void aFailedAppendRetiresItsJournal() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    file.failNextAppend();

    assertThatThrownBy(() -> j.append(new byte[1], 1))
        .isInstanceOf(OutcomeUnknownException.class)
        .hasMessage("injected failure appending to j-1");

    assertThat(j.isRetired()).isTrue();
    assertThat(j.tryReserve(NO_LIMIT, 1, 0)).isFalse();
    runCloser();
    assertThat(j.closed()).isCompleted();
  }

  @Test
  void tryReserveCountsTheRecordAndRefusesOnceTheRuleSaysFull() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    RollRule twoRecords = RollRule.afterRecords(2);

    assertThat(j.tryReserve(twoRecords, 10, 0)).isTrue();
    assertThat(j.tryReserve(twoRecords, 20, 0)).isTrue();
    assertThat(j.tryReserve(twoRecords, 1, 0)).isFalse();

    assertThat(j.reservedRecords()).isEqualTo(2);
    assertThat(j.reservedBytes()).isEqualTo(8 + 10 + 20);
    assertThat(j.appendsInFlight()).isEqualTo(2);
  }

  @Test
  void noAppendStartsAtItsCloseByTime() {
    JournalFile j = journal(1_000);
    assertThat(j.takesAppend(NO_LIMIT, 1, 999)).isTrue();
    assertThat(j.tryReserve(NO_LIMIT, 1, 1_000)).isFalse();
    assertThat(j.reservedRecords()).isZero();
  }

  @Test
  void aJournalClosedForAppendsTakesNone() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    file.close();
    assertThat(j.takesAppend(NO_LIMIT, 1, 0)).isFalse();
  }

  @Test
  void aSuspectedJournalIsDueOnlyUnderARuleThatSaysSoAndUntilTheSuspicionIsAccepted() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    RollRule bySuspicion = NO_LIMIT.orWhenSuspectedSlow();
    suspects.add("j-1");

    assertThat(j.isSuspectedSlow()).isTrue();
    assertThat(j.takesAppend(NO_LIMIT, 1, 0)).isTrue();
    assertThat(j.takesAppend(bySuspicion, 1, 0)).isFalse();

    j.acceptSuspicion();
    assertThat(j.isSuspectedSlow()).isFalse();
    assertThat(j.takesAppend(bySuspicion, 1, 0)).isTrue();
  }

  @Test
  void closeClosesNowEvenWithABackgroundClosePending() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    List<String> after = new ArrayList<>();
    j.closed().thenRun(() -> after.add("closed"));
    j.retire(); // a close is queued

    j.close();

    assertThat(file.isOpen()).isFalse();
    assertThat(j.isRetired()).isTrue();
    runCloser();
    assertThat(after).as("what follows the close runs once").containsExactly("closed");
  }

  @Test
  void retiringTwiceClosesOnce() {
    JournalFile j = journal(JournalFile.NO_CLOSE_BY);
    j.retire();
    j.retire();
    assertThat(closerTasks).hasSize(1);
  }

  @Test
  void aLateAppendIsReportedUnderItsName() {
    journal(JournalFile.NO_CLOSE_BY).reportLateAppend();
    assertThat(reported).containsExactly("j-1");
  }
}
