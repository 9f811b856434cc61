package io.streamstate.spark.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.hadoop.PipelineFileSystem;
import io.streamstate.hadoop.SlowDataNodes;
import io.streamstate.spark.StreamStateConf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link RenameFreeCheckpointFileManager} on a file system with DataNode pipelines ({@link
 * PipelineFileSystem}, one "cluster" per test by its scheme): a log entry write, or a log journal
 * append, stuck behind a slow DataNode reports its pipeline before its hedge starts, so that the
 * hedge copy, and the next journal, are created on other DataNodes.
 */
class CheckpointFileManagerSlowDataNodesTest {
  private static final List<String> FIRST = PipelineFileSystem.NODES.subList(0, 3);
  private static final List<String> SECOND = PipelineFileSystem.NODES.subList(3, 6);

  @TempDir static java.nio.file.Path work;
  private PipelineFileSystem fs;

  @AfterEach
  void release() {
    if (fs != null) {
      fs.release();
    }
    ProcessResources.restartForTests(true);
  }

  private static Configuration conf(String scheme) {
    Configuration conf = new Configuration();
    conf.set("fs." + scheme + ".impl", PipelineFileSystem.class.getName());
    conf.set(StreamStateConf.HEDGE_FLOOR_MS, "1");
    conf.set(StreamStateConf.HEDGE_INITIAL_DEADLINE_MS, "200");
    conf.set(StreamStateConf.HEDGE_BUDGET_FRACTION, "1");
    return conf;
  }

