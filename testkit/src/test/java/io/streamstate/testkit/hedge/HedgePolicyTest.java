package io.streamstate.testkit.hedge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The deadline and the budget of {@link HedgePolicy}, from injected latencies and writes. */
class HedgePolicyTest {

  @Test
  void deadlineIsTheInitialOneUntilEnoughLatenciesAreKnown() {
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(Duration.ofMillis(10))
            .initialDeadline(Duration.ofMillis(200))
            .minSamples(5)
            .build();

    assertThat(policy.deadline()).isEqualTo(Duration.ofMillis(200));
    for (int i = 0; i < 4; i++) {
      policy.recordLatency(Duration.ofMillis(1));
    }
    assertThat(policy.deadline()).isEqualTo(Duration.ofMillis(200));

    policy.recordLatency(Duration.ofMillis(1));
    assertThat(policy.deadline()).as("1.5 x 1 ms is below the floor").isEqualTo(ofMillis(10));
  }

  @Test
  void initialDeadlineNeverUndercutsTheFloor() {
    HedgePolicy policy =
        HedgePolicy.builder().floor(ofMillis(50)).initialDeadline(ofMillis(5)).build();

    assertThat(policy.deadline()).isEqualTo(ofMillis(50));
  }

  @Test
  void deadlineIsMultiplierTimesThePercentileOfRecentLatencies() {
    HedgePolicy policy =
        HedgePolicy.builder()
            .floor(ofMillis(1))
            .multiplier(2)
            .percentile(0.95)
            .window(100)
            .minSamples(100)
            .build();

    for (int ms = 100; ms >= 1; ms--) { // order does not matter
      policy.recordLatency(ofMillis(ms));
    }

    // Nearest rank: 95 of the 100 latencies are at or below 95 ms.
    assertThat(policy.deadline()).isEqualTo(ofMillis(190));
  }

