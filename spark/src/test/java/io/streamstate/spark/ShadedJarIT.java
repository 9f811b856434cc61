package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded runtime jar ({@code streamstate-spark-4.2_2.13-<version>-runtime.jar}) holds our
 * classes only, and works on a plain Spark classpath: a child JVM with Spark's dependencies (as
 * {@code --jars} would give) plus that jar, without the module's classes, runs and restarts a
 * stateful query.
 */
class ShadedJarIT {
  @TempDir Path work;

  private static Path shadedJar() {
    Path jar = Paths.get(System.getProperty("streamstate.shadedJar"));
    assertThat(jar).as("shaded jar (built in the package phase)").exists();
    return jar;
  }

  @Test
  void shadedJarHoldsOnlyOurClasses() throws Exception {
    List<String> names = new ArrayList<>();
    try (JarFile jar = new JarFile(shadedJar().toFile())) {
      for (ZipEntry e : Collections.list(jar.entries())) {
        names.add(e.getName());
      }
    }
    assertThat(names)
        .contains(
            "io/streamstate/spark/StreamStateProvider.class",
            "io/streamstate/core/engine/VersionedStore.class",
            "io/streamstate/core/storage/LocalStorage.class",
            // spark-shared, and the line this adapter records for its version check
            "io/streamstate/spark/shared/SparkLine.class",
            "io/streamstate/spark/shared/StreamStateSettings.class",
            "io/streamstate/spark/shared/checkpoint/LogJournal.class",
            "io/streamstate/spark/spark-line.properties");
    // No rocksdbjni (Spark bundles the same 9.8.4; relocating it would break its JNI symbols), no
    // slf4j, Spark, Scala or Hadoop, and nothing else unrelocated.
    assertThat(names)
        .allMatch(
            n -> n.equals("io/") || n.startsWith("io/streamstate/") || n.startsWith("META-INF/"),
            "own classes");
    assertThat(names).noneMatch(n -> n.startsWith("org/rocksdb") || n.endsWith(".so"));
  }

  @Test
  void shadedJarRunsAStatefulQueryOnSparksClasspathAlone() throws Exception {
    List<String> classpath = new ArrayList<>();
    classpath.addAll(
        Arrays.asList(
            Files.readString(Paths.get(System.getProperty("streamstate.sparkClasspathFile")))
                .trim()
                .split(File.pathSeparator)));
    classpath.add(shadedJar().toString());
    // The test classes: a directory in the spark module, its tests jar in spark-it.
    classpath.add(
        Paths.get(
                ShadedJarSmokeMain.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI())
            .toString());
    assertThat(classpath)
        .noneMatch(e -> e.endsWith("target/classes") || e.contains("streamstate-core"));

    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(Arrays.asList(System.getProperty("streamstate.jvmFlags").trim().split("\\s+")));
    command.add("-Xmx1g");
    command.add("-cp");
    command.add(String.join(File.pathSeparator, classpath));
    command.add(ShadedJarSmokeMain.class.getName());
    command.add(work.resolve("checkpoint").toUri().toString());
    Path log = work.resolve("child.log");
    Process child =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    boolean exited = child.waitFor(4, TimeUnit.MINUTES);
    if (!exited) {
      child.destroyForcibly();
    }
    String output = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(exited).as("child JVM finished; output:%n%s", output).isTrue();
    assertThat(child.exitValue()).as("exit code; output:%n%s", output).isZero();
    assertThat(output)
        .contains("SHADED-OK first=[a,2][b,1] second=[a,3][b,1][c,1]")
        .contains("-runtime.jar");
  }
}
