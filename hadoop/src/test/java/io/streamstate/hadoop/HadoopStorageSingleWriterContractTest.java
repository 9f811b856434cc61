package io.streamstate.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.StorageContractTests;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage contract, except concurrent creators, on {@link HadoopStorage}'s generic path: {@code
 * FileSystem.create}, write, close, and the delete that withdraws a failed write. The local disk is
 * hidden behind a {@link FilterFileSystem}, so the store is unknown: no create-if-absent,
 * single-writer mode. (HDFS and S3A run the same path with real create-if-absent in the ITs.)
 */
@ExtendWith(HadoopStorageSingleWriterContractTest.SkipConcurrentCreators.class)
class HadoopStorageSingleWriterContractTest extends StorageContractTests {
  @TempDir static java.nio.file.Path tempDir;

  private static FilterFileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startFileSystem() throws IOException {
    RawLocalFileSystem raw = new RawLocalFileSystem();
    raw.initialize(raw.getUri(), new Configuration());
    fs = new FilterFileSystem(raw);
  }

  @AfterAll
  static void stopFileSystem() throws IOException {
    fs.close();
  }

  @Override
  protected Storage newStorage() {
    return HadoopStorage.openAllowingSingleWriter(fs, newRoot());
  }

  private static Path newRoot() {
    java.nio.file.Path root = tempDir.resolve("storage-" + roots.incrementAndGet());
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Path(root.toUri());
  }

  @Test
  void runsUnknownStoreInSingleWriterMode() {
    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isFalse();
  }

  @Test
  void refusesUnknownStoreUnlessSingleWriterIsAccepted() {
    assertThatThrownBy(() -> HadoopStorage.open(fs, newRoot()))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining(HadoopStorages.SPARK_ALLOW_SINGLE_WRITER + "=true");
  }

  @Test
  void contentWriterClosingTheStreamDoesNotPublishEarly() {
    storage.create(
        "dir/closed-by-writer",
        out -> {
          out.write("first".getBytes(UTF_8));
          out.close();
          out.write(" and after close".getBytes(UTF_8));
        });

    assertThat(read("dir/closed-by-writer")).isEqualTo("first and after close".getBytes(UTF_8));
  }

  /** Single-writer mode does not promise one winner among concurrent creators. */
  static final class SkipConcurrentCreators implements ExecutionCondition {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      boolean race =
          context
              .getTestMethod()
              .map(m -> m.getName().equals("admitsExactlyOneOfConcurrentCreatorsOfOneName"))
              .orElse(false);
      return race
          ? ConditionEvaluationResult.disabled("single-writer mode: creators must not race")
          : ConditionEvaluationResult.enabled("");
    }
  }
}
