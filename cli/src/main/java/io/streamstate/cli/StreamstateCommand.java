package io.streamstate.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** The top command, {@code streamstate}: its subcommands do the work. */
@Command(
    name = "streamstate",
    mixinStandardHelpOptions = true,
    versionProvider = Versions.class,
    description = {
      "Inspect, verify, dump, repair, migrate and export the logs of a Spark structured streaming"
          + " checkpoint, whether its state was written by streamstate's provider or by Spark's"
          + " own; convert a stopped query to another state store provider; repartition the"
          + " state of streamstate's.",
      ""
    },
    subcommands = {
      InspectCommand.class,
      VerifyCommand.class,
      ExportLogsCommand.class,
      RepartitionCommand.class,
      ConvertCommand.class,
      MigrateCommand.class,
      DumpCommand.class,
      RepairCommand.class,
      CommandLine.HelpCommand.class
    },
    footer = {
      "",
      "Exit codes: 0 done (verify: nothing damaged), 1 damaged or refused, 2 usage (also: not a"
          + " checkpoint), 3 the checkpoint could not be read.",
      "Documentation: docs/cli.md"
    })
public final class StreamstateCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return ExitCodes.USAGE;
  }
}
