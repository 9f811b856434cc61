package io.streamstate.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.spark.shared.HedgedSinkWrites;
import io.streamstate.spark.shared.SinkSpillFileSystem;
import io.streamstate.spark.shared.SparkLine;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.sql.execution.streaming.ManifestFileCommitProtocol;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus$;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Spark's streaming file-sink commit protocol with each task's output files hedged against a slow
 * store (a slow HDFS DataNode), as our changelogs are. Set {@code
 * spark.sql.streaming.commitProtocolClass=io.streamstate.spark.HedgedFileCommitProtocol}; see
 * {@code docs/protocol.md}, "Hedged file-sink output".
 *
 * <p>The driver side is Spark's {@link ManifestFileCommitProtocol} unchanged ({@code
 * FileStreamSink} hands it the sink log only because it is one): {@code commitJob} lists in {@code
 * _spark_metadata/<batch>} exactly the files the committed tasks reported. The task side is ours
 * (f5 is Spark's):
 *
 * <ol>
 *   <li><b>f1</b> {@code setupTask}: the task's output files will be local spill files, written
 *       through {@link SinkSpillFileSystem} (registered on the task's configuration, which Spark
 *       hands to the output writer), in a directory of the attempt's own under the executor's local
 *       directory.
 *   <li><b>f2</b> {@code newTaskTempFile}: the output's name is chosen as Spark's protocol would,
 *       {@code [<partition dir>/]part-<split>-<uuid><suffix>} (the primary name), with an alternate
 *       name that differs only by a second UUID; the writer gets the spill path, whose file name is
 *       the primary name (compression codecs chosen by extension still apply).
 *   <li><b>f3</b> {@code commitTask}, per output file (the writers are closed by then): publish the
 *       spill file with a {@link io.streamstate.core.hedge.HedgedWriter} onto the sink directory's
 *       storage: the primary name is written first; past the hedge deadline the same bytes go to
 *       the alternate name; the first complete copy wins. The loser stops at its next chunk and is
 *       withdrawn, or, if it completed, is deleted by the writer; if its outcome is unknown it is
 *       left, a file no manifest lists.
 *   <li><b>f4</b> The task reports the winner only, as a {@link SinkFileStatus} built from what it
 *       wrote (length of the spill file, the store's default replication and block size, the time
 *       of publication): no {@code getFileStatus} request per file. Spill files are deleted.
 *   <li><b>f5</b> (driver, Spark's code) {@code commitJob} lists exactly the reported names in
 *       {@code _spark_metadata/<batch>}.
 *   <li><b>f6</b> {@code abortTask}: stops copies in flight, deletes the spill files and every file
 *       this attempt published (nothing lists them).
 * </ol>
 *
 * <p>With {@code hedge.enabled=false} each file is one plain create of its primary name, still from
 * the spill file. Sink files are published on the store's terms: {@code file:} through {@code
 * java.nio} (forced to disk), HDFS with {@code hsync} before close, S3A as one conditional PUT,
 * other stores in single-writer mode (names are attempt-unique). {@code newTaskTempFileAbsPath}
 * stays unsupported, as in Spark's protocol.
 *
 * <p>Spark deserializes one instance per task; the task-side state is per instance and transient.
 */
public class HedgedFileCommitProtocol extends ManifestFileCommitProtocol {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(HedgedFileCommitProtocol.class);

  private final String outputPath;

  /** The outputs of the task attempt this instance runs; null on the driver. */
  private transient TaskOutputs task;

  /** The constructor {@code FileCommitProtocol.instantiate} calls. */
  public HedgedFileCommitProtocol(String jobId, String path) {
    super(jobId, path);
    SparkLine.checkRunningSpark();
    this.outputPath = path;
  }

  /**
   * The counters of this JVM's sink-file hedgers, summed (cumulative; {@code since} for a delta):
   * publishes, hedges fired and won, losers cleaned or left. For tests and tools.
   */
  public static HedgeMetrics.Snapshot hedgeMetrics() {
    return HedgedSinkWrites.of(ProcessResources.shared()).totals();
  }

  // f1
  @Override
  public void setupTask(TaskAttemptContext taskContext) {
    super.setupTask(taskContext);
    try {
      SinkSpillFileSystem.register(taskContext.getConfiguration());
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot register the sink spill file system", e);
    }
    // Spark made this instance by class name: the process's sink writes serve its task.
    HedgedSinkWrites sinkWrites = HedgedSinkWrites.of(ProcessResources.shared());
    task =
        new TaskOutputs(
            taskContext,
            sinkWrites,
            LocalDirs.sinkSpillRoot()
                .resolve(taskContext.getTaskAttemptID() + "-" + UUID.randomUUID()));
  }

  // f2
  @Override
  public String newTaskTempFile(
      TaskAttemptContext taskContext, Option<String> dir, FileNameSpec spec) {
    TaskOutputs outputs = task();
    // As Spark's protocol: part-<split>-<uuid><suffix>; %05d does not truncate larger splits.
    String prefix = String.format("part-%05d-", taskContext.getTaskAttemptID().getTaskID().getId());
    String primary = prefix + UUID.randomUUID() + spec.suffix();
    String alternate = prefix + UUID.randomUUID() + spec.suffix();
    String subdirectory = dir.isDefined() ? trimSlashes(dir.get()) : "";
    String in = subdirectory.isEmpty() ? "" : subdirectory + "/";
    Path spill = outputs.spillDirectory.resolve(primary);
    outputs.files.add(new OutputFile(spill, in + primary, in + alternate));
    return SinkSpillFileSystem.pathOf(spill).toString();
  }

  /** Spark 4.2 calls the {@link FileNameSpec} variant; this one is kept for older callers. */
  @Override
  @SuppressWarnings("deprecation")
  public String newTaskTempFile(TaskAttemptContext taskContext, Option<String> dir, String ext) {
    return newTaskTempFile(taskContext, dir, new FileNameSpec("", ext));
  }

  // f3, f4
  @Override
  public FileCommitProtocol.TaskCommitMessage commitTask(TaskAttemptContext taskContext) {
    TaskOutputs outputs = task();
    List<SinkFileStatus> statuses = new ArrayList<>();
    try {
      if (!outputs.files.isEmpty()) {
        HedgedSinkWrites.SinkLocation location =
            outputs.sinkWrites.location(outputPath, taskContext.getConfiguration());
        for (OutputFile file : outputs.files) {
          statuses.add(publish(outputs, location, file));
        }
      }
    } finally {
      outputs.deleteSpill();
    }
    return new FileCommitProtocol.TaskCommitMessage(ScalaInterop.seq(statuses));
  }

  private SinkFileStatus publish(
      TaskOutputs outputs, HedgedSinkWrites.SinkLocation location, OutputFile file) {
    long length;
    try {
      length = Files.size(file.spill());
    } catch (NoSuchFileException e) {
      throw new RetryableException(
          "Cannot commit sink output "
              + file.primaryName()
              + ": its writer never created the spill file "
              + file.spill(),
          e);
    } catch (IOException e) {
      throw new RetryableException("Cannot read the spill file " + file.spill() + ": " + e, e);
    }
    SpillContent content = new SpillContent(file.spill(), length);
    outputs.inFlight.add(content);
    HedgedPublish result;
    try {
      result =
          outputs
              .sinkWrites
              .writer(outputs.conf(), length)
              .publish(location.storage(), file.primaryName(), file.alternateName(), content);
    } finally {
      content.settle(); // the losing copy, if still copying, stops at its next chunk
    }
    outputs.published.add(result.name());
    if (result.hedgeFired()) {
      LOG.debug(
          "Hedged the sink output {} ({} bytes) of {}: {} won after {} ms",
          file.primaryName(),
          length,
          outputs.attempt,
          result.hedgeWon() ? "the alternate " + result.name() : "the primary",
          result.latency().toMillis());
    }
    FileStatus status =
        new FileStatus(
            length,
            false,
            location.replication(),
            location.blockSize(),
            System.currentTimeMillis(),
            location.pathOf(result.name()));
    return SinkFileStatus$.MODULE$.apply(status);
  }

  // f6
  @Override
  public void abortTask(TaskAttemptContext taskContext) {
    TaskOutputs outputs = task;
    if (outputs == null) {
      return;
    }
    outputs.inFlight.forEach(SpillContent::settle);
    try {
      if (!outputs.published.isEmpty()) {
        HedgedSinkWrites.SinkLocation location =
            outputs.sinkWrites.location(outputPath, taskContext.getConfiguration());
        for (String name : outputs.published) {
          try {
            location.storage().delete(name);
          } catch (RuntimeException e) {
            LOG.warn(
                "Cannot delete {}, published by the aborted task {}; no manifest lists it",
                location.pathOf(name),
                outputs.attempt,
                e);
          }
        }
      }
    } finally {
      outputs.deleteSpill();
    }
  }

  private TaskOutputs task() {
    if (task == null) {
      throw new IllegalStateException("setupTask must be called before the task writes files");
    }
    return task;
  }

  private static String trimSlashes(String dir) {
    int start = 0;
    int end = dir.length();
    while (start < end && dir.charAt(start) == '/') {
      start++;
    }
    while (end > start && dir.charAt(end - 1) == '/') {
      end--;
    }
    return dir.substring(start, end);
  }

  /** One output file of the task: its spill file and the two names it may be published under. */
  private record OutputFile(Path spill, String primaryName, String alternateName) {}

  /** What one task attempt wrote and published. */
  private static final class TaskOutputs {
    final TaskAttemptContext context;
    final String attempt;
    final HedgedSinkWrites sinkWrites;
    final Path spillDirectory;
    final List<OutputFile> files = new ArrayList<>();
    final List<String> published = new ArrayList<>();
    final List<SpillContent> inFlight = new ArrayList<>();

    TaskOutputs(TaskAttemptContext context, HedgedSinkWrites sinkWrites, Path spillDirectory) {
      this.context = context;
      this.sinkWrites = sinkWrites;
      this.attempt = String.valueOf(context.getTaskAttemptID());
      this.spillDirectory = spillDirectory;
    }

    Configuration conf() {
      return context.getConfiguration();
    }

    /** Removes the attempt's spill directory (a copy still reading a file keeps its handle). */
    void deleteSpill() {
      if (!Files.exists(spillDirectory)) {
        return;
      }
      try (Stream<Path> walk = Files.walk(spillDirectory)) {
        for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (IOException | UncheckedIOException e) {
        LOG.warn("Cannot delete the sink spill directory {} of {}", spillDirectory, attempt, e);
      }
    }
  }

  /**
   * The bytes of one spill file, for each copy of a hedged publish. Once the publish has settled (a
   * copy won, or all failed), a copy still running stops at its next chunk: its create fails and
   * withdraws what it wrote, so a slow loser does not go on loading the store.
   */
  private static final class SpillContent implements ContentWriter {
    private static final int CHUNK_BYTES = 64 * 1024;
    private final Path file;
    private final long length;
    private volatile boolean settled;

    SpillContent(Path file, long length) {
      this.file = file;
      this.length = length;
    }

    void settle() {
      settled = true;
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
      byte[] chunk = new byte[CHUNK_BYTES];
      long copied = 0;
      try (InputStream in = Files.newInputStream(file)) {
        int n;
        while ((n = in.read(chunk)) > 0) {
          if (settled) {
            throw new IOException(
                "Stopped copying " + file + ": the other copy of this output was published");
          }
          out.write(chunk, 0, n);
          copied += n;
        }
      }
      if (copied != length) {
        throw new IOException(
            "The spill file " + file + " holds " + copied + " bytes, expected " + length);
      }
    }
  }
}
