package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The tracking alone: suspects (d1), known DataNodes (d2), the favoured choice (d3), DataNodes
 * dropped by pipeline recovery (d6).
 */
class SlowDataNodesTest {
  private static final long WINDOW = 60_000;
  private static final List<String> ALL = List.of("a:1", "b:1", "c:1", "d:1", "e:1", "f:1");

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final SlowDataNodes slow = new SlowDataNodes(WINDOW, now::get);

  @Test
  void withNothingSuspectFilesArePlacedAsUsual() {
    slow.recordWorking(ALL);
    assertThat(slow.favoredNodes(3)).isEmpty();
    assertThat(slow.anySuspect(ALL)).isFalse();
  }

  @Test
  void aLatePipelineMakesItsDataNodesSuspectAndFavouredNodesAvoidThem() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    assertThat(slow.suspects()).containsExactly("a:1", "b:1", "c:1");
    assertThat(slow.anySuspect(List.of("c:1", "d:1", "e:1"))).isTrue();
    assertThat(slow.anySuspect(List.of("d:1", "e:1", "f:1"))).isFalse();
    Set<List<String>> seen = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      List<String> favored = slow.favoredNodes(3);
      assertThat(favored).containsExactlyInAnyOrder("d:1", "e:1", "f:1");
      seen.add(favored);
    }
    assertThat(seen).as("in random order, so first replicas spread").hasSizeGreaterThan(1);
  }

  @Test
  void aSuspicionEndsAfterItsWindowAndALaterReportExtendsIt() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    now.addAndGet(WINDOW / 2);
    slow.suspect(List.of("a:1", "d:1", "e:1"));
    now.addAndGet(WINDOW / 2);
    assertThat(slow.suspects()).containsExactly("a:1", "d:1", "e:1");
    assertThat(slow.favoredNodes(3)).containsExactlyInAnyOrder("b:1", "c:1", "f:1");
    now.addAndGet(WINDOW / 2);
    assertThat(slow.suspects()).isEmpty();
    assertThat(slow.favoredNodes(3)).isEmpty();
    assertThat(slow.anySuspect(ALL)).isFalse();
  }

  @Test
  void withTooFewKnownDataNodesTheSuspectsReportedLeastFillTheRest() {
    slow.recordWorking(ALL);
    // The slow node is in both late pipelines, its neighbours in one each.
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    slow.suspect(List.of("a:1", "d:1", "e:1"));
    for (int i = 0; i < 50; i++) {
      List<String> favored = slow.favoredNodes(3);
      assertThat(favored).hasSize(3).contains("f:1").doesNotContain("a:1").doesNotHaveDuplicates();
    }
  }

  @Test
  void aDataNodeDroppedByPipelineRecoveryIsNoLongerKnownAndIsNeverFavoured() {
    slow.recordWorking(ALL);
    slow.dropped(List.of("b:1"));
    assertThat(slow.known()).doesNotContain("b:1").hasSize(ALL.size() - 1);
    assertThat(slow.suspects()).containsExactly("b:1");
    for (int i = 0; i < 50; i++) {
      assertThat(slow.favoredNodes(3)).hasSize(3).doesNotContain("b:1");
    }
    now.addAndGet(WINDOW + 1);
    assertThat(slow.suspects()).isEmpty();
  }

  @Test
  void withNoKnownDataNodeTheFileSystemPlacesTheFile() {
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    assertThat(slow.favoredNodes(3)).isEmpty();
  }

  @Test
  void whenEveryKnownDataNodeIsSuspectTheOnesReportedLeastAreFavoured() {
    slow.recordWorking(ALL);
    // Writes late at once through different pipelines, each through the slow node a:1.
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    slow.suspect(List.of("d:1", "a:1", "e:1"));
    slow.suspect(List.of("f:1", "b:1", "a:1"));
    slow.suspect(List.of("c:1", "a:1", "d:1"));
    assertThat(slow.suspects()).hasSize(6);
    for (int i = 0; i < 20; i++) {
      assertThat(slow.favoredNodes(3)).hasSize(3).doesNotContain("a:1");
    }
  }

  @Test
  void aDataNodeNotSeenWorkingForLongIsForgotten() {
    slow.recordWorking(List.of("d:1", "e:1", "f:1"));
    now.addAndGet(SlowDataNodes.KNOWN_MILLIS / 2);
    slow.recordWorking(List.of("a:1", "b:1", "c:1"));
    now.addAndGet(SlowDataNodes.KNOWN_MILLIS / 2 + 1);
    assertThat(slow.known()).containsExactly("a:1", "b:1", "c:1");
    slow.suspect(List.of("a:1", "b:1"));
    // Never d, e, f (forgotten); a and b were just named once each by one late pipeline, so they
    // are not favoured either: the file system places the other replicas.
    assertThat(slow.favoredNodes(3)).containsExactly("c:1");
    now.addAndGet(SlowDataNodes.FRESH_REPORT_MILLIS);
    slow.recordWorking(List.of("c:1"));
    List<String> favored = slow.favoredNodes(3);
    assertThat(favored).containsExactlyInAnyOrder("a:1", "b:1", "c:1"); // never d, e, f
    assertThat(favored.get(0)).isEqualTo("c:1"); // the known healthy one first
  }

  @Test
  void aHedgeOfAFreshLateWriteIsNotPlacedOnItsPipeline() {
    // The issue-15 benchmark's batch 82: b, d and f were reported in an earlier period, then a
    // write through [a, c, e] is late (a is slow now): every DataNode is suspect. Filling by
    // fewest reports alone (one each) put the hedge on the slow a again.
    slow.recordWorking(ALL);
    slow.suspect(List.of("b:1", "d:1", "f:1"));
    now.addAndGet(SlowDataNodes.FRESH_REPORT_MILLIS + 1);
    slow.suspect(List.of("a:1", "c:1", "e:1"));
    assertThat(slow.suspects()).hasSize(6);
    for (int i = 0; i < 50; i++) {
      assertThat(slow.favoredNodes(3))
          .containsExactlyInAnyOrder("b:1", "d:1", "f:1")
          .doesNotContain("a:1", "c:1", "e:1");
    }
  }

  @Test
  void freshSuspectsNamedEquallyOftenAreNeverFavoured() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    slow.suspect(List.of("d:1", "e:1", "f:1"));
    // Six suspects, each named once, all fresh: nothing tells the slow ones apart.
    assertThat(slow.favoredNodes(3)).isEmpty();
    slow.suspect(List.of("a:1", "d:1", "b:1"));
    // Now a, b, d are named twice: c, e, f less often, so they are favoured.
    for (int i = 0; i < 20; i++) {
      assertThat(slow.favoredNodes(3)).containsExactlyInAnyOrder("c:1", "e:1", "f:1");
    }
  }

  @Test
  void aWorkingWriteDoesNotLiftASuspicion() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    slow.recordWorking(List.of("a:1", "b:1", "c:1")); // the late write completes, late
    assertThat(slow.suspects()).containsExactly("a:1", "b:1", "c:1");
  }

  @Test
  void aLateWriteThatCompletesWithinTheNoiseWindowWithdrawsItsReport() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1")); // a stall, reported at t0
    long stalledAt = now.get();
    now.addAndGet(200);
    slow.suspect(List.of("c:1", "d:1", "e:1")); // noise: completes 300 ms after its report
    long noisyAt = now.get();
    now.addAndGet(300);
    slow.lateWriteCompleted(List.of("c:1", "d:1", "e:1"), noisyAt);
    // d and e had only the noisy report; c keeps the stall's.
    assertThat(slow.suspects()).containsExactly("a:1", "b:1", "c:1");

    now.addAndGet(SlowDataNodes.NOISE_MILLIS); // the stalled write completes seconds late
    slow.lateWriteCompleted(List.of("a:1", "b:1", "c:1"), stalledAt);
    assertThat(slow.suspects()).containsExactly("a:1", "b:1", "c:1");
    assertThat(slow.favoredNodes(3)).containsExactlyInAnyOrder("d:1", "e:1", "f:1");
  }

  @Test
  void aPipelineIsWorthLeavingOnlyIfANewOneCanAvoidEverySuspect() {
    slow.recordWorking(ALL);
    slow.suspect(List.of("a:1", "b:1", "c:1"));
    assertThat(slow.isAvoidable(List.of("c:1", "d:1", "e:1"))).isTrue();
    assertThat(slow.isAvoidable(List.of("d:1", "e:1", "f:1"))).isFalse(); // holds no suspect
    slow.suspect(List.of("a:1", "d:1", "e:1"));
    assertThat(slow.isAvoidable(List.of("a:1", "d:1", "e:1"))).as("only f left").isFalse();

    SlowDataNodes single = new SlowDataNodes(WINDOW, now::get); // a cluster of one DataNode
    single.recordWorking(List.of("a:1"));
    single.suspect(List.of("a:1"));
    assertThat(single.isAvoidable(List.of("a:1"))).isFalse();
  }

  @Test
  void aZeroWindowTurnsTrackingOff() {
    SlowDataNodes off = new SlowDataNodes(0, now::get);
    off.recordWorking(ALL);
    off.suspect(List.of("a:1", "b:1", "c:1"));
    assertThat(off.enabled()).isFalse();
    assertThat(off.suspects()).isEmpty();
    assertThat(off.favoredNodes(3)).isEmpty();
  }
}
