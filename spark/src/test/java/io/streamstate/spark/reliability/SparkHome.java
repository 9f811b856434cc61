package io.streamstate.spark.reliability;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * The Spark home from which standalone Workers in the test JVM launch executor JVMs: {@code
 * target/spark-home}, with RELEASE and {@code jars/} linking Spark's jars from the Maven build
 * (this module's test class path without our own artifacts). Workers take it from {@code
 * SPARK_HOME}, and Spark 4.2's launcher ({@code AbstractCommandBuilder.buildClassPath}) needs the
 * Scala version, from {@code SPARK_SCALA_VERSION} or a Spark build tree: the module's failsafe
 * configuration sets both.
 */
final class SparkHome {
  private SparkHome() {}

  /** Assembles the home (idempotent) and returns it. */
  static Path assemble() throws IOException {
    Path home = Path.of("target", "spark-home").toAbsolutePath();
    Path jars = home.resolve("jars");
    Files.createDirectories(jars);
    String classpath =
        Files.readString(
                Path.of(System.getProperty("streamstate.sparkClasspathFile")),
                StandardCharsets.UTF_8)
            .trim();
    for (String entry : classpath.split(File.pathSeparator)) {
      Path jar = Path.of(entry);
      Path link = jars.resolve(jar.getFileName());
      if (entry.endsWith(".jar") && !Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
        Files.createSymbolicLink(link, jar);
      }
    }
    Files.writeString(
        home.resolve("RELEASE"),
        "Spark jars of the streamstate-spark test classpath (assembled by the reliability tests)\n");
    return home;
  }
}
