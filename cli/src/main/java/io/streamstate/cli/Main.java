package io.streamstate.cli;

import picocli.CommandLine;

/**
 * The {@code streamstate} command's entry point ({@code bin/streamstate} runs it on the user's
 * Spark or Hadoop classpath). Tests run {@link #commandLine()} in-process.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /**
   * The command line, ready to {@code execute}: picocli parses the arguments (a usage error exits
   * with {@link ExitCodes#USAGE}), and {@link Failures} turns what a subcommand throws into one
   * line and an exit code.
   */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new StreamstateCommand());
    cl.setExecutionExceptionHandler(new Failures());
    cl.setCaseInsensitiveEnumValuesAllowed(true);
    return cl;
  }
}
