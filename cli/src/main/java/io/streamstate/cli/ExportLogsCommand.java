package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.cli.report.BatchRanges;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.shared.StreamStateSettings;
import io.streamstate.spark.shared.checkpoint.LogJournal;
import io.streamstate.spark.shared.checkpoint.LogJournalReader;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate export-logs CHECKPOINT [--dry-run]}: writes the offset and commit log entries
 * that only our log journal holds out as plain files {@code offsets/N}, {@code commits/N}, so that
 * Spark's own checkpoint file manager can read the checkpoint. The writing is spark-shared's {@link
 * LogJournal#writeOut} (docs/protocol.md, "Spark log journal" w6, what our manager does when the
 * journal is turned off): it takes the log over (fencing the journals: on local disk a live writer
 * is reported and nothing is written), creates each entry's file only if absent (an existing one
 * must hold the same bytes), then deletes the journals and the entry files a journal deleted.
 */
@Command(
    name = "export-logs",
    mixinStandardHelpOptions = true,
    description = {
      "Writes the offset and commit log entries that are only in streamstate's log journal"
          + " (spark.sql.streaming.stateStore.streamstate.logJournal.enabled) out as plain files"
          + " offsets/N and commits/N, so that Spark's own checkpoint file manager can read the"
          + " checkpoint. Create-if-absent: an existing entry file is never overwritten (it must"
          + " hold the journal's bytes). Then deletes the journals, and the entry files a journal"
          + " record had deleted. Takes each log over first: on local disk it refuses while a"
          + " live query holds the journal; on HDFS taking over recovers the journal's lease, so"
          + " stop the query first. Entries torn at their name whose only whole copy is a hedge"
          + " copy are reported, not rewritten.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 done (or nothing to do), 1 refused or an entry Spark's own manager cannot"
          + " read is left, 2 usage (also: not a checkpoint), 3 could not read or write."
    })
final class ExportLogsCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(
      names = "--dry-run",
      description = "Say what would be written, skipped and deleted; change nothing.")
  boolean dryRun;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    int code = ExitCodes.OK;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources)) {
      for (SparkLog log : List.of(cp.offsets(), cp.commits())) {
        code = Math.max(code, export(cp, resources, log, out));
      }
      LogJournals.of(resources).close();
    }
    out.flush();
    return code;
  }

  private int export(Checkpoint cp, ProcessResources resources, SparkLog log, PrintWriter out) {
    List<Long> toWrite = new ArrayList<>();
    List<Long> files = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    for (SparkLog.Entry e : log.entries().values()) {
      if (e.source() == SparkLog.Source.HEDGE_COPY) {
        problems.add(
            log.name()
                + "/"
                + e.batchId()
                + " is torn at its name and whole only in its hedge copy "
                + e.location()
                + ": not overwritten (Spark's own manager would read the torn entry; keep our"
                + " manager on this checkpoint)");
      } else if (!e.whole()) {
        problems.add(
            e.location()
                + (e.source() == SparkLog.Source.JOURNAL ? " (batch " + e.batchId() + ")" : "")
                + " is "
                + e.problem()
                + ": not written out");
      } else if (e.source() == SparkLog.Source.JOURNAL && !e.hasFile()) {
        toWrite.add(e.batchId());
      } else {
        files.add(e.batchId());
      }
    }
    List<String> toDelete = new ArrayList<>();
    for (LogJournalReader.JournalRead j : log.journals()) {
      toDelete.add(j.name());
    }
    for (SparkLog.Stray s : log.strays()) {
      if (s.what().startsWith("an entry file a log journal deleted")) {
        toDelete.add(s.location().substring(s.location().lastIndexOf('/') + 1));
      }
    }
    String dir = log.location();
    if (log.journals().isEmpty()) {
      out.println(
          dir
              + ": no log journal; "
              + files.size()
              + " entries are files already"
              + (files.isEmpty() ? "" : " (batches " + BatchRanges.of(files) + ")")
              + ": nothing to write");
    } else {
      String verb = dryRun ? "would write " : "wrote ";
      int written = dryRun ? toWrite.size() : writeOut(cp, resources, log);
      out.println(
          dir
              + ": "
              + verb
              + toWrite.size()
              + " entries from the journal"
              + (toWrite.isEmpty() ? "" : " (batches " + BatchRanges.of(toWrite) + ")")
              + "; skipped "
              + files.size()
              + " that are files already"
              + (files.isEmpty() ? "" : " (batches " + BatchRanges.of(files) + ")"));
      for (String d : toDelete) {
        out.println(
            "  " + (dryRun ? "would delete " : "deleted ") + FramedFile.location(log.storage(), d));
      }
      if (written != toWrite.size()) {
        // Another writer changed the log after it was read: the take-over's count is the truth.
        out.println(
            "  the log changed after it was read: the take-over wrote " + written + " entries out");
      }
    }
    for (String p : problems) {
      out.println("  left as it is: " + p);
    }
    return problems.isEmpty() ? ExitCodes.OK : ExitCodes.DAMAGED;
  }

  /**
   * Writes the log's journaled entries out as files through spark-shared's {@link LogJournal}, as
   * our checkpoint file manager does when the journal is turned off.
   *
   * @throws ConflictException a live writer holds the journal (local disk), or a file of an entry
   *     holds other bytes than the journal
   */
  private static int writeOut(Checkpoint cp, ProcessResources resources, SparkLog log) {
    HadoopStorage dir = HadoopStorages.openHadoop(cp.child(log.name()), cp.conf(), resources);
    if (!dir.appendSupported() || !dir.canFence()) {
      throw new ConflictException(
          log.location()
              + " holds log journals, but its store cannot fence their writer from here: not"
              + " written out");
    }
    LogJournal journal =
        LogJournals.of(resources)
            .journal(dir, null, StreamStateSettings.logJournalRollRecords(cp.conf()));
    try {
      return journal.writeOut();
    } catch (ConflictException e) {
      throw new ConflictException(
          "refused: " + e.getMessage() + " (stop the query that writes the checkpoint first)", e);
    }
  }
}
