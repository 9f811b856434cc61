package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime jar of one Spark 4.x line on another 4.x line's classpath, both ways, each in a child
 * JVM: the provider fails at once with the version message naming the jar's line, the running one
 * and the artifact to use. So does the checkpoint file manager where both lines have its package
 * (4.1 and later); between 4.0 and 4.1+, whose {@code CheckpointFileManager} packages differ, the
 * manager cannot load, and the JVM's error names the jar's line's {@code CheckpointFileManager}.
 * Run by the spark-cross-line module for each line against the spark module's 4.2 jar (its pom sets
 * the properties); elsewhere skipped.
 */
class CrossLineJarIT {
  private static final Pattern SPARK_CORE =
      Pattern.compile("spark-core_(2\\.1[23])-([0-9.]+)\\.jar");

  @TempDir Path work;

  @Test
  void thisLinesJarOnTheOtherLineFailsWithTheVersionMessage() throws Exception {
    probeAndCheck("streamstate.thisLineJar", "streamstate.otherLineClasspathFile");
  }

  @Test
  void theOtherLinesJarOnThisLineFailsWithTheVersionMessage() throws Exception {
    probeAndCheck("streamstate.otherLineJar", "streamstate.thisLineClasspathFile");
  }

  private void probeAndCheck(String jarProperty, String classpathProperty) throws Exception {
    String jar = System.getProperty(jarProperty);
    String classpathFile = System.getProperty(classpathProperty);
    assumeTrue(jar != null && classpathFile != null, "set by the spark-cross-line module only");
    assertThat(Paths.get(jar))
        .as("the jar (build the spark module first: mvn verify from the root)")
        .exists();
    assertThat(Paths.get(classpathFile)).as("the classpath file (likewise)").exists();
    List<String> classpath = SparkLineProbe.classpathOf(classpathFile);
    Properties built = builtFor(Paths.get(jar));
    String builtFor = built.getProperty("spark.version");
    String builtForScala = built.getProperty("scala.binary.version");
    String running = null;
    String scala = null;
    for (String entry : classpath) {
      Matcher m = SPARK_CORE.matcher(Paths.get(entry).getFileName().toString());
      if (m.matches()) {
        scala = m.group(1);
        running = m.group(2);
      }
    }
    assertThat(running).as("Spark version on %s", classpathFile).isNotNull();
    assertThat(line(running)).as("another line than the jar's").isNotEqualTo(line(builtFor));
    classpath.add(jar);

    String message =
        "streamstate: this jar (streamstate-spark-runtime-"
            + line(builtFor)
            + "_"
            + builtForScala
            + ") was built for Spark "
            + builtFor
            + " (line "
            + line(builtFor)
            + "), but the running Spark is "
            + running
            + " (line "
            + line(running)
            + "). Use io.streamstate:streamstate-spark-runtime-"
            + line(running)
            + "_"
            + scala
            + " instead.";
    String output = SparkLineProbe.run(classpath, work);
    if (!hasFineGrainedReplay(builtFor) || hasFineGrainedReplay(running)) {
      assertThat(output).contains("PROBE provider -> java.lang.IllegalStateException: " + message);
    } else {
      // 4.x's provider implements SupportsFineGrainedReplay, which 3.5 lacks: the JVM cannot load
      // the class, and says which interface is missing, before the version check can run.
      assertThat(output)
          .contains(
              "PROBE provider -> java.lang.NoClassDefFoundError: "
                  + "org/apache/spark/sql/execution/streaming/state/SupportsFineGrainedReplay");
    }
    if (hasCheckpointingPackage(builtFor) == hasCheckpointingPackage(running)) {
      assertThat(output).contains("PROBE manager -> java.lang.IllegalStateException: " + message);
    } else {
      assertThat(output)
          .contains(
              "PROBE manager -> java.lang.NoClassDefFoundError: "
                  + "org/apache/spark/sql/execution/streaming/"
                  + (hasCheckpointingPackage(builtFor) ? "checkpointing/" : "")
                  + "CheckpointFileManager");
    }
  }

  /** {@code SupportsFineGrainedReplay}, which 4.x's provider implements, exists from Spark 4.0. */
  private static boolean hasFineGrainedReplay(String version) {
    return Integer.parseInt(version.split("\\.")[0]) >= 4;
  }

  /** Spark 4.1 moved {@code CheckpointFileManager} into {@code ...streaming.checkpointing}. */
  private static boolean hasCheckpointingPackage(String version) {
    String[] parts = version.split("\\.");
    int major = Integer.parseInt(parts[0]);
    return major > 4 || (major == 4 && Integer.parseInt(parts[1]) >= 1);
  }

  /** What a runtime jar was built for (its spark-line.properties). */
  private static Properties builtFor(Path jar) throws IOException {
    try (ZipFile zip = new ZipFile(jar.toFile());
        InputStream in =
            zip.getInputStream(zip.getEntry("io/streamstate/spark/spark-line.properties"))) {
      Properties p = new Properties();
      p.load(in);
      return p;
    }
  }

  private static String line(String version) {
    String[] parts = version.split("\\.");
    return parts[0] + "." + parts[1];
  }
}