  @Test
  void rareStallsDoNotMoveTheDeadlineButACommonSlowdownDoes() {
    HedgePolicy policy =
        HedgePolicy.builder().floor(ofMillis(1)).multiplier(1.5).percentile(0.95).build();

    for (int i = 0; i < 250; i++) {
      policy.recordLatency(ofMillis(10));
    }
    for (int i = 0; i < 6; i++) {
      policy.recordLatency(Duration.ofSeconds(20)); // 6 of 256: above the 95th percentile
    }
    assertThat(policy.deadline()).isEqualTo(ofMillis(15));

    for (int i = 0; i < 20; i++) {
      policy.recordLatency(Duration.ofSeconds(20)); // now 26 of the last 256: the store is slow
    }
    assertThat(policy.deadline()).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void deadlineForgetsLatenciesOlderThanTheWindow() {
    HedgePolicy policy = HedgePolicy.builder().floor(ofMillis(1)).window(10).minSamples(10).build();

    record(policy, 10, ofMillis(100));
    assertThat(policy.deadline()).isEqualTo(ofMillis(150));

    record(policy, 10, ofMillis(10));
    assertThat(policy.deadline()).as("faster again").isEqualTo(ofMillis(15));

    record(policy, 10, Duration.ofSeconds(1));
    assertThat(policy.deadline()).as("slower again").isEqualTo(ofMillis(1500));
  }

  @Test
  void deadlineNeverFallsBelowTheFloor() {
    HedgePolicy policy = HedgePolicy.builder().floor(ofMillis(20)).minSamples(1).build();

    record(policy, 100, Duration.ofNanos(1));

    assertThat(policy.deadline()).isEqualTo(ofMillis(20));
  }

  @Test
  void budgetStartsFullEachWriteEarnsItsFractionAndAHedgeSpendsOne() {
    HedgePolicy policy = HedgePolicy.builder().budgetBurst(2).budgetFraction(0.25).build();

    assertThat(policy.tryAcquireHedge()).isTrue();
    assertThat(policy.tryAcquireHedge()).isTrue();
    assertThat(policy.tryAcquireHedge()).as("burst spent").isFalse();

    writes(policy, 3);
    assertThat(policy.tryAcquireHedge()).as("0.75 tokens").isFalse();
    writes(policy, 1);
    assertThat(policy.tryAcquireHedge()).as("1 token after 4 writes").isTrue();
    assertThat(policy.tryAcquireHedge()).isFalse();
  }

  @Test
  void budgetNeverHoldsMoreThanItsBurst() {
    HedgePolicy policy = HedgePolicy.builder().budgetBurst(3).budgetFraction(1).build();

    writes(policy, 1000);

    assertThat(policy.tryAcquireHedge()).isTrue();
    assertThat(policy.tryAcquireHedge()).isTrue();
    assertThat(policy.tryAcquireHedge()).isTrue();
    assertThat(policy.tryAcquireHedge()).isFalse();
  }

  @Test
  void budgetBoundsHedgesToItsFractionOfWrites() {
    HedgePolicy policy = HedgePolicy.defaults(); // 5 % of writes, bursts of 5

    int hedges = 0;
    for (int i = 0; i < 10_000; i++) {
      policy.recordWrite();
      if (policy.tryAcquireHedge()) { // as if every write were late
        hedges++;
      }
    }

    assertThat(hedges).isBetween(500, 505);
    assertThat(policy.metrics().snapshot().writes()).isEqualTo(10_000);
  }

  @Test
  void defaultsAreDocumented() {
    HedgePolicy policy = HedgePolicy.defaults();

    assertThat(policy.isEnabled()).isTrue();
    assertThat(policy.deadline()).isEqualTo(ofMillis(200));
    assertThat(policy.toString())
        .isEqualTo(
            "HedgePolicy[enabled, floor=PT0.02S, initialDeadline=PT0.2S, multiplier=1.5,"
                + " percentile=0.95, window=256, minSamples=20, budgetFraction=0.05,"
                + " budgetBurst=5.0, stalledAfter=PT1S, reserveFraction=0.01, reserveBurst=8.0]");
    assertThat(policy.stalledAfter()).isEqualTo(ofMillis(1000));
    assertThat(HedgePolicy.builder().disable().build().isEnabled()).isFalse();
  }

  @Test
  void metricsSinceGiveTheDifference() {
    HedgePolicy policy = HedgePolicy.defaults();
    writes(policy, 3);
    HedgeMetrics.Snapshot before = policy.metrics().snapshot();
    writes(policy, 4);

    assertThat(policy.metrics().snapshot().since(before))
        .isEqualTo(new HedgeMetrics.Snapshot(4, 0, 0, 0, 0, 0, 0, 0));
  }

  @Test
  void rejectsSettingsOutOfRange() {
    assertThatThrownBy(() -> HedgePolicy.builder().floor(ofMillis(-1)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("floor must be a duration >= 0, was PT-0.001S");
    assertThatThrownBy(() -> HedgePolicy.builder().multiplier(0.5).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("multiplier must be >= 1, was 0.5");
    assertThatThrownBy(() -> HedgePolicy.builder().percentile(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("percentile must be in (0, 1], was 0.0");
    assertThatThrownBy(() -> HedgePolicy.builder().window(10).minSamples(11).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("minSamples must be in [1, window=10], was 11");
    assertThatThrownBy(() -> HedgePolicy.builder().budgetFraction(1.5).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("budgetFraction must be in [0, 1], was 1.5");
    assertThatThrownBy(() -> HedgePolicy.builder().budgetBurst(0.5).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("budgetBurst must be >= 1, was 0.5");
  }

  private static Duration ofMillis(long ms) {
    return Duration.ofMillis(ms);
  }

  private static void record(HedgePolicy policy, int times, Duration latency) {
    for (int i = 0; i < times; i++) {
      policy.recordLatency(latency);
    }
  }

  private static void writes(HedgePolicy policy, int times) {
    for (int i = 0; i < times; i++) {
      policy.recordWrite();
    }
  }
}
