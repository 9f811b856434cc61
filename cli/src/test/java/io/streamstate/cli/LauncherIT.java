package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code bin/streamstate} on the shaded jar the build made, in a process of its own, on a Spark
 * installation's {@code jars/} (the test classpath's Spark and Hadoop jars, linked into one).
 */
class LauncherIT {
  static final Path work = SparkQueries.newWorkDir(LauncherIT.class);
  private static Path sparkHome;
  private static Path checkpoint;

  @BeforeAll
  static void sparkHomeAndCheckpoint() throws IOException {
    sparkHome = sparkHome(work);
    // A checkpoint of a query that planned and committed one batch of a stateless query.
    checkpoint = Files.createDirectories(work.resolve("checkpoint"));
    Files.writeString(
        checkpoint.resolve("metadata"), "{\"id\":\"0b6c3e5a-8f4e-4a86-9c1e-3d8f0c0a1b2c\"}\n");
    Files.createDirectories(checkpoint.resolve("offsets"));
    Files.createDirectories(checkpoint.resolve("commits"));
    Files.writeString(
        checkpoint.resolve("offsets/0"),
        "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":"
            + "{\"spark.sql.shuffle.partitions\":\"2\"}}\n0");
    Files.writeString(checkpoint.resolve("commits/0"), "v1\n{\"nextBatchWatermarkMs\":0}");
  }

  /**
   * A Spark installation under {@code work}: {@code spark-home/jars/} linking the test classpath's
   * Spark and Hadoop jars.
   */
  static Path sparkHome(Path work) throws IOException {
    Path home = work.resolve("spark-home");
    Path jars = Files.createDirectories(home.resolve("jars"));
    String classpath =
        Files.readString(Path.of(System.getProperty("streamstate.sparkClasspathFile"))).trim();
    for (String jar : classpath.split(java.io.File.pathSeparator)) {
      Path source = Path.of(jar);
      Path link = jars.resolve(source.getFileName());
      if (!Files.exists(link)) {
        Files.createSymbolicLink(link, source);
      }
    }
    return home;
  }

  record Result(int exit, String out, String err) {}

  /** Runs {@code bin/streamstate} on the shaded jar in a process of its own. */
  static Result launch(Path work, Map<String, String> env, String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>();
    command.add("bash");
    command.add(System.getProperty("streamstate.launcher"));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().remove("SPARK_HOME");
    pb.environment().remove("HADOOP_CONF_DIR");
    pb.environment().remove("HADOOP_HOME");
    pb.environment().put("STREAMSTATE_CLI_JAR", System.getProperty("streamstate.cliJar"));
    pb.environment().putAll(env);
    Path out = Files.createTempFile(work, "out", ".txt");
    Path err = Files.createTempFile(work, "err", ".txt");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    Process p = pb.start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("bin/streamstate finished").isTrue();
    return new Result(
        p.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  private static Result launch(Map<String, String> env, String... args) throws Exception {
    return launch(work, env, args);
  }

  @Test
  void runsTheShadedJarOnASparkInstallationsJars() throws Exception {
    Map<String, String> env = Map.of("SPARK_HOME", sparkHome.toString());

    Result version = launch(env, "--version");
    Result inspect = launch(env, "inspect", checkpoint.toString());
    Result verify = launch(env, "verify", checkpoint.toString());
    Result notACheckpoint = launch(env, "verify", work.resolve("spark-home").toString());

    assertThat(version.exit()).as(version.toString()).isZero();
    assertThat(version.out()).startsWith("streamstate 0.");
    assertThat(inspect.exit()).as(inspect.toString()).isZero();
    assertThat(inspect.out())
        .contains("0b6c3e5a-8f4e-4a86-9c1e-3d8f0c0a1b2c")
        .contains("1 entry, batch 0, files")
        .contains("operators           0");
    assertThat(inspect.err()).as("nothing logged at the default level").isEmpty();
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("clean: checked");
    assertThat(notACheckpoint.exit()).isEqualTo(2);
    assertThat(notACheckpoint.err().strip())
        .startsWith("streamstate verify: ")
        .endsWith(
            "is not a Spark streaming checkpoint: it has no metadata file and no offsets/ log")
        .doesNotContain("\n");
  }

  @Test
  void withoutSparkOrHadoopItSaysWhatItNeeds() throws Exception {
    Result run = launch(Map.of("PATH", "/usr/bin:/bin"), "inspect", checkpoint.toString());

    assertThat(run.exit()).isEqualTo(2);
    assertThat(run.err()).contains("set SPARK_HOME").contains("'hadoop' command on the PATH");
  }
}
