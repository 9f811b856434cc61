package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.PendingFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsBulkDelete;
import io.streamstate.core.storage.SupportsStreamingCreate;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@link Storage} contract as tests: every implementation extends this class and must pass all
 * of it. It is in the main code of the testkit so that storage modules can run it.
 *
 * <p>Each test gets a fresh, empty storage from {@link #newStorage()} and closes it afterwards.
 */
public abstract class StorageContractTests {

  /** The storage under test, fresh and empty for each test. */
  protected Storage storage;

  /** A new, empty storage; called once per test. */
  protected abstract Storage newStorage();

  @BeforeEach
  void createStorage() {
    storage = newStorage();
  }

  @AfterEach
  void closeStorage() {
    if (storage != null) {
      storage.close();
    }
  }

  // ---- create and read back ----

  @Test
  void readsBackEmptyFile() {
    storage.create("empty", ContentWriter.ofBytes(new byte[0]));

    assertThat(read("empty")).isEmpty();
  }

  @Test
  void readsBackSmallFileExactly() {
    storage.create("small.bin", ContentWriter.ofBytes("hello, state".getBytes(UTF_8)));

    assertThat(read("small.bin")).isEqualTo("hello, state".getBytes(UTF_8));
  }

  @Test
  void readsBackFiveMegabyteFileWrittenInChunksExactly() {
    byte[] content = randomBytes(5 * 1024 * 1024, 42);

    storage.create(
        "big.bin",
        out -> {
          // Uneven chunks, as a format writer emits them.
          for (int offset = 0; offset < content.length; offset += 65_521) {
            out.write(content, offset, Math.min(65_521, content.length - offset));
          }
        });

    assertThat(read("big.bin")).isEqualTo(content);
  }

  @Test
  void createsNamesInNestedDirectories() {
    storage.create("op0/part3/changelog/00000000000000000001.log", bytes("one"));
    storage.create("op0/part3/changelog/00000000000000000002.log", bytes("two"));
    storage.create("op0/part3/snapshot/00000000000000000002/manifest", bytes("manifest"));

    assertThat(read("op0/part3/changelog/00000000000000000001.log")).isEqualTo(utf8("one"));
    assertThat(read("op0/part3/changelog/00000000000000000002.log")).isEqualTo(utf8("two"));
    assertThat(read("op0/part3/snapshot/00000000000000000002/manifest"))
        .isEqualTo(utf8("manifest"));
  }

  // ---- create-if-absent ----

  @Test
  void rejectsCreateOfExistingNameAndKeepsOriginalContent() {
    storage.create("dir/v1", bytes("original"));

    assertThatThrownBy(() -> storage.create("dir/v1", bytes("intruder, longer than the original")))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("dir/v1")
        .satisfies(e -> assertThat(((FileAlreadyExistsException) e).name()).isEqualTo("dir/v1"));
    assertThat(read("dir/v1")).isEqualTo(utf8("original"));
    assertThat(storage.list("dir/")).extracting(FileInfo::length).containsExactly(8L);
  }

  @Test
  void admitsExactlyOneOfConcurrentCreatorsOfOneName() throws Exception {
    int writers = 8;
    int rounds = 50;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      for (int round = 0; round < rounds; round++) {
        String name = String.format("race/round-%02d", round);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Boolean>> attempts = new ArrayList<>();
        for (int writer = 0; writer < writers; writer++) {
          byte[] content = writerContent(round, writer);
          attempts.add(
              pool.submit(
                  () -> {
                    start.await();
                    try {
                      storage.create(name, slowly(content));
                      return true;
                    } catch (FileAlreadyExistsException e) {
                      return false;
                    }
                  }));
        }
        start.countDown();
        List<Integer> winners = new ArrayList<>();
        for (int writer = 0; writer < writers; writer++) {
          // Any exception other than FileAlreadyExistsException fails the test here.
          if (attempts.get(writer).get(30, TimeUnit.SECONDS)) {
            winners.add(writer);
          }
        }

        assertThat(winners).as("writers that won round %d", round).hasSize(1);
        assertThat(read(name))
            .as("content of %s", name)
            .isEqualTo(writerContent(round, winners.get(0)));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  // ---- failed writes ----

  @Test
  void failedContentWriterLeavesNothingAtTheName() {
    IOException boom = new IOException("disk on fire");

    assertThatThrownBy(
            () ->
                storage.create(
                    "dir/failed",
                    out -> {
                      out.write(new byte[4096]);
                      throw boom;
                    }))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("dir/failed")
        .rootCause()
        .isSameAs(boom);

    assertNothingAt("dir/failed");
    storage.create("dir/failed", bytes("second attempt"));
    assertThat(read("dir/failed")).isEqualTo(utf8("second attempt"));
  }

  @Test
  void contentWriterFailingUncheckedLeavesNothingAtTheName() {
    IllegalStateException boom = new IllegalStateException("bug in the writer");

    // Rethrown as it is or wrapped, depending on the implementation; never lost.
    assertThatThrownBy(
            () ->
                storage.create(
                    "dir/failed",
                    out -> {
                      out.write(new byte[10]);
                      throw boom;
                    }))
        .satisfies(e -> assertThat(causalChain(e)).contains(boom));

    assertNothingAt("dir/failed");
    storage.create("dir/failed", bytes("second attempt"));
    assertThat(read("dir/failed")).isEqualTo(utf8("second attempt"));
  }

  // ---- open and delete ----

  @Test
  void openOfMissingFileThrowsMissingFileExceptionNamingIt() {
    assertThatThrownBy(() -> storage.open("nowhere/file"))
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining("nowhere/file");
  }

  @Test
  void deleteReportsWhetherTheFileExisted() {
    storage.create("dir/doomed", bytes("x"));

    assertThat(storage.delete("dir/doomed")).isTrue();
    assertThat(storage.delete("dir/doomed")).isFalse();
    assertThat(storage.delete("never/existed")).isFalse();
    assertNothingAt("dir/doomed");
  }

  @Test
  void deleteRemovesOnlyTheNamedFile() {
    storage.create("dir/a", bytes("a"));
    storage.create("dir/b", bytes("b"));

    storage.delete("dir/a");

    assertThat(read("dir/b")).isEqualTo(utf8("b"));
    assertThat(names("dir/")).containsExactly("dir/b");
  }

  @Test
  void bulkDeleteRemovesExactlyTheNamedFilesAndIgnoresMissingOnes() {
    if (!(storage instanceof SupportsBulkDelete bulk)) {
      Assumptions.abort(storage.describe() + " has no bulk delete");
      return;
    }
    for (String name : List.of("bulk/a", "bulk/b", "bulk/c", "bulk/d", "bulk/sub/e")) {
      storage.create(name, bytes(name));
    }

    bulk.deleteAll(List.of("bulk/a", "bulk/c", "bulk/never", "bulk/sub/e"));
    bulk.deleteAll(List.of());

    assertThat(names("bulk/")).containsExactlyInAnyOrder("bulk/b", "bulk/d");
    assertThat(read("bulk/b")).isEqualTo(utf8("bulk/b"));
  }

  @Test
  void recreatesDeletedName() {
    storage.create("dir/v", bytes("first"));
    storage.delete("dir/v");

    storage.create("dir/v", bytes("second"));

    assertThat(read("dir/v")).isEqualTo(utf8("second"));
  }

  // ---- list ----

  @Test
  void listsByPrefixSortedWithLengths() {
    // Created out of order, with a distinct length each.
    String[] names = {
      "a/c/y", "a/b/2", "a/bc/x", "a/b/10", "b/a/1", "a/b/nested/deep/z", "a/b/1",
    };
    for (int i = 0; i < names.length; i++) {
      storage.create(names[i], ContentWriter.ofBytes(new byte[i * 3]));
    }

    assertThat(names("a/b/")).containsExactly("a/b/1", "a/b/10", "a/b/2", "a/b/nested/deep/z");
    assertThat(names("a/b"))
        .containsExactly("a/b/1", "a/b/10", "a/b/2", "a/b/nested/deep/z", "a/bc/x");
    assertThat(names("a/b/1")).containsExactly("a/b/1", "a/b/10");
    assertThat(names("a/c/")).containsExactly("a/c/y");
    assertThat(names("")).containsExactly(Arrays.stream(names).sorted().toArray(String[]::new));
    assertThat(storage.list("a/"))
        .allSatisfy(info -> assertThat(info.lastModifiedMillis()).isPositive())
        .extracting(FileInfo::name, FileInfo::length)
        .containsExactly(
            tuple("a/b/1", 18L),
            tuple("a/b/10", 9L),
            tuple("a/b/2", 3L),
            tuple("a/b/nested/deep/z", 15L),
            tuple("a/bc/x", 6L),
            tuple("a/c/y", 0L));
  }

  @Test
  void listOfUnknownPrefixIsEmpty() {
    storage.create("a/b", bytes("x"));

    assertThat(storage.list("zzz/")).isEmpty();
    assertThat(storage.list("a/b/c/")).isEmpty();
  }

  @Test
  void listDoesNotShowDeletedFiles() {
    storage.create("dir/kept", bytes("k"));
    storage.create("dir/gone", bytes("g"));

    storage.delete("dir/gone");

    assertThat(names("dir/")).containsExactly("dir/kept");
  }

  // ---- appends (SupportsAppend), for storages that can ----

  /** The storage as an appender; skips the test where it cannot append. */
  private SupportsAppend appender() {
    Assumptions.assumeTrue(
        storage instanceof SupportsAppend a && a.appendSupported(),
        storage.describe() + " does not append");
    return (SupportsAppend) storage;
  }

  @Test
  void appendsAreReadWhileTheFileIsStillOpenAndAfterItCloses() {
    AppendableFile file = appender().createAppendable("j/one.journal");
    try {
      assertThat(file.append(utf8("abc"))).isZero();
      // Another reader sees every completed append while the writer still holds the file.
      assertThat(read("j/one.journal")).isEqualTo(utf8("abc"));
      assertThat(file.append(utf8("defg"))).isEqualTo(3);
      assertThat(read("j/one.journal")).isEqualTo(utf8("abcdefg"));
      assertThat(file.length()).isEqualTo(7);
      assertThat(names("j/")).containsExactly("j/one.journal");
    } finally {
      file.close();
    }
    assertThat(file.isOpen()).isFalse();
    assertThat(read("j/one.journal")).isEqualTo(utf8("abcdefg"));
    assertThatThrownBy(() -> file.append(utf8("h"))).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void appendsOfMegabytesReadBackExactly() {
    byte[] content = randomBytes(3 * 1024 * 1024 + 17, 7);
    AppendableFile file = appender().createAppendable("big.journal");
    try {
      int[] cuts = {0, 1, 65_536, 1_000_003, content.length};
      for (int i = 1; i < cuts.length; i++) {
        assertThat(file.append(Arrays.copyOfRange(content, cuts[i - 1], cuts[i])))
            .isEqualTo(cuts[i - 1]);
      }
      assertThat(read("big.journal")).isEqualTo(content);
    } finally {
      file.close();
    }
  }

  @Test
  void createAppendableIsCreateIfAbsent() {
    SupportsAppend appender = appender();
    storage.create("taken", bytes("first"));
    assertThatThrownBy(() -> appender.createAppendable("taken"))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(read("taken")).isEqualTo(utf8("first"));

    AppendableFile file = appender.createAppendable("mine.journal");
    try {
      assertThatThrownBy(() -> storage.create("mine.journal", bytes("other")))
          .isInstanceOf(FileAlreadyExistsException.class);
      assertThatThrownBy(() -> appender.createAppendable("mine.journal"))
          .isInstanceOf(FileAlreadyExistsException.class);
      file.append(utf8("ours"));
    } finally {
      file.close();
    }
    assertThat(read("mine.journal")).isEqualTo(utf8("ours"));
  }

  @Test
  void fencingAClosedOrAbsentFileChangesNothing() {
    SupportsAppend appender = appender();
    AppendableFile file = appender.createAppendable("done.journal");
    file.append(utf8("kept"));
    file.close();

    try {
      appender.fence("done.journal");
    } catch (UnsupportedException e) {
      Assumptions.abort(storage.describe() + " cannot fence: " + e.getMessage());
    }
    appender.fence("never-created.journal");

    assertThat(read("done.journal")).isEqualTo(utf8("kept"));
    assertNothingAt("never-created.journal");
  }

  @Test
  void anAppendableFileCanBeDeletedAndItsNameCreatedAgain() {
    AppendableFile file = appender().createAppendable("gone.journal");
    file.append(utf8("x"));
    file.close();

    assertThat(storage.delete("gone.journal")).isTrue();
    assertNothingAt("gone.journal");
    storage.create("gone.journal", bytes("new"));
    assertThat(read("gone.journal")).isEqualTo(utf8("new"));
  }

  // ---- names ----

  // ---- streaming create (SupportsStreamingCreate) ----

  private SupportsStreamingCreate streamer() {
    Assumptions.assumeTrue(
        storage instanceof SupportsStreamingCreate,
        storage.describe() + " has no streaming create");
    return (SupportsStreamingCreate) storage;
  }

  @Test
  void aPendingFileIsPublishedWithExactlyWhatWasWrittenToIt() throws IOException {
    byte[] content = randomBytes(300_000, 11);
    PendingFile file = streamer().openNew("s/a", false);
    assertThat(file.name()).isEqualTo("s/a");
    for (int offset = 0; offset < content.length; offset += 70_000) {
      file.stream().write(content, offset, Math.min(70_000, content.length - offset));
    }
    file.stream().close(); // only flushes: publishing is publish()'s
    file.publish();
    assertThat(read("s/a")).isEqualTo(content);
    assertThatThrownBy(() -> storage.create("s/a", bytes("other")))
        .isInstanceOf(FileAlreadyExistsException.class);
  }

  @Test
  void openNewIsCreateIfAbsentAtCreateOrAtPublish() throws IOException {
    storage.create("s/taken", bytes("original"));
    // Stores that take a name at create refuse it there; stores that publish at completion
    // (conditional create) refuse it at publish. Either way the original stays.
    try {
      PendingFile file = streamer().openNew("s/taken", false);
      file.stream().write(utf8("intruder"));
      assertThatThrownBy(file::publish).isInstanceOf(FileAlreadyExistsException.class);
      file.withdraw();
    } catch (FileAlreadyExistsException e) {
      assertThat(e.name()).isEqualTo("s/taken");
    }
    assertThat(read("s/taken")).isEqualTo(utf8("original"));
  }

  @Test
  void openNewWithOverwriteReplacesTheFile() throws IOException {
    storage.create("s/replaced", bytes("original, longer than what replaces it"));
    PendingFile file = streamer().openNew("s/replaced", true);
    file.stream().write(utf8("new"));
    file.publish();
    assertThat(read("s/replaced")).isEqualTo(utf8("new"));
    assertThat(storage.list("s/")).extracting(FileInfo::length).containsExactly(3L);

    // And on an absent name, it creates.
    PendingFile fresh = streamer().openNew("s/fresh", true);
    fresh.stream().write(utf8("x"));
    fresh.publish();
    assertThat(read("s/fresh")).isEqualTo(utf8("x"));
  }

  @Test
  void aWithdrawnPendingFileLeavesNothingAndItsNameCanBeCreatedAgain() throws IOException {
    PendingFile file = streamer().openNew("s/withdrawn", false);
    file.stream().write(new byte[100_000]);
    file.stream().flush();
    file.withdraw();
    assertNothingAt("s/withdrawn");
    storage.create("s/withdrawn", bytes("second attempt"));
    assertThat(read("s/withdrawn")).isEqualTo(utf8("second attempt"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "/absolute", "../escape", "a/../../b", "a/..", ".."})
  void rejectsInvalidNames(String name) {
    assertThatThrownBy(() -> storage.create(name, bytes("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(name);
    assertThatThrownBy(() -> storage.open(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(name);
    assertThatThrownBy(() -> storage.delete(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(name);
    assertThat(storage.list("")).isEmpty();
  }

  // ---- helpers ----

  /** The whole content of {@code name}. */
  protected byte[] read(String name) {
    try (InputStream in = storage.open(name)) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new AssertionError("Cannot read " + name + " from " + storage.describe(), e);
    }
  }

  /** The names {@link Storage#list} returns for {@code prefix}, in its order. */
  protected List<String> names(String prefix) {
    return storage.list(prefix).stream().map(FileInfo::name).toList();
  }

  private void assertNothingAt(String name) {
    assertThatThrownBy(() -> storage.open(name))
        .isInstanceOf(MissingFileException.class)
        .hasMessageContaining(name);
    assertThat(names("")).doesNotContain(name);
  }

  private static ContentWriter bytes(String content) {
    return ContentWriter.ofBytes(utf8(content));
  }

  private static byte[] utf8(String content) {
    return content.getBytes(UTF_8);
  }

  private static byte[] randomBytes(int length, long seed) {
    byte[] bytes = new byte[length];
    new Random(seed).nextBytes(bytes);
    return bytes;
  }

  /** Distinct per writer and round, and large enough that writers overlap in time. */
  private static byte[] writerContent(int round, int writer) {
    byte[] header = ("round " + round + " writer " + writer + "\n").getBytes(UTF_8);
    byte[] content = Arrays.copyOf(header, 16 * 1024);
    Arrays.fill(content, header.length, content.length, (byte) writer);
    return content;
  }

  /**
   * Writes in small chunks, yielding between them, so that the writers of a race overlap in time
   * even on few cores; this is what exposes a check-then-put implementation.
   */
  private static ContentWriter slowly(byte[] content) {
    return out -> {
      for (int offset = 0; offset < content.length; offset += 512) {
        out.write(content, offset, Math.min(512, content.length - offset));
        Thread.yield();
      }
    };
  }

  private static List<Throwable> causalChain(Throwable e) {
    List<Throwable> chain = new ArrayList<>();
    for (Throwable t = e; t != null && !chain.contains(t); t = t.getCause()) {
      chain.add(t);
    }
    return chain;
  }
}
