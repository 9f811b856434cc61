package io.streamstate.spark.checkpoint;

import static io.streamstate.spark.CheckpointFileManagerTests.logEntry;
import static io.streamstate.spark.CheckpointFileManagerTests.read;
import static io.streamstate.spark.CheckpointFileManagerTests.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournal;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's logs in log journals ({@link LogJournal}) through {@link RenameFreeCheckpointFileManager}
 * on local disk: entries are appends to one file, read back exactly, refused when they exist;
 * deletes of old entries ride on the next put, deletes of the newest are durable at once; a new
 * writer takes the log over only from a dead one, and sees every entry; journals roll; a torn last
 * record is ignored; and a writer without journals writes them out for Spark's own manager. A
 * "process" here is a fresh {@link ProcessResources} ({@link ProcessResources#restartForTests}).
 */
class LogJournalTest {
  @TempDir java.nio.file.Path work;

  @AfterEach
  void forget() {
    ProcessResources.restartForTests(true);
  }

  private static Configuration conf(boolean journal) {
    Configuration conf = new Configuration();
    conf.set(StreamStateConf.LOG_JOURNAL, Boolean.toString(journal));
    return conf;
  }

  private Path root() {
    return new Path(work.resolve("cp").toUri());
  }

  private RenameFreeCheckpointFileManager manager(boolean journal) {
    return manager(conf(journal));
  }

  private RenameFreeCheckpointFileManager manager(Configuration conf) {
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(root(), conf);
    fm.createCheckpointDirectory();
    return fm;
  }

  private Path entry(String log, long id) {
    return new Path(root(), log + "/" + id);
  }

  private static byte[] bytesOf(long id) {
    return logEntry("batch" + id, 200 + (int) id);
  }

  private void writeEntries(RenameFreeCheckpointFileManager fm, String log, long from, long to)
      throws IOException {
    for (long id = from; id <= to; id++) {
      write(fm, entry(log, id), bytesOf(id), false);
    }
  }

  /** The names of the files in a log directory on disk. */
  private List<String> onDisk(String log) throws IOException {
    try (Stream<java.nio.file.Path> files = Files.list(work.resolve("cp").resolve(log))) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  private static List<String> names(FileStatus[] files) {
    return Arrays.stream(files).map(f -> f.getPath().getName()).sorted().toList();
  }

  private static List<String> ids(long from, long to) {
    List<String> ids = new ArrayList<>();
    for (long id = from; id <= to; id++) {
      ids.add(Long.toString(id));
    }
    return ids.stream().sorted().toList();
  }

  /** Every entry a manager sees, with its bytes checked. */
  private void assertEntries(RenameFreeCheckpointFileManager fm, String log, long from, long to)
      throws IOException {
    assertThat(names(fm.list(new Path(root(), log)))).isEqualTo(ids(from, to));
    for (long id = from; id <= to; id++) {
      assertThat(fm.exists(entry(log, id))).isTrue();
      assertThat(read(fm, entry(log, id))).as("entry %d", id).isEqualTo(bytesOf(id));
    }
    assertThat(fm.exists(entry(log, to + 1))).isFalse();
  }

  @Test
  void entriesAreAppendsToOneJournalAndReadBackExactlyAlsoByANewProcess() throws IOException {
    RenameFreeCheckpointFileManager fm = manager(true);
    long appends = LogJournals.of(ProcessResources.shared()).appends();
    writeEntries(fm, "offsets", 0, 9);
    writeEntries(fm, "commits", 0, 9);

    assertThat(LogJournals.of(ProcessResources.shared()).appends() - appends).isEqualTo(20);
    assertThat(onDisk("offsets")).singleElement().asString().startsWith(LogJournalFile.NAME_PREFIX);
    assertThat(onDisk("commits")).singleElement().asString().startsWith(LogJournalFile.NAME_PREFIX);
    assertEntries(fm, "offsets", 0, 9);

    ProcessResources.restartForTests(false); // a reader in another process, the writer still alive
    assertEntries(manager(true), "offsets", 0, 9);
    assertEntries(manager(false), "commits", 0, 9);
  }

  @Test
  void anEntryThatExistsIsRefusedAsACreateWouldRefuseIt() throws IOException {
    RenameFreeCheckpointFileManager fm = manager(true);
    writeEntries(fm, "offsets", 0, 1);
    assertThatThrownBy(() -> write(fm, entry("offsets", 1), logEntry("other", 90), false))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("offsets/1");
    // Another manager of the same process shares the journal: refused too.
    assertThatThrownBy(() -> write(manager(true), entry("offsets", 0), logEntry("x", 90), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertEntries(fm, "offsets", 0, 1);

    ProcessResources.restartForTests(true); // a restarted driver
    RenameFreeCheckpointFileManager restarted = manager(true);
    assertThatThrownBy(() -> write(restarted, entry("offsets", 1), logEntry("again", 90), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    write(restarted, entry("offsets", 2), bytesOf(2), false);
    assertEntries(restarted, "offsets", 0, 2);
  }

  @Test
  void aRestartedDriverTakesOverFromADeadOneAndSeesEveryEntry() throws IOException {
    writeEntries(manager(true), "offsets", 0, 4);
    ProcessResources.restartForTests(true);

    RenameFreeCheckpointFileManager second = manager(true);
    assertEntries(second, "offsets", 0, 4); // read before it writes: no take-over yet
    assertThat(onDisk("offsets")).hasSize(1);
    writeEntries(second, "offsets", 5, 6);

    assertThat(onDisk("offsets"))
        .hasSize(2)
        .allMatch(n -> n.startsWith(LogJournalFile.NAME_PREFIX));
    ProcessResources.restartForTests(true);
    assertEntries(manager(true), "offsets", 0, 6);
  }

  @Test
  void aLiveWriterOnLocalDiskIsNotTakenOverAndTheSecondDriverIsRefusedNamingIt()
      throws IOException {
    RenameFreeCheckpointFileManager first = manager(true);
    writeEntries(first, "offsets", 0, 0);
    ProcessResources.restartForTests(false); // the first driver lives on (a second query starts)

    RenameFreeCheckpointFileManager second = manager(true);
    assertThatThrownBy(() -> write(second, entry("offsets", 1), bytesOf(1), false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("live writer")
        .hasMessageContaining(LogJournalFile.NAME_PREFIX);
    // The refused driver left nothing behind, and the first one goes on.
    assertThat(onDisk("offsets")).hasSize(1);
    writeEntries(first, "offsets", 1, 2);
    assertEntries(first, "offsets", 0, 2);
  }

  @Test
  void deletesOfOldEntriesRideOnTheNextPutAndDeletesOfTheNewestAreDurableAtOnce()
      throws IOException {
    RenameFreeCheckpointFileManager fm = manager(true);
    writeEntries(fm, "offsets", 0, 5);
    java.nio.file.Path journal =
        work.resolve("cp").resolve("offsets").resolve(onDisk("offsets").get(0));
    long size = Files.size(journal);

    fm.delete(entry("offsets", 0)); // Spark's purge of old entries
    fm.delete(entry("offsets", 1));
    assertThat(Files.size(journal))
        .as("deletes of old entries wait for the next put")
        .isEqualTo(size);
    assertThat(fm.exists(entry("offsets", 0))).isFalse();
    writeEntries(fm, "offsets", 6, 6);
    fm.delete(entry("offsets", 6)); // Spark's purgeAfter: the newest entry goes

    ProcessResources.restartForTests(true); // the driver dies right after
    assertEntries(manager(true), "offsets", 2, 5);
  }

  @Test
  void aJournalRollsWithEveryLiveEntryAndTheOlderJournalsGo() throws IOException {
    Configuration rollingConf = conf(true);
    rollingConf.setInt(StreamStateConf.LOG_JOURNAL_ROLL_RECORDS, 4);
    RenameFreeCheckpointFileManager fm = manager(rollingConf);
    for (long id = 0; id <= 20; id++) {
      write(fm, entry("offsets", id), bytesOf(id), false);
      if (id >= 3) {
        fm.delete(entry("offsets", id - 3)); // keep the last three, as Spark's purge does
      }
    }
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> assertThat(onDisk("offsets")).hasSizeLessThanOrEqualTo(2));
    assertThat(onDisk("offsets")).allMatch(n -> n.startsWith(LogJournalFile.NAME_PREFIX));
    assertEntries(fm, "offsets", 18, 20);
    ProcessResources.restartForTests(true);
    // The last purge (of 17) was still riding on a next put that never came: 17 is back, at the
    // front of the log, as documented.
    assertEntries(manager(true), "offsets", 17, 20);
  }

  @Test
  void aTornLastRecordIsIgnoredAndTheNextWriterGoesOnAfterIt() throws IOException {
    writeEntries(manager(true), "offsets", 0, 2);
    ProcessResources.restartForTests(true);
    java.nio.file.Path journal =
        work.resolve("cp").resolve("offsets").resolve(onDisk("offsets").get(0));
    // A driver that died mid-append: the start of one more record, cut short.
    byte[] torn = {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 42, 42};
    Files.write(journal, torn, StandardOpenOption.APPEND);

    RenameFreeCheckpointFileManager next = manager(true);
    assertEntries(next, "offsets", 0, 2);
    writeEntries(next, "offsets", 3, 3);
    ProcessResources.restartForTests(true);
    assertEntries(manager(true), "offsets", 0, 3);
  }

  @Test
  void aWriterWithJournalsOffWritesThemOutSoSparksOwnManagerSeesTheWholeLog() throws Exception {
    writeEntries(manager(true), "commits", 0, 4);
    ProcessResources.restartForTests(true);

    RenameFreeCheckpointFileManager plain = manager(false);
    assertEntries(plain, "commits", 0, 4); // read through the journals
    writeEntries(plain, "commits", 5, 5); // its first write writes them out

    assertThat(onDisk("commits")).isEqualTo(ids(0, 5));
    FileSystemBasedCheckpointFileManager spark =
        new FileSystemBasedCheckpointFileManager(root(), new Configuration());
    TreeMap<String, byte[]> seen = new TreeMap<>();
    for (FileStatus f : spark.list(new Path(root(), "commits"))) {
      try (var in = spark.open(f.getPath())) {
        seen.put(f.getPath().getName(), in.readAllBytes());
      }
    }
    assertThat(seen.keySet()).containsExactlyElementsOf(ids(0, 5));
    for (long id = 0; id <= 5; id++) {
      assertThat(seen.get(Long.toString(id))).isEqualTo(bytesOf(id));
    }
  }

  @Test
  void aJournalOfANewerFormatIsRefusedNamingIt() throws IOException {
    java.nio.file.Path dir = work.resolve("cp").resolve("offsets");
    Files.createDirectories(dir);
    Files.write(
        dir.resolve(LogJournalFile.NAME_PREFIX + "00000000000000000001"),
        new byte[] {'S', 'S', 'L', 'J', 2, 0, 0, 0});
    RenameFreeCheckpointFileManager fm = manager(true);
    assertThatThrownBy(() -> fm.list(new Path(root(), "offsets")))
        .hasMessageContaining(LogJournalFile.NAME_PREFIX + "00000000000000000001")
        .hasMessageContaining("format version 2");
  }
}
