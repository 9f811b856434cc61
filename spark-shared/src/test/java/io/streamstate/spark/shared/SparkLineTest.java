package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The version check's verdict and message (the adapter's tests run it on a real Spark). */
class SparkLineTest {
  @Test
  void theSameLinePassesWhateverThePatchRelease() {
    assertThat(SparkLine.mismatch("4.2.0", "2.13.16", "4.2.0", "2.13", "4.2.0")).isNull();
    assertThat(SparkLine.mismatch("4.2.3", "2.13.16", "4.2.0", "2.13", "4.2.0")).isNull();
    assertThat(SparkLine.mismatch("4.2.1-SNAPSHOT", "2.13.16", "4.2.0", "2.13", "4.2.0")).isNull();
  }

  @Test
  void anotherLineFailsNamingBothVersionsAndTheArtifactToUse() {
    String message = SparkLine.mismatch("3.5.3", "2.12.18", "4.2.0", "2.13", "4.2.0");
    assertThat(message)
        .contains("built for Spark 4.2.0 (line 4.2)")
        .contains("running Spark is 3.5.3 (line 3.5)")
        .contains("io.streamstate:streamstate-spark-runtime-3.5_2.12")
        .contains("this jar (streamstate-spark-runtime-4.2_2.13)");
    assertThat(SparkLine.mismatch("4.1.2", "2.13.16", "4.2.0", "2.13", "4.2.0"))
        .contains("streamstate-spark-runtime-4.1_2.13");
  }

  @Test
  void anotherScalaBinaryVersionFailsNamingTheArtifactToUse() {
    String message = SparkLine.mismatch("3.5.9", "2.13.8", "3.5.9", "2.12", "3.5.0");
    assertThat(message)
        .contains("built for Scala 2.12")
        .contains("uses Scala 2.13.8")
        .contains("io.streamstate:streamstate-spark-runtime-3.5_2.13");
    assertThat(SparkLine.mismatch("3.5.9", "2.12.18", "3.5.9", "2.12", "3.5.0")).isNull();
  }

  @Test
  void aReleaseOlderThanTheLinesMinimumFailsNamingTheMinimum() {
    assertThat(SparkLine.mismatch("4.0.0", "2.13.16", "4.0.4", "2.13", "4.0.1"))
        .contains("supports Spark 4.0.1 and later releases of line 4.0")
        .contains("running Spark is 4.0.0");
    assertThat(SparkLine.mismatch("4.0.1", "2.13.16", "4.0.4", "2.13", "4.0.1")).isNull();
    assertThat(SparkLine.mismatch("4.0.10", "2.13.16", "4.0.4", "2.13", "4.0.1")).isNull();
    assertThat(SparkLine.compareReleases("4.0.1", "4.0.10")).isNegative();
    assertThat(SparkLine.compareReleases("4.0.1-SNAPSHOT", "4.0.1")).isZero();
  }

  @Test
  void withoutAnAdapterTheMissingLineResourceIsNamed() {
    // This module's classpath has no adapter: the resource is read on first use, and its absence
    // is reported, not a bare linkage error.
    assertThatThrownBy(SparkLine::builtFor)
        .isInstanceOf(ExceptionInInitializerError.class)
        .cause()
        .hasMessageContaining(SparkLine.RESOURCE)
        .hasMessageContaining("missing");
  }
}
