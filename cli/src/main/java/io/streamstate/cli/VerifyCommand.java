package io.streamstate.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Stub. */
@Command(name = "verify", mixinStandardHelpOptions = true)
final class VerifyCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    return ExitCodes.OK;
  }
}