  private static byte[] entry(long batch) {
    return ("v1\n{\"batchWatermarkMs\":0}\n{\"batch\":" + batch + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static void write(RenameFreeCheckpointFileManager fm, Path path, byte[] bytes)
      throws IOException {
    CancellableFSDataOutputStream out = fm.createAtomic(path, false);
    out.write(bytes);
    out.close();
  }

  private static byte[] read(RenameFreeCheckpointFileManager fm, Path path) throws IOException {
    try (FSDataInputStream in = fm.open(path)) {
      return in.readAllBytes();
    }
  }

  /** A manager on a new cluster, which has seen every DataNode work (two files, one per half). */
  private RenameFreeCheckpointFileManager managerOn(String scheme, Path root, Configuration conf)
      throws IOException {
    fs = (PipelineFileSystem) FileSystem.get(root.toUri(), conf);
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(root, conf);
    fs.nextPipeline(FIRST.toArray(new String[0]));
    write(fm, new Path(root, "metadata"), "{\"id\":\"q\"}".getBytes(StandardCharsets.UTF_8));
    fs.nextPipeline(SECOND.toArray(new String[0]));
    write(fm, new Path(root, "state/0/_metadata/metadata"), entry(0));
    assertThat(SlowDataNodes.of(fs).known())
        .as(scheme)
        .containsExactlyInAnyOrderElementsOf(PipelineFileSystem.NODES);
    return fm;
  }

  @Test
  void aLogEntryStuckOnASlowDataNodeIsHedgedOntoOtherDataNodes() throws Exception {
    String scheme = "pipefs-entries";
    Path root = new Path(scheme + "://" + work.resolve("entries"));
    RenameFreeCheckpointFileManager fm = managerOn(scheme, root, conf(scheme));
    fs.nextPipeline(FIRST.toArray(new String[0]));
    fs.slow("dn1:9866");

    write(fm, new Path(root, "commits/0"), entry(0)); // returns while commits/0 is held

    assertThat(fs.held()).isEqualTo(1);
    assertThat(SlowDataNodes.of(fs).suspects()).containsExactlyInAnyOrderElementsOf(FIRST);
    assertThat(fs.placed(new Path(root, "commits/.0.hedge")))
        .containsExactlyInAnyOrderElementsOf(SECOND);
    assertThat(read(fm, new Path(root, "commits/0"))).isEqualTo(entry(0));

    // While they are suspect, the manager's own creates go elsewhere too.
    write(fm, new Path(root, "offsets/1"), entry(1));
    assertThat(fs.placed(new Path(root, "offsets/1"))).containsExactlyInAnyOrderElementsOf(SECOND);
  }

  @Test
  void aLogJournalAppendStuckOnASlowDataNodeIsHedgedAndTheNextJournalAvoidsIt() throws Exception {
    String scheme = "pipefs-journal";
    Path root = new Path(scheme + "://" + work.resolve("journal"));
    Configuration conf = conf(scheme);
    conf.set(StreamStateConf.LOG_JOURNAL, "true");
    RenameFreeCheckpointFileManager fm = managerOn(scheme, root, conf);
    Path log = new Path(root, "offsets");
    fs.nextPipeline(FIRST.toArray(new String[0]));
    write(fm, new Path(log, "0"), entry(0)); // takes the log over: journal epoch 0, on FIRST
    Path firstJournal = new Path(log, LogJournalFile.NAME_PREFIX + String.format("%020d", 0));
    assertThat(fs.placed(firstJournal)).containsExactlyInAnyOrderElementsOf(FIRST);
    fs.slow("dn2:9866");

    write(fm, new Path(log, "1"), entry(1)); // the append is held; the entry file hedges it

    assertThat(fs.held()).isEqualTo(1);
    assertThat(SlowDataNodes.of(fs).suspects()).containsExactlyInAnyOrderElementsOf(FIRST);
    assertThat(fs.placed(new Path(log, "1"))).containsExactlyInAnyOrderElementsOf(SECOND);

    write(fm, new Path(log, "2"), entry(2)); // in the next epoch's journal, away from FIRST
    Path nextJournal = new Path(log, LogJournalFile.NAME_PREFIX + String.format("%020d", 1));
    assertThat(fs.placed(nextJournal)).containsExactlyInAnyOrderElementsOf(SECOND);
    assertThat(fs.held()).as("the late append, and the old journal's close").isPositive();
    for (long batch = 0; batch <= 2; batch++) {
      assertThat(read(fm, new Path(log, Long.toString(batch)))).isEqualTo(entry(batch));
    }
  }

  @Test
  @Timeout(120) // an unhedged roll would wait for the slow DataNode forever: fail, do not hang
  void aJournalRollStuckOnASlowDataNodeIsHedgedLikeAnyAppend() throws Exception {
    String scheme = "pipefs-roll";
    Path root = new Path(scheme + "://" + work.resolve("roll"));
    Configuration conf = conf(scheme);
    conf.set(StreamStateConf.LOG_JOURNAL, "true");
    // Suspicion lasts 300 ms here, so that after the first slow period the "NameNode" places the
    // next journal (on SECOND) and nothing steers it.
    conf.set(SlowDataNodes.SUSPECT_MILLIS_KEY, "300");
    RenameFreeCheckpointFileManager fm = managerOn(scheme, root, conf);
    Path log = new Path(root, "offsets");
    fs.nextPipeline(FIRST.toArray(new String[0]));
    write(fm, new Path(log, "0"), entry(0)); // journal epoch 0, on FIRST
    fs.slow("dn2:9866");
    write(fm, new Path(log, "1"), entry(1)); // held; entry 1 published as a plain file
    assertThat(fs.held()).isEqualTo(1);
    fs.release(); // the late append completes; journal 0 stays retired
    while (!SlowDataNodes.of(fs).suspects().isEmpty()) {
      Thread.sleep(20);
    }

    // The next put rolls to journal epoch 1, whose append is held by a slow DataNode too: the put
    // returns with the entry as a plain file, on other DataNodes.
    fs.nextPipeline(SECOND.toArray(new String[0]));
    fs.slow("dn5:9866");
    write(fm, new Path(log, "2"), entry(2));
    Path journal1 = new Path(log, LogJournalFile.NAME_PREFIX + String.format("%020d", 1));
    assertThat(fs.placed(journal1)).containsExactlyInAnyOrderElementsOf(SECOND);
    assertThat(fs.held()).as("the roll's append").isEqualTo(1);
    assertThat(fs.placed(new Path(log, "2"))).containsExactlyInAnyOrderElementsOf(FIRST);
    Path journal0 = new Path(log, LogJournalFile.NAME_PREFIX + String.format("%020d", 0));
    assertThat(fs.exists(journal0)).as("kept until a roll completes").isTrue();

    // Journal 1 is retired (its late append completes once the DataNode recovers): the next put
    // rolls to epoch 2.
    fs.release();
    write(fm, new Path(log, "3"), entry(3));
    Path journal2 = new Path(log, LogJournalFile.NAME_PREFIX + String.format("%020d", 2));
    assertThat(fs.exists(journal2)).isTrue();
    for (long batch = 0; batch <= 3; batch++) {
      assertThat(read(fm, new Path(log, Long.toString(batch)))).isEqualTo(entry(batch));
    }
    // A new process (this one's writers dead) replays the same log.
    ProcessResources.restartForTests(true);
    RenameFreeCheckpointFileManager reader = new RenameFreeCheckpointFileManager(root, conf);
    for (long batch = 0; batch <= 3; batch++) {
      assertThat(read(reader, new Path(log, Long.toString(batch)))).isEqualTo(entry(batch));
    }
    write(reader, new Path(log, "4"), entry(4));
    assertThat(read(reader, new Path(log, "4"))).isEqualTo(entry(4));
  }
}
