package io.streamstate.spark.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Work directories of the reliability tests. */
final class Sessions {
  private Sessions() {}

  /**
   * A fresh work directory for one test class, under {@code target/it-work} (not a JUnit
   * {@code @TempDir}: Spark's maintenance thread may still write after {@code spark.stop()}).
   */
  static Path newWorkDir(Class<?> testClass) {
    try {
      Path base = Path.of("target", "it-work");
      Files.createDirectories(base);
      return Files.createTempDirectory(base, testClass.getSimpleName() + "-").toAbsolutePath();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
