package io.streamstate.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Stub. */
@Command(name = "export-logs", mixinStandardHelpOptions = true)
final class ExportLogsCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    return ExitCodes.OK;
  }
}
