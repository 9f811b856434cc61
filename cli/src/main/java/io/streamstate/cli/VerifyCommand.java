package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.cli.report.Progress;
import io.streamstate.cli.verify.Verification;
import io.streamstate.cli.verify.VerificationText;
import io.streamstate.core.ProcessResources;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate verify CHECKPOINT}: reads every file a restart could read and says whether the
 * restart would succeed. Reads only. Exit 0: nothing damaged; 1: damaged (each file named).
 */
@Command(
    name = "verify",
    mixinStandardHelpOptions = true,
    description = {
      "Reads every file a restart of the query could read, each through the reader the restart"
          + " would use: Spark's offset and commit logs (whole, continuous, commits a prefix of"
          + " the offsets; log journals replayed, hedge copies as our manager reads them), and"
          + " every changelog, snapshot manifest, SST, segment and segment-journal record of"
          + " streamstate's stores, verified whole; then, per store, the lineage a restart loads"
          + " (from the version the commit log names down to a snapshot or version 0). Spark's"
          + " own providers' files are checked by name. Each damaged file is named with what is"
          + " wrong and what recovery would do. Reads only.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 clean, 1 damaged (or a migration to it has not finished), 2 usage (also:"
          + " not a checkpoint), 3 could not read."
    })
final class VerifyCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    long start = System.nanoTime();
    Verification.Result result;
    String incomplete;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources);
        Progress progress = Progress.onTerminal(spec.commandLine().getErr(), "verifying")) {
      incomplete =
          MigrationMarker.read(cp.root())
              .map(source -> MigrationMarker.incomplete(cp.describe(), source))
              .orElse(null);
      result = Verification.run(cp, progress);
    }
    out.print(VerificationText.render(result, (System.nanoTime() - start) / 1_000_000));
    if (incomplete != null) {
      // Whatever the files say, a checkpoint a migration is still writing is not clean.
      out.println("INCOMPLETE: " + incomplete);
    }
    out.flush();
    return result.clean() && incomplete == null ? ExitCodes.OK : ExitCodes.DAMAGED;
  }
}
