package io.streamstate.spark.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManagerHedgeTest.StallingFileSystem;
import io.streamstate.spark.shared.HedgeCounters;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import io.streamstate.spark.shared.checkpoint.RocksDbUploads;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * The uploads Spark's {@code RocksDBStateStoreProvider} makes through {@link
 * RenameFreeCheckpointFileManager} ({@link RocksDbUploads}: changelogs and snapshot zips, written
 * with {@code overwriteIfPossible=true}) on a store that takes a name at create (as HDFS): the
 * {@code stallfs:} file system of {@link RenameFreeCheckpointFileManagerHedgeTest}, whose data
 * writes to a chosen file are held by a latch until the test releases them. Nothing asserts on
 * time.
 */
class RocksDbUploadsHedgeTest {
  @TempDir static java.nio.file.Path work;

  private java.nio.file.Path dir;
  private Path root;
  private RenameFreeCheckpointFileManager fm;

  @BeforeEach
  void setUp(TestInfo info) {
    dir = work.resolve(info.getTestMethod().orElseThrow().getName());
    root = new Path(StallingFileSystem.SCHEME + "://" + dir.toAbsolutePath());
    StallingFileSystem.reset();
    fm = new RenameFreeCheckpointFileManager(root, RenameFreeCheckpointFileManagerHedgeTest.conf());
    fm.createCheckpointDirectory();
  }

  @AfterEach
  void tearDown() {
    StallingFileSystem.releaseAll();
  }

