package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.error.RetryableException;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.spark.shared.SinkSpillFileSystem;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * The task side of {@link HedgedFileCommitProtocol}, driven as {@code FileFormatWriter} drives it
 * (setupTask, newTaskTempFile, the writer writes the returned path through Hadoop, commitTask or
 * abortTask), without a Spark session.
 */
class HedgedFileCommitProtocolTest {
  private static final String UUID = "[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}";

  @TempDir java.nio.file.Path work;

  private static Configuration unhedged() {
    Configuration conf = new Configuration();
    conf.set(StreamStateConf.HEDGE_ENABLED, "false");
    return conf;
  }

  /** Every write hedged at once (deadline 0 until latencies are known, no budget limit). */
  private static Configuration hedged() {
    Configuration conf = new Configuration();
    conf.set("fs." + SlowPrimaryFileSystem.SCHEME + ".impl", SlowPrimaryFileSystem.class.getName());
    conf.set(StreamStateConf.HEDGE_FLOOR_MS, "0");
    conf.set(StreamStateConf.HEDGE_INITIAL_DEADLINE_MS, "0");
    conf.set(StreamStateConf.HEDGE_BUDGET_FRACTION, "1");
    return conf;
  }

  private static TaskAttemptContext task(Configuration conf, int split) {
    return new TaskAttemptContextImpl(
        new Configuration(conf), new TaskAttemptID("20261130", 7, TaskType.MAP, split, 0));
  }

  private static String write(TaskAttemptContext ctx, String tempPath, byte[] bytes)
      throws IOException {
    Path path = new Path(tempPath);
    try (FSDataOutputStream out = path.getFileSystem(ctx.getConfiguration()).create(path, false)) {
      out.write(bytes);
    }
    return tempPath;
  }

  private static List<SinkFileStatus> statuses(FileCommitProtocol.TaskCommitMessage message) {
    @SuppressWarnings("unchecked")
    scala.collection.Seq<SinkFileStatus> seq = (scala.collection.Seq<SinkFileStatus>) message.obj();
    return ScalaInterop.javaList(seq);
  }

  private static byte[] bytes(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static java.nio.file.Path localOf(SinkFileStatus status) {
    return java.nio.file.Path.of(status.toFileStatus().getPath().toUri().getPath());
  }

  private static List<String> filesUnder(java.nio.file.Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<java.nio.file.Path> walk = Files.walk(dir)) {
      return walk.filter(Files::isRegularFile)
          .map(p -> dir.relativize(p).toString())
          .sorted()
          .toList();
    }
  }

  @Test
  void commitPublishesEachOutputUnderSparksNameAndReportsItsExactSize() throws IOException {
    java.nio.file.Path out = work.resolve("out");
    HedgedFileCommitProtocol protocol = new HedgedFileCommitProtocol("0", out.toString());
    TaskAttemptContext ctx = task(unhedged(), 3);
    protocol.setupTask(ctx);
    byte[] first = bytes(1000, 1);
    byte[] second = bytes(200_000, 2);
    String a =
        write(
            ctx,
            protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c000.json")),
            first);
    String b =
        write(
            ctx,
            protocol.newTaskTempFile(
                ctx, Option.apply("key=x y"), new FileNameSpec("", ".c001.json")),
            second);
    assertThat(a).startsWith("streamstate-spill:/");
    java.nio.file.Path spill = SinkSpillFileSystem.localOf(new Path(a));
    assertThat(spill).exists();

    List<SinkFileStatus> reported = statuses(protocol.commitTask(ctx));

    assertThat(reported).hasSize(2);
    assertThat(reported.get(0).path())
        .matches("file:" + out + "/part-00003-" + UUID + "\\.c000\\.json");
    assertThat(reported.get(1).toFileStatus().getPath().getParent().getName()).isEqualTo("key=x y");
    assertThat(reported.get(1).toFileStatus().getPath().getName())
        .matches("part-00003-" + UUID + "\\.c001\\.json");
    assertThat(reported).extracting(SinkFileStatus::size).containsExactly(1000L, 200_000L);
    assertThat(reported).extracting(SinkFileStatus::action).containsOnly("add");
    assertThat(Files.readAllBytes(localOf(reported.get(0)))).isEqualTo(first);
    assertThat(Files.readAllBytes(localOf(reported.get(1)))).isEqualTo(second);
    assertThat(filesUnder(out)).hasSize(2);
    assertThat(spill.getParent()).as("the task's spill directory").doesNotExist();
    assertThat(SinkSpillFileSystem.localOf(new Path(b))).doesNotExist();
  }

