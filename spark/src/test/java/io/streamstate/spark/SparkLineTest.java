package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.spark.package$;
import org.junit.jupiter.api.Test;

class SparkLineTest {
  @Test
  void theBuildRecordsTheSparkItCompiledAgainst() {
    // The test classpath is the build's: the recorded version must be the Spark on it.
    assertThat(SparkLine.BUILT_FOR).isEqualTo(package$.MODULE$.SPARK_VERSION());
    assertThat(SparkLine.BUILT_FOR_SCALA)
        .isEqualTo(SparkLine.scalaBinary(scala.util.Properties.versionNumberString()));
    assertThat(SparkLine.runningSparkVersion()).isEqualTo(package$.MODULE$.SPARK_VERSION());
  }

  @Test
  void theSameLinePassesWhateverThePatchRelease() {
    assertThat(SparkLine.mismatch("4.2.0", "2.13.16", "4.2.0")).isNull();
    assertThat(SparkLine.mismatch("4.2.3", "2.13.16", "4.2.0")).isNull();
    assertThat(SparkLine.mismatch("4.2.1-SNAPSHOT", "2.13.16", "4.2.0")).isNull();
    SparkLine.checkRunningSpark(); // the build's own Spark
  }

  @Test
  void anotherLineFailsNamingBothVersionsAndTheArtifactToUse() {
    String message = SparkLine.mismatch("3.5.3", "2.12.18", "4.2.0");
    assertThat(message)
        .contains("built for Spark 4.2.0 (line 4.2)")
        .contains("running Spark is 3.5.3 (line 3.5)")
        .contains("io.streamstate:streamstate-spark-runtime-3.5_2.12")
        .contains("streamstate-spark-runtime-4.2_" + SparkLine.BUILT_FOR_SCALA);
    assertThat(SparkLine.mismatch("4.1.2", "2.13.16", "4.2.0"))
        .contains("streamstate-spark-runtime-4.1_2.13");
  }
}