  private static byte[] content(String what, int size) {
    byte[] bytes = new byte[size];
    byte[] head = what.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < size; i++) {
      bytes[i] = (byte) ('a' + (i * 31 + what.hashCode()) % 26);
    }
    System.arraycopy(head, 0, bytes, 0, Math.min(head.length, size));
    return bytes;
  }

  /** As Spark's RocksDB provider writes: {@code createAtomic(path, overwriteIfPossible = true)}. */
  private void upload(Path path, byte[] bytes) throws IOException {
    CancellableFSDataOutputStream out = fm.createAtomic(path, true);
    out.write(bytes);
    out.close();
  }

  private byte[] read(Path path) throws IOException {
    try (FSDataInputStream in = fm.open(path)) {
      return in.readAllBytes();
    }
  }

  private java.nio.file.Path local(String name) {
    return dir.resolve(name);
  }

  private String[] listed(String subdir) {
    return Arrays.stream(fm.list(new Path(root, subdir)))
        .map(s -> s.getPath().getName())
        .toArray(String[]::new);
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    for (int i = 0; i < 6000 && !condition.getAsBoolean(); i++) {
      Thread.sleep(10);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }

  @Test
  void aStalledChangelogIsHedgedReadsBackWholeAndIsListedOnce() throws Exception {
    Path changelog = new Path(root, "state/0/0/5.changelog");
    byte[] bytes = content("changelog 5", 40_000);
    HedgeMetrics.Snapshot stateBefore = HedgeCounters.sparkStateFiles();
    HedgeMetrics.Snapshot logsBefore = HedgeCounters.sparkLogs();
    StallingFileSystem.stall("5.changelog");

    upload(changelog, bytes); // returns although the write of 5.changelog is held

    assertThat(StallingFileSystem.stalledWrites()).isEqualTo(1);
    assertThat(Files.size(local("state/0/0/5.changelog"))).as("still stalled").isZero();
    assertThat(local("state/0/0/.5.changelog.hedge")).exists();
    HedgeMetrics.Snapshot delta = HedgeCounters.sparkStateFiles().since(stateBefore);
    assertThat(delta.hedgesFired()).isEqualTo(1);
    assertThat(delta.hedgesWon()).isEqualTo(1);
    assertThat(HedgeCounters.sparkLogs().since(logsBefore).writes())
        .as("Spark's log entries' writer is not this one")
        .isZero();

    // Spark's RocksDB provider reads the whole version, and lists only the changelog.
    assertThat(read(changelog)).isEqualTo(bytes);
    assertThat(listed("state/0/0")).containsExactly("5.changelog");

    StallingFileSystem.release(null);
    await("hedge copy deleted", () -> !Files.exists(local("state/0/0/.5.changelog.hedge")));
    assertThat(Files.readAllBytes(local("state/0/0/5.changelog"))).isEqualTo(bytes);
    assertThat(read(changelog)).isEqualTo(bytes);
  }

  /**
   * The case that makes a rewrite delete the name's hedge copy first: a first attempt's changelog
   * whose write failed after its hedge won (torn at its name, whole in its copy), then a retry of
   * the version, which Spark writes with an overwrite. Without the deletion, readers would get the
   * first attempt's bytes from its copy.
   */
  @Test
  void aRewriteOfAVersionIsReadNotAnEarlierAttemptsHedgeCopy() throws Exception {
    Path changelog = new Path(root, "state/0/1/9.changelog");
    byte[] first = content("first attempt", 20_000);
    byte[] retry = content("the retry", 20_000);
    long tornBefore =
        HedgedLogWrites.primaryFailuresAfterHedge(io.streamstate.core.ProcessResources.shared());
    StallingFileSystem.stall("9.changelog");
    upload(changelog, first);
    StallingFileSystem.release(new IOException("injected: datanode pipeline failed"));
    await(
        "the first attempt's write failed after its hedge won",
        () ->
            HedgedLogWrites.primaryFailuresAfterHedge(io.streamstate.core.ProcessResources.shared())
                > tornBefore);
    assertThat(read(changelog)).as("the first attempt, from its copy").isEqualTo(first);

    upload(changelog, retry);

    assertThat(read(changelog)).isEqualTo(retry);
    assertThat(local("state/0/1/.9.changelog.hedge")).doesNotExist();
    assertThat(Files.readAllBytes(local("state/0/1/9.changelog"))).isEqualTo(retry);
  }

  @Test
  void aSnapshotZipWithACheckpointIdIsHedgedAndDeletedWithItsCopy() throws Exception {
    String name = "12_0b6d3c47-9a0e-4f7e-8a43-5d0f2f1c9e10.zip";
    Path zip = new Path(root, "state/0/2/" + name);
    byte[] bytes = content("zip 12", 3_000);
    StallingFileSystem.stall(name);

    upload(zip, bytes);

    assertThat(local("state/0/2/." + name + ".hedge")).exists();
    assertThat(read(zip)).isEqualTo(bytes);
    assertThat(fm.exists(zip)).isTrue();
    assertThat(listed("state/0/2")).containsExactly(name);

    // Spark's maintenance deletes old versions through the manager: both files go.
    fm.delete(zip);
    assertThat(local("state/0/2/" + name)).doesNotExist();
    assertThat(local("state/0/2/." + name + ".hedge")).doesNotExist();
  }

  @Test
  void largeUploadsOtherFilesAndLogEntriesAreNotHedgedAsUploads() throws Exception {
    HedgeMetrics.Snapshot before = HedgeCounters.sparkStateFiles();
    // Over the buffer limit: written straight to the file, unhedged.
    byte[] large = content("large changelog", RocksDbUploads.MAX_HEDGED_BYTES + 10);
    upload(new Path(root, "state/0/3/20.changelog"), large);
    // Other files Spark writes with an overwrite (HDFS-backed provider's deltas, a schema file).
    upload(new Path(root, "state/0/3/21.delta"), content("delta", 100));
    upload(new Path(root, "state/0/_stateSchema/default/0_x"), content("schema", 100));
    // A log entry goes to the log entries' writer, not this one.
    CancellableFSDataOutputStream out = fm.createAtomic(new Path(root, "commits/0"), false);
    out.write("v1\n{\"nextBatchWatermarkMs\":0}".getBytes(StandardCharsets.UTF_8));
    out.close();

    assertThat(HedgeCounters.sparkStateFiles().since(before).writes()).isZero();
    assertThat(Files.readAllBytes(local("state/0/3/20.changelog"))).isEqualTo(large);
    assertThat(read(new Path(root, "state/0/3/20.changelog"))).isEqualTo(large);
  }

  @Test
  void aCancelledUploadLeavesNothingAndAnUnstalledOneLeavesNoCopy() throws Exception {
    Path changelog = new Path(root, "state/0/4/3.changelog");
    CancellableFSDataOutputStream out = fm.createAtomic(changelog, true);
    out.write(content("cancelled", 500));
    out.cancel();
    assertThat(local("state/0/4/3.changelog")).doesNotExist();

    HedgeMetrics.Snapshot before = HedgeCounters.sparkStateFiles();
    byte[] bytes = content("version 3", 500);
    upload(changelog, bytes);
    assertThat(HedgeCounters.sparkStateFiles().since(before).writes()).isEqualTo(1);
    await("no copy left", () -> !Files.exists(local("state/0/4/.3.changelog.hedge")));
    assertThat(read(changelog)).isEqualTo(bytes);
  }

  @Test
  void hedgeCopyNamesOfUploadsAreRecognisedAndATornCopyIsIgnored() throws Exception {
    assertThat(HedgedLogWrites.isHedgeName(".5.changelog.hedge")).isTrue();
    assertThat(HedgedLogWrites.isHedgeName(".5_ab-12.zip.hedge")).isTrue();
    assertThat(HedgedLogWrites.isHedgeName(".000012-ab.sst.hedge")).isFalse();
    assertThat(HedgedLogWrites.isHedgeName(".5.delta.hedge")).isFalse();

    Files.createDirectories(local("state/0/5"));
    byte[] bytes = content("version 8", 800);
    byte[] framed = HedgeCopyFile.encode(bytes);
    Files.write(local("state/0/5/8.zip"), bytes);
    Files.write(local("state/0/5/.8.zip.hedge"), Arrays.copyOf(framed, framed.length - 1));
    assertThat(read(new Path(root, "state/0/5/8.zip"))).isEqualTo(bytes);
  }
}