  @Test
  void aHedgeThatWinsIsTheReportedFileAndTheSlowPrimaryGoes() throws IOException {
    java.nio.file.Path out = work.resolve("hedged");
    String root = SlowPrimaryFileSystem.uriOf(out);
    HedgedFileCommitProtocol protocol = new HedgedFileCommitProtocol("0", root);
    TaskAttemptContext ctx = task(hedged(), 1);
    HedgeMetrics.Snapshot before = HedgedFileCommitProtocol.hedgeMetrics();
    protocol.setupTask(ctx);
    byte[] small = bytes(3000, 3);
    byte[] large = bytes(1_000_000, 4); // many chunks: the stalled primary stops copying
    write(
        ctx,
        protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c000.parquet")),
        small);
    write(
        ctx,
        protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c001.parquet")),
        large);

    List<SinkFileStatus> reported = statuses(protocol.commitTask(ctx));

    HedgeMetrics.Snapshot delta = HedgedFileCommitProtocol.hedgeMetrics().since(before);
    assertThat(delta.writes()).as(delta.toString()).isEqualTo(2);
    assertThat(delta.hedgesFired()).isEqualTo(2);
    assertThat(delta.hedgesWon()).isEqualTo(2);
    assertThat(reported).extracting(SinkFileStatus::size).containsExactly(3000L, 1_000_000L);
    assertThat(reported.get(0).path()).startsWith(SlowPrimaryFileSystem.SCHEME + ":");
    assertThat(localOf(reported.get(0)).getParent()).isEqualTo(out);
    assertThat(localOf(reported.get(0)).getFileName().toString())
        .matches("part-00001-" + UUID + "\\.c000\\.parquet");
    assertThat(reported)
        .extracting(HedgedFileCommitProtocolTest::localOf)
        .allSatisfy(p -> assertThat(SlowPrimaryFileSystem.alternates()).contains(p));
    assertThat(Files.readAllBytes(localOf(reported.get(0)))).isEqualTo(small);
    assertThat(Files.readAllBytes(localOf(reported.get(1)))).isEqualTo(large);
    // The primaries failed after their hedge had completed: withdrawn, only the reported stay.
    // Each loser cleans up on its own thread after commitTask returned (h5): wait for that.
    List<String> reportedNames =
        reported.stream().map(s -> localOf(s).getFileName().toString()).toList();
    org.awaitility.Awaitility.await("the losing primaries withdrawn")
        .atMost(java.time.Duration.ofSeconds(30))
        .untilAsserted(
            () -> assertThat(filesUnder(out)).containsExactlyInAnyOrderElementsOf(reportedNames));
  }

  @Test
  void aLosingCopyThatCompletesLateIsDeletedOrStoppedWhicheverWon() throws IOException {
    java.nio.file.Path out = work.resolve("late");
    HedgedFileCommitProtocol protocol =
        new HedgedFileCommitProtocol("0", SlowPrimaryFileSystem.uriOf(out));
    TaskAttemptContext ctx = task(hedged(), 2);
    SlowPrimaryFileSystem.completeLatePrimaries = true;
    try {
      HedgeMetrics.Snapshot before = HedgedFileCommitProtocol.hedgeMetrics();
      protocol.setupTask(ctx);
      byte[] small = bytes(3000, 8);
      byte[] large = bytes(1_000_000, 9);
      write(
          ctx,
          protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c000.json")),
          small);
      write(
          ctx,
          protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c001.json")),
          large);

      List<SinkFileStatus> reported = statuses(protocol.commitTask(ctx));

      assertThat(HedgedFileCommitProtocol.hedgeMetrics().since(before).hedgesFired()).isEqualTo(2);
      assertThat(Files.readAllBytes(localOf(reported.get(0)))).isEqualTo(small);
      assertThat(Files.readAllBytes(localOf(reported.get(1)))).isEqualTo(large);
      // Whichever copy lost finishes on its own thread: deleted once complete, or stopped at its
      // next chunk and withdrawn. Only the reported files stay.
      List<String> expected =
          reported.stream().map(s -> localOf(s).getFileName().toString()).sorted().toList();
      await().atMost(Duration.ofSeconds(30)).until(() -> filesUnder(out).equals(expected));
    } finally {
      SlowPrimaryFileSystem.completeLatePrimaries = false;
    }
  }

