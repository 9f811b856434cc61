package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.streamstate.bench.spark.LatencyModel.Op;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The drawn latencies ({@link LatencyModel#draw}), never the time slept. */
class LatencyModelTest {
  private static final int DRAWS = 100_000;

  private static double[] draws(LatencyModel model, Op op, long bytes, int load, int n) {
    double[] d = new double[n];
    for (int i = 0; i < n; i++) {
      d[i] = model.draw(op, bytes, load);
    }
    return d;
  }

  /** A fixed mix of kinds, sizes and loads. */
  private static double[] mixedDraws(LatencyModel model) {
    Op[] ops = Op.values();
    double[] d = new double[1_000];
    for (int i = 0; i < d.length; i++) {
      d[i] = model.draw(ops[i % ops.length], (i * 7919L) % 1_000_000, 1 + i % 4);
    }
    return d;
  }

  @Test
  void sameSeedGivesSameLatencySequenceInEveryProfile() {
    for (String profile : new String[] {"slow-datanode", "busy-namenode", "s3"}) {
      double[] a = mixedDraws(new LatencyModel(profile, 7, 1.0, 0));
      double[] b = mixedDraws(new LatencyModel(profile, 7, 1.0, 0));
      double[] other = mixedDraws(new LatencyModel(profile, 8, 1.0, 0));
      assertThat(a).as(profile).containsExactly(b);
      assertThat(Arrays.equals(a, other)).as(profile + " with another seed").isFalse();
    }
  }

  @Test
  void noneProfileAddsNothing() {
    LatencyModel model = new LatencyModel("none", 1, 1.0, 0);
    for (Op op : Op.values()) {
      assertThat(draws(model, op, 10_000_000, 5, 100)).containsOnly(0.0);
    }
  }

  @Test
  void slowDatanodeStallsAboutOnePercentOfDataWritesForFiveToTwentySecondsTimesStallScale() {
    double stallScale = 0.1;
    LatencyModel model = new LatencyModel("slow-datanode", 42, stallScale, 0);
    double[] writes = draws(model, Op.WRITE, 0, 1, DRAWS);
    long stalls = Arrays.stream(writes).filter(ms -> ms >= 100).count();
    // Binomial(100000, 0.01): mean 1000, sd ~31; +-20% is > 6 sd.
    assertThat(stalls).isBetween(800L, 1200L);
    assertThat(Arrays.stream(writes).filter(ms -> ms >= 100))
        .allSatisfy(ms -> assertThat(ms).isBetween(500.0, 2_000.0));
    assertThat(Arrays.stream(writes).filter(ms -> ms < 100))
        .allSatisfy(ms -> assertThat(ms).isBetween(2.0, 12.0));
  }

  @Test
  void slowDatanodeMetadataIsFastAndNeverStalls() {
    LatencyModel model = new LatencyModel("slow-datanode", 42, 1.0, 0);
    for (Op op : Op.values()) {
      if (op.isMetadata()) {
        assertAllBetween(draws(model, op, 0, 1, 10_000), 0.3, 2.0);
      }
    }
  }

  @Test
  void slowDatanodeWritesPayForTheirBytesAt200MegabytesPerSecond() {
    LatencyModel model = new LatencyModel("slow-datanode", 3, 1.0, 0);
    double[] small = draws(model, Op.WRITE, 0, 1, DRAWS);
    double[] big = draws(model, Op.WRITE, 20_000_000, 1, DRAWS);
    // 20 MB at 200 MB/s = 100 ms more, stalls alike on both sides.
    assertThat(median(big) - median(small)).isCloseTo(100.0, within(2.0));
  }

  @Test
  void busyNamenodeMetadataCostGrowsWithOperationsInFlight() {
    LatencyModel model = new LatencyModel("busy-namenode", 11, 1.0, 0);
    for (Op op : new Op[] {Op.CREATE, Op.RENAME, Op.DELETE, Op.MKDIRS, Op.STATUS, Op.LIST}) {
      double alone = mean(draws(model, op, 0, 1, 20_000));
      double loaded = mean(draws(model, op, 0, 8, 20_000));
      assertThat(alone).as(op.name()).isCloseTo(4.0, within(0.1));
      assertThat(loaded / alone).as(op.name()).isCloseTo(8.0, within(0.3));
    }
  }

  @Test
  void busyNamenodeDataOperationsIgnoreMetadataLoad() {
    LatencyModel model = new LatencyModel("busy-namenode", 11, 1.0, 0);
    double alone = mean(draws(model, Op.WRITE, 0, 1, 20_000));
    double loaded = mean(draws(model, Op.WRITE, 0, 8, 20_000));
    assertThat(alone).isCloseTo(2.5, within(0.1));
    assertThat(loaded).isCloseTo(2.5, within(0.1));
  }

  @Test
  void busyNamenodePausesAreLongRareAndScaled() {
    double stallScale = 0.1;
    LatencyModel model = new LatencyModel("busy-namenode", 5, stallScale, 0);
    // Walk the first hour of the schedule in 10 ms steps.
    int pauses = 0;
    long pausedMs = 0;
    boolean inPause = false;
    for (long t = 0; t < 3_600_000; t += 10) {
      long remaining = model.pauseRemainingMs(t);
      if (remaining > 0 && !inPause) {
        pauses++;
        assertThat(remaining).isBetween(280L, 1_000L); // 3-10 s x 0.1, first 10 ms maybe gone
      }
      inPause = remaining > 0;
      pausedMs += inPause ? 10 : 0;
    }
    // Mean gap 15 s: about 240 pauses an hour (Poisson, sd ~15).
    assertThat(pauses).isBetween(180, 300);
    // Mean length 0.65 s: about 4% of the time paused.
    assertThat(pausedMs / 3_600_000.0).isBetween(0.03, 0.055);
  }

  @Test
  void otherProfilesNeverPause() {
    for (String profile : new String[] {"none", "slow-datanode", "s3"}) {
      LatencyModel model = new LatencyModel(profile, 5, 1.0, 0);
      for (long t = 0; t < 600_000; t += 100) {
        assertThat(model.pauseRemainingMs(t)).as(profile).isZero();
      }
    }
  }

  @Test
  void s3RenameIsACopyAtThirtyMegabytesPerSecond() {
    LatencyModel model = new LatencyModel("s3", 9, 1.0, 0);
    double empty = mean(draws(model, Op.RENAME, 0, 1, 10_000));
    double thirtyMb = mean(draws(model, Op.RENAME, 30_000_000, 1, 10_000));
    assertThat(empty).isCloseTo(67.5, within(1.0)); // 30-60 copy + 15-30 delete
    assertThat(thirtyMb - empty).isCloseTo(1_000.0, within(2.0));
  }

  @Test
  void s3LatencyRangesPerRequestKind() {
    LatencyModel model = new LatencyModel("s3", 9, 1.0, 0);
    assertAllBetween(
        draws(model, Op.WRITE, 8_000_000, 1, 1_000), 125.0, 160.0); // 25-60 + 8 MB at 80 MB/s
    assertAllBetween(draws(model, Op.OPEN, 0, 1, 1_000), 15.0, 40.0);
    assertAllBetween(draws(model, Op.LIST, 0, 1, 1_000), 20.0, 50.0);
    for (Op op : new Op[] {Op.CREATE, Op.STATUS, Op.MKDIRS, Op.DELETE}) {
      assertAllBetween(draws(model, op, 0, 1, 1_000), 10.0, 30.0);
    }
  }

  @Test
  void delayWithLatencyScaleZeroReportsTheDrawnLatencyAndDoesNotSleep() throws Exception {
    LatencyModel applied = new LatencyModel("s3", 21, 1.0, 0);
    LatencyModel drawing = new LatencyModel("s3", 21, 1.0, 0);
    for (int i = 0; i < 200; i++) {
      LatencyModel.Delay d = applied.delay(Op.LIST, 0);
      assertThat(d.modelMs()).isEqualTo(drawing.draw(Op.LIST, 0, 1));
      assertThat(d.modelMs()).isBetween(20.0, 50.0);
    }
  }

  @Test
  void rejectsUnknownProfilesAndNegativeScales() {
    assertThatThrownBy(() -> new LatencyModel("tape", 1, 1.0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown simfs profile 'tape'");
    assertThatThrownBy(() -> new LatencyModel("s3", 1, 1.0, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must be >= 0");
  }

  private static void assertAllBetween(double[] d, double lo, double hi) {
    assertThat(Arrays.stream(d).min().orElseThrow()).isGreaterThanOrEqualTo(lo);
    assertThat(Arrays.stream(d).max().orElseThrow()).isLessThanOrEqualTo(hi);
  }

  private static double mean(double[] d) {
    return Arrays.stream(d).average().orElseThrow();
  }

  private static double median(double[] d) {
    double[] s = d.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }
}
