package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint file manager's whole contract on local disk with log journals on: Spark's offset
 * and commit log entries are journal records, every other file as before. Two managers of one
 * process share a log's journal, so the "second driver" of the shared tests is refused by it.
 */
class LogJournalCheckpointFileManagerTest extends CheckpointFileManagerTests {
  @TempDir static java.nio.file.Path work;

  @AfterEach
  void forgetJournals() {
    ProcessResources.restartForTests(true);
  }

  @Override
  protected Path newRoot(String testName) {
    return new Path(work.resolve(testName).toUri());
  }

  @Override
  protected Configuration conf() {
    Configuration conf = new Configuration();
    conf.set(StreamStateConf.LOG_JOURNAL, "true");
    return conf;
  }

  @Override
  protected Configuration independentClientConf() {
    Configuration conf = conf();
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  @Override
  protected String storeName() {
    return "local disk, log journals";
  }

  /**
   * With journals the writer knows every entry, so {@code exists} never asks the store; another
   * writer in the same process shares the journal and is refused there.
   */
  @Override
  @Test
  void existsOfTheNextEntryCostsNoRequestAndAnotherWritersEntryStaysSafe() throws IOException {
    Path root = newRoot("existsJournal");
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(root, conf());
    Path log = new Path(root, "offsets");
    byte[] zero = logEntry("zero", 100);
    write(fm, new Path(log, "0"), zero, false);
    assertThat(fm.exists(new Path(log, "1"))).isFalse();
    assertThat(fm.exists(new Path(log, "0"))).isTrue();

    RenameFreeCheckpointFileManager other =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    byte[] theirs = logEntry("theirs", 200);
    write(other, new Path(log, "1"), theirs, false);
    assertThatThrownBy(() -> write(fm, new Path(log, "1"), logEntry("mine", 300), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(read(fm, new Path(log, "1"))).isEqualTo(theirs);
    fm.delete(new Path(log, "0"));
    assertThat(fm.exists(new Path(log, "0"))).isFalse();
  }

  /** A journal record is written whole or not at all: no torn entry to refuse. */
  @Override
  @Test
  void aTornSparkLogEntryIsRefusedNamingTheFile() throws IOException {
    Path root = newRoot("tornJournal");
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(root, conf());
    Path offsets = new Path(root, "offsets/5");
    byte[] whole = logEntry("batchWatermarkMs", 800);
    write(fm, offsets, whole, false);
    assertThat(read(fm, offsets)).isEqualTo(whole);
    assertThat(
            java.nio.file.Files.list(work.resolve("tornJournal").resolve("offsets"))
                .map(p -> p.getFileName().toString()))
        .allMatch(n -> n.startsWith(LogJournalFile.NAME_PREFIX));
  }

  @Override
  protected boolean crashesLeaveTornEntries() {
    return false; // entries are journal records; a torn last record ends its journal
  }
}