  @Test
  void abortAfterAFailedCommitDeletesWhatTheAttemptPublished() throws IOException {
    java.nio.file.Path out = work.resolve("aborted");
    HedgedFileCommitProtocol protocol = new HedgedFileCommitProtocol("0", out.toString());
    TaskAttemptContext ctx = task(unhedged(), 0);
    protocol.setupTask(ctx);
    String written =
        write(
            ctx,
            protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c000.csv")),
            bytes(10, 5));
    String neverCreated =
        protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c001.csv"));

    assertThatThrownBy(() -> protocol.commitTask(ctx))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("never created the spill file")
        .hasMessageContaining(SinkSpillFileSystem.localOf(new Path(neverCreated)).toString());
    assertThat(filesUnder(out)).as("the first output, published before the failure").hasSize(1);

    protocol.abortTask(ctx);
    assertThat(filesUnder(out)).isEmpty();
    assertThat(SinkSpillFileSystem.localOf(new Path(written)).getParent()).doesNotExist();
  }

  @Test
  void abortBeforeCommitLeavesNothing() throws IOException {
    java.nio.file.Path out = work.resolve("never");
    HedgedFileCommitProtocol protocol = new HedgedFileCommitProtocol("0", out.toString());
    TaskAttemptContext ctx = task(unhedged(), 0);
    protocol.setupTask(ctx);
    String written =
        write(
            ctx,
            protocol.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".txt")),
            bytes(10, 6));

    protocol.abortTask(ctx);

    assertThat(out).doesNotExist();
    assertThat(SinkSpillFileSystem.localOf(new Path(written)).getParent()).doesNotExist();
  }

  @Test
  void aTaskWithoutOutputReportsNothing() {
    HedgedFileCommitProtocol protocol =
        new HedgedFileCommitProtocol("0", work.resolve("empty").toString());
    TaskAttemptContext ctx = task(unhedged(), 0);
    protocol.setupTask(ctx);
    assertThat(statuses(protocol.commitTask(ctx))).isEmpty();
  }

  @Test
  void survivesJavaSerializationAsSparkShipsItToTasks() throws Exception {
    java.nio.file.Path out = work.resolve("shipped");
    HedgedFileCommitProtocol driverSide = new HedgedFileCommitProtocol("4", out.toString());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream o = new ObjectOutputStream(bytes)) {
      o.writeObject(driverSide);
    }
    HedgedFileCommitProtocol taskSide;
    try (ObjectInputStream in =
        new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      taskSide = (HedgedFileCommitProtocol) in.readObject();
    }
    TaskAttemptContext ctx = task(unhedged(), 2);
    taskSide.setupTask(ctx);
    write(
        ctx,
        taskSide.newTaskTempFile(ctx, Option.empty(), new FileNameSpec("", ".c000.orc")),
        bytes(5, 7));
    assertThat(statuses(taskSide.commitTask(ctx)))
        .singleElement()
        .satisfies(s -> assertThat(localOf(s).getParent()).isEqualTo(out));
  }

  @Test
  void writingBeforeSetupTaskIsRefused() {
    HedgedFileCommitProtocol protocol = new HedgedFileCommitProtocol("0", work.toString());
    assertThatThrownBy(
            () ->
                protocol.newTaskTempFile(
                    task(unhedged(), 0), Option.empty(), new FileNameSpec("", ".json")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("setupTask");
  }
}
