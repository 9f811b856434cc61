package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.migrate.Migration;
import io.streamstate.cli.migrate.MigrationProgress;
import io.streamstate.cli.report.Sizes;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.PrintWriter;
import java.net.URI;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate migrate SRC DST}: copies a whole checkpoint to another store, each file read
 * back and compared, resumable after a kill ({@link Migration}). Never writes at the source; at the
 * destination creates files only (and replaces the torn files of its own earlier run).
 */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    description = {
      "Copies a whole checkpoint SRC to DST, another location on any store (hdfs: to s3a:, local"
          + " disk to HDFS, ...), reading each file back and comparing its length and SHA-256"
          + " with the source's. DST must be empty: a marker file _streamstate_migration"
          + " naming SRC is written there first and deleted once DST lists exactly what SRC"
          + " does; a run that was killed is resumed by running the same command again (files"
          + " already copied are skipped, a torn one is replaced). Refuses a source a live query"
          + " holds (its journals open). Logs kept in streamstate's log journal are written"
          + " out as plain files where DST cannot host the journal (S3). Never writes to SRC.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 done, 1 refused (DST not empty and not an unfinished migration of SRC, a"
          + " live query holds SRC, SRC changed while copied), 2 usage (also: SRC is not a"
          + " checkpoint), 3 could not read or write (rerun to resume)."
    })
final class MigrateCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Parameters(
      index = "1",
      paramLabel = "DST",
      description =
          "Where to copy it: a path or URI (file:, hdfs:, s3a:, ...), empty or absent, or holding"
              + " the marker of an unfinished migration of the same SRC.")
  String destination;

  /** The tests' kill: stop after this many files copied, the next one left torn. */
  int interruptAfterFiles = -1;

  @Override
  public Integer call() {
    copy(
        checkpoint,
        destination,
        interruptAfterFiles,
        spec.commandLine().getOut(),
        spec.commandLine().getErr());
    return ExitCodes.OK;
  }

  /**
   * Migrates {@code checkpoint} to {@code destination}, progress on {@code err}, the summary on
   * {@code out}; {@code interruptAfterFiles} is the tests' kill (-1: none).
   */
  static void copy(
      CheckpointOptions checkpoint,
      String destination,
      int interruptAfterFiles,
      PrintWriter out,
      PrintWriter err) {
    long start = System.nanoTime();
    Migration.Result r;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources)) {
      URI dst = Checkpoint.toUri(destination);
      try (Storage to = HadoopStorages.open(dst, cp.conf(), resources)) {
        checkApart(cp.describe(), to.describe());
        boolean terminal = System.console() != null;
        r =
            new Migration(cp, to, dst, interruptAfterFiles)
                .run((files, bytes) -> new MigrationProgress(err, terminal, files, bytes));
      } finally {
        LogJournals.of(resources).close();
      }
    }
    for (String note : r.notes()) {
      out.println(note);
    }
    out.println(
        "migrated "
            + r.source()
            + " to "
            + r.destination()
            + ": "
            + r.files()
            + " files ("
            + Sizes.bytes(r.bytes())
            + ") verified; "
            + r.copied()
            + " copied, "
            + r.skipped()
            + " already there"
            + (r.resumed() ? " (resumed)" : "")
            + ", "
            + r.replaced()
            + " torn and replaced, in "
            + Sizes.millis((System.nanoTime() - start) / 1_000_000));
    out.flush();
  }

  /** Refuses a destination that is the source, or inside it, or holds it. */
  private static void checkApart(String source, String destination) {
    String s = source.endsWith("/") ? source : source + "/";
    String d = destination.endsWith("/") ? destination : destination + "/";
    if (s.startsWith(d) || d.startsWith(s)) {
      throw new IllegalArgumentException(
          "the destination "
              + destination
              + " is the source "
              + source
              + ", or inside it, or holds it");
    }
  }
}
