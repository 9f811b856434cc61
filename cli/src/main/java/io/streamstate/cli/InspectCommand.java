package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.inspect.Inspection;
import io.streamstate.cli.inspect.InspectionJson;
import io.streamstate.cli.inspect.InspectionText;
import io.streamstate.cli.report.Progress;
import io.streamstate.core.ProcessResources;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code streamstate inspect CHECKPOINT [--json]}: what a checkpoint holds. Reads only. */
@Command(
    name = "inspect",
    mixinStandardHelpOptions = true,
    description = {
      "Shows what a Spark streaming checkpoint holds: the query id, the offset and commit logs"
          + " (files, log journal, hedge copies), the confs pinned in the newest offset entry,"
          + " and per stateful operator its partitions, stores, schema files and, per store,"
          + " the provider that wrote it, its versions (newest, the one a restart loads, the"
          + " oldest recoverable) and its files by kind. Reads only.",
      ""
    })
final class InspectCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(names = "--json", description = "Print the stable JSON shape of docs/cli.md instead.")
  boolean json;

  @Option(names = "--all-confs", description = "List every conf pinned in the offset log.")
  boolean allConfs;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Inspection.Report report;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources);
        Progress progress = Progress.onTerminal(spec.commandLine().getErr(), "inspecting")) {
      progress.total(cp.state().stores().size());
      report = Inspection.of(cp, progress::step);
    }
    out.print(json ? InspectionJson.render(report) : InspectionText.render(report, allConfs));
    out.flush();
    return ExitCodes.OK;
  }
}
