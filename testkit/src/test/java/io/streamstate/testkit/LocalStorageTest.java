package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.RetryableException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.LocalStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the contract cannot see of {@link LocalStorage}: the files on disk. (That create forces the
 * file and its directory to disk cannot be observed without crashing the machine.)
 */
class LocalStorageTest {
  @TempDir Path dir;

  @Test
  void failingContentWriterLeavesNoFileOnDisk() throws IOException {
    Path root = dir.resolve("root");
    LocalStorage storage = new LocalStorage(root);

    assertThatThrownBy(
            () ->
                storage.create(
                    "op0/part1/v1.log",
                    out -> {
                      out.write(new byte[100_000]);
                      throw new IOException("no space left on device");
                    }))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("op0/part1/v1.log")
        .hasMessageContaining("no space left on device");

    assertThat(root.resolve("op0/part1/v1.log")).doesNotExist();
    assertThat(regularFilesUnder(root)).isEmpty();
  }

  @Test
  void failingContentWriterWithUncheckedExceptionLeavesNoFileOnDisk() throws IOException {
    LocalStorage storage = new LocalStorage(dir);

    assertThatThrownBy(
            () ->
                storage.create(
                    "v1.log",
                    out -> {
                      out.write(1);
                      throw new IllegalStateException("bug");
                    }))
        .hasMessage("bug");

    assertThat(regularFilesUnder(dir)).isEmpty();
  }

  @Test
  void rejectsNamesThatEscapeTheRoot() throws IOException {
    Path root = dir.resolve("root");
    LocalStorage storage = new LocalStorage(root);
    ContentWriter content = ContentWriter.ofBytes("x".getBytes(UTF_8));

    assertThatThrownBy(() -> storage.create("../outside", content))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Invalid storage name: '../outside'");
    assertThatThrownBy(() -> storage.create("a/../../outside", content))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a/../../outside");
    assertThatThrownBy(() -> storage.open("../outside"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> storage.delete("a/..")).isInstanceOf(IllegalArgumentException.class);

    assertThat(regularFilesUnder(dir)).isEmpty();
  }

  private static Stream<Path> regularFilesUnder(Path path) throws IOException {
    if (!Files.exists(path)) {
      return Stream.empty();
    }
    try (Stream<Path> walk = Files.walk(path)) {
      return walk.filter(Files::isRegularFile).toList().stream();
    }
  }
}
