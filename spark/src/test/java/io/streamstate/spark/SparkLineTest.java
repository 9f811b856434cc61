package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.spark.shared.SparkLine;
import org.apache.spark.package$;
import org.junit.jupiter.api.Test;

/** The version check on the build's own Spark (its verdicts: spark-shared's SparkLineTest). */
class SparkLineTest {
  @Test
  void theBuildRecordsTheSparkItCompiledAgainst() {
    // The test classpath is the build's: the recorded version must be the Spark on it.
    assertThat(SparkLine.builtFor()).isEqualTo(package$.MODULE$.SPARK_VERSION());
    assertThat(scala.util.Properties.versionNumberString())
        .startsWith(SparkLine.builtForScala() + ".");
  }

  @Test
  void theBuildsOwnSparkPasses() {
    SparkLine.checkRunningSpark();
  }
}
