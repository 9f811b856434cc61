package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.spark.shared.SparkLine;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our 4.2 runtime jar on Spark 3.5 (Scala 2.12), in a child JVM whose classpath is that line's
 * (resolved by the testlines/spark-3.5_2.12 module) plus the jar: the provider, which Spark makes
 * first (the driver, for its metrics, when it plans the query), fails at once with the message
 * naming both lines and the artifact to use, not with a linkage error inside a task.
 */
class SparkLineMismatchIT {
  @TempDir Path work;

  @Test
  void theProviderRefusesAnotherSparkLineNamingTheArtifactToUse() throws Exception {
    String output = probe(System.getProperty("streamstate.spark35ClasspathFile"));

    assertThat(output)
        .contains(
            "PROBE provider -> java.lang.IllegalStateException: streamstate: this jar"
                + " (streamstate-spark-runtime-4.2_2.13) was built for Spark "
                + SparkLine.builtFor()
                + " (line 4.2), but the running Spark is 3.5.9 (line 3.5). Use"
                + " io.streamstate:streamstate-spark-runtime-3.5_2.12 instead.");
    // The manager implements Spark 4.1+'s CheckpointFileManager, whose package 3.5 does not
    // have: the JVM refuses the class before any code of ours runs (spark/README says so).
    assertThat(output)
        .contains(
            "PROBE manager -> java.lang.NoClassDefFoundError:"
                + " org/apache/spark/sql/execution/streaming/checkpointing/CheckpointFileManager");
  }

  private String probe(String classpathFile) throws Exception {
    List<String> classpath = SparkLineProbe.classpathOf(classpathFile);
    assertThat(classpath).anyMatch(e -> e.contains("spark-core_2.12-3.5."));
    classpath.add(Paths.get(System.getProperty("streamstate.shadedJar")).toString());
    return SparkLineProbe.run(classpath, work);
  }
}
