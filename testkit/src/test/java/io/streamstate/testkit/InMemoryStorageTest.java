package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storages;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** What the in-memory storage adds to the contract: test helpers, a clock, bulk delete. */
class InMemoryStorageTest {
  private final AtomicLong clock = new AtomicLong(1_000);
  private final InMemoryStorage storage = new InMemoryStorage(clock::get);

  @Test
  void stampsFilesWithInjectedClockAtPublishTime() {
    storage.create("a", bytes("a"));
    clock.set(5_000);
    storage.create("b", bytes("bb"));

    assertThat(storage.list(""))
        .containsExactly(new FileInfo("a", 1, 1_000), new FileInfo("b", 2, 5_000));
  }

  @Test
  void overwriteForTestReplacesContentBehindTheContract() {
    storage.create("v1", bytes("good"));

    storage.overwriteForTest("v1", "bad".getBytes(UTF_8));

    assertThat(Storages.readAll(storage, "v1")).isEqualTo("bad".getBytes(UTF_8));
  }

  @Test
  void helpersReturnCopiesNotLiveState() {
    storage.create("a", bytes("abc"));

    storage.bytes("a")[0] = 'X';

    assertThat(storage.bytes("a")).isEqualTo("abc".getBytes(UTF_8));
    assertThat(storage.names()).containsExactly("a");
    storage.create("b", bytes("b"));
    assertThat(storage.names()).containsExactly("a", "b");
  }

  @Test
  void bytesOfMissingFileThrowsMissingFileException() {
    assertThatThrownBy(() -> storage.bytes("nope"))
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining("nope");
  }

  @Test
  void deletesAllNamedFilesIgnoringAbsentOnes() {
    storage.create("a", bytes("a"));
    storage.create("b", bytes("b"));
    storage.create("c", bytes("c"));

    Storages.deleteAll(storage, List.of("a", "c", "never"));

    assertThat(storage.names()).containsExactly("b");
  }

  @Test
  void instancesDoNotShareFiles() {
    storage.create("a", bytes("a"));

    assertThat(new InMemoryStorage().names()).isEmpty();
  }

  @Test
  void rethrowsStreamStateExceptionFromWriterUnwrapped() {
    CorruptFileException corrupt = new CorruptFileException("source v3 is corrupt");

    assertThatThrownBy(
            () ->
                storage.create(
                    "copy",
                    out -> {
                      throw corrupt;
                    }))
        .isSameAs(corrupt);
    assertThat(storage.names()).isEmpty();
  }

  private static ContentWriter bytes(String content) {
    return ContentWriter.ofBytes(content.getBytes(UTF_8));
  }
}
