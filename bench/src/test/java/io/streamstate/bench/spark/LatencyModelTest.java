package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.streamstate.bench.spark.LatencyModel.Op;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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

  // ---- slow-datanode-periods ----

  /** slow-datanode-periods' cluster of {@code datanodes} DataNodes, pipelines of 3. */
  private static DataNodeCluster cluster(int datanodes, long seed, double stallScale) {
    return new LatencyModel("slow-datanode-periods", seed, stallScale, 0, datanodes, 3).cluster();
  }

  /** The slow periods of {@code node} that begin before {@code horizonMs}: [start, end) pairs. */
  private static List<long[]> periods(DataNodeCluster c, int node, long horizonMs) {
    List<long[]> periods = new ArrayList<>();
    long step = Math.max(1, horizonMs / 3_600_000); // 100 ms at scale 1 (shorter than any period)
    long t = 0;
    while (t < horizonMs) {
      long until = c.slowUntilMs(node, t);
      if (until > t) {
        // Find where this period began (1 ms steps back would be slow: halve the step instead).
        long start = t;
        for (long back = 1 << 20; back > 0; back >>= 1) {
          if (start - back >= 0 && c.slowUntilMs(node, start - back) == until) {
            start -= back;
          }
        }
        periods.add(new long[] {start, until});
        t = until;
      } else {
        t += step;
      }
    }
    return periods;
  }

  @Test
  void slowDatanodePeriodsEachDataNodeIsSlowAboutFivePercentOfTheTimeAtEveryScale() {
    // 12.5 s on average every 252.5 s: 4.95 %; six DataNodes: some one slow 26 % of the time.
    assertThat(DataNodeCluster.expectedSlowFraction()).isCloseTo(0.0495, within(0.0001));
    assertThat(DataNodeCluster.expectedAnySlowFraction(6)).isCloseTo(0.262, within(0.001));
    for (double stallScale : new double[] {1.0, 0.1}) {
      DataNodeCluster c = cluster(6, 42, stallScale);
      // About 1,400 cycles of each DataNode.
      long horizon = (long) (360_000_000 * stallScale);
      long slow = 0;
      int count = 0;
      for (int node = 0; node < 6; node++) {
        for (long[] p : periods(c, node, horizon)) {
          count++;
          slow += Math.min(p[1], horizon) - p[0];
          if (p[0] > 0 && p[1] < horizon) {
            assertThat(p[1] - p[0])
                .as("period length at scale " + stallScale)
                .isBetween((long) (5_000 * stallScale) - 2, (long) (20_000 * stallScale) + 2);
          }
        }
      }
      double fraction = slow / (6.0 * horizon);
      assertThat(fraction).as("scale " + stallScale).isCloseTo(0.0495, within(0.005));
      // One period per 252.5 s of each DataNode's time.
      assertThat(count / (6.0 * horizon / (252_500 * stallScale)))
          .as("periods per mean cycle at scale " + stallScale)
          .isCloseTo(1.0, within(0.06));
    }
  }

  @Test
  void slowDatanodePeriodsSomeDataNodeOfSixIsSlowAboutAQuarterOfTheTime() {
    DataNodeCluster c = cluster(6, 7, 0.1);
    long horizon = 36_000_000; // 10 h at scale 0.1: about 1,400 cycles of each DataNode
    int samples = 0;
    int anySlow = 0;
    int pipelineHeld = 0;
    int[] pipeline = {0, 2, 4};
    for (long t = 0; t < horizon; t += 50) {
      samples++;
      boolean any = false;
      for (int node = 0; node < 6; node++) {
        any |= c.slowUntilMs(node, t) > t;
      }
      anySlow += any ? 1 : 0;
      pipelineHeld += c.pipelineWaitMs(pipeline, t) > 0 ? 1 : 0;
    }
    assertThat(anySlow / (double) samples).isCloseTo(0.262, within(0.025));
    // 1 - (1 - 0.0495)^3 = 14.1 %
    assertThat(pipelineHeld / (double) samples).isCloseTo(0.141, within(0.02));
  }

  @Test
  void slowDatanodePeriodsSameSeedGivesTheSameScheduleAndPipelines() {
    DataNodeCluster a = cluster(6, 11, 1.0);
    DataNodeCluster b = cluster(6, 11, 1.0);
    DataNodeCluster other = cluster(6, 12, 1.0);
    boolean differs = false;
    // Asked in another order than a (backwards): the schedule does not depend on it.
    for (long t = 3_600_000; t >= 0; t -= 250) {
      for (int node = 0; node < 6; node++) {
        b.slowUntilMs(node, t);
      }
    }
    for (long t = 0; t < 3_600_000; t += 250) {
      for (int node = 0; node < 6; node++) {
        assertThat(a.slowUntilMs(node, t)).isEqualTo(b.slowUntilMs(node, t));
        differs |= a.slowUntilMs(node, t) != other.slowUntilMs(node, t);
      }
    }
    assertThat(differs).as("another seed, another schedule").isTrue();
    for (int i = 0; i < 100; i++) {
      assertThat(a.pickPipeline(List.of())).containsExactly(b.pickPipeline(List.of()));
    }
  }

  @Test
  void slowDatanodePeriodsPipelinesAreDistinctDataNodesEveryOneEquallyLikely() {
    DataNodeCluster c = cluster(8, 3, 1.0);
    int[] uses = new int[8];
    for (int i = 0; i < 8_000; i++) {
      int[] p = c.pickPipeline(List.of());
      assertThat(p).hasSize(3).doesNotHaveDuplicates();
      for (int node : p) {
        assertThat(node).isBetween(0, 7);
        uses[node]++;
      }
    }
    // 24,000 places over 8 DataNodes: 3,000 each (binomial sd ~46).
    assertThat(Arrays.stream(uses).min().orElseThrow()).isGreaterThanOrEqualTo(2_700);
    assertThat(Arrays.stream(uses).max().orElseThrow()).isLessThanOrEqualTo(3_300);
  }

  @Test
  void slowDatanodePeriodsFavoredDataNodesAreUsedAndFilledUpAtRandom() {
    DataNodeCluster c = cluster(6, 3, 1.0);
    assertThat(DataNodeCluster.names(c.pickPipeline(List.of("dn2", "dn6", "dn1"))))
        .containsExactly("dn2", "dn6", "dn1");
    // More than needed: the first three.
    assertThat(DataNodeCluster.names(c.pickPipeline(List.of("dn4", "dn3", "dn5", "dn1"))))
        .containsExactly("dn4", "dn3", "dn5");
    // Unknown names and repeats are skipped; the rest is random, never a favoured one again.
    Set<String> fills = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      List<String> p =
          DataNodeCluster.names(c.pickPipeline(List.of("dn7", "dn0", "x", "dn3", "dn3", "dn03")));
      assertThat(p).hasSize(3).doesNotHaveDuplicates().startsWith("dn3");
      fills.addAll(p.subList(1, 3));
    }
    assertThat(fills).containsExactlyInAnyOrder("dn1", "dn2", "dn4", "dn5", "dn6");
    assertThatThrownBy(() -> cluster(2, 1, 1.0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 <= fs.simfs.replication <= fs.simfs.datanodes");
  }

  @Test
  void slowDatanodePeriodsADataOpThroughASlowDataNodeWaitsForTheEndOfItsPeriod() throws Exception {
    LatencyModel model = new LatencyModel("slow-datanode-periods", 5, 1.0, 0, 6, 3);
    DataNodeCluster c = model.cluster();
    long[] found = SlowPeriods.instantWithOneSlowDataNode(c, 100);
    long t = found[0];
    int slow = (int) found[1];
    long end = found[2];
    model.useClock(() -> t);
    int[] through = {(slow + 1) % 6, slow, (slow + 2) % 6};
    int[] around = {(slow + 1) % 6, (slow + 2) % 6, (slow + 3) % 6};
    for (Op op : new Op[] {Op.WRITE, Op.SYNC}) {
      LatencyModel.Delay held = model.delay(op, 2_000_000, through);
      assertThat(held.slowNodeWaitMs()).as(op.name()).isEqualTo(end - t);
      // Then the normal data write: 2-12 ms plus 2 MB at 200 MB/s.
      assertThat(held.modelMs() - held.slowNodeWaitMs()).isBetween(12.0, 22.0);
      LatencyModel.Delay free = model.delay(op, 2_000_000, around);
      assertThat(free.slowNodeWaitMs()).isZero();
      assertThat(free.modelMs()).isBetween(12.0, 22.0);
    }
    // Metadata never waits for a DataNode, and a stream without a pipeline neither.
    assertThat(model.delay(Op.CREATE, 0, through).slowNodeWaitMs()).isZero();
    assertThat(model.delay(Op.CREATE, 0, through).modelMs()).isBetween(0.3, 2.0);
    assertThat(model.delay(Op.WRITE, 0, null).slowNodeWaitMs()).isZero();
    // Once the period is over, the same pipeline is not held.
    model.useClock(() -> end);
    assertThat(model.delay(Op.SYNC, 0, through).slowNodeWaitMs()).isZero();
  }

  @Test
  void slowDatanodePeriodsAPeriodThatBeginsWhileThePacketIsHeldHoldsItToo() {
    DataNodeCluster c = cluster(6, 9, 1.0);
    // Find two DataNodes whose periods overlap: the wait of a pipeline through both runs to the
    // later end.
    for (long t = 0; t < 36_000_000; t += 100) {
      for (int a = 0; a < 6; a++) {
        long endA = c.slowUntilMs(a, t);
        if (endA <= t) {
          continue;
        }
        for (int b = 0; b < 6; b++) {
          if (b != a && c.slowUntilMs(b, t) == t && c.slowUntilMs(b, endA - 1) > endA) {
            long endB = c.slowUntilMs(b, endA - 1);
            int other = 0;
            while (other == a || other == b) {
              other++;
            }
            long expected = c.pipelineWaitMs(new int[] {other}, endB) == 0 ? endB : -1;
            if (expected > 0) {
              assertThat(t + c.pipelineWaitMs(new int[] {a, b, other}, t)).isEqualTo(endB);
              return;
            }
          }
        }
      }
    }
    throw new AssertionError("no overlapping periods in 10 h");
  }

  @Test
  void slowDatanodePeriodsWithStallScaleZeroNoDataNodeIsEverSlow() {
    DataNodeCluster c = cluster(6, 1, 0);
    for (long t = 0; t < 3_600_000; t += 1_000) {
      assertThat(c.pipelineWaitMs(new int[] {0, 1, 2, 3, 4, 5}, t)).isZero();
    }
  }

  @Test
  void slowDatanodePeriodsNormalDrawIsSlowDatanodes() {
    LatencyModel model = new LatencyModel("slow-datanode-periods", 3, 1.0, 0);
    assertAllBetween(draws(model, Op.WRITE, 0, 1, 10_000), 2.0, 12.0);
    assertAllBetween(draws(model, Op.SYNC, 2_000_000, 1, 10_000), 12.0, 22.0);
    for (Op op : Op.values()) {
      if (op.isMetadata() || op == Op.OPEN) {
        assertAllBetween(draws(model, op, 0, 1, 1_000), 0.3, 2.0);
      }
    }
    assertThat(model.pauseRemainingMs(1_000)).isZero();
    assertThat(new LatencyModel("slow-datanode", 3, 1.0, 0).cluster()).isNull();
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
