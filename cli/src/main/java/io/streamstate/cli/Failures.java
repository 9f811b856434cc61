package io.streamstate.cli;

import io.streamstate.cli.checkpoint.NotACheckpointException;
import io.streamstate.cli.json.Json;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.error.UnsupportedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import picocli.CommandLine;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.ParseResult;

/**
 * What the command does with an error a subcommand did not handle: one line on standard error that
 * names the file and what is wrong (never a stack trace, unless {@code STREAMSTATE_DEBUG} is set),
 * and an exit code by what the user does next ({@link ExitCodes}).
 */
final class Failures implements IExecutionExceptionHandler {
  @Override
  public int handleExecutionException(Exception ex, CommandLine cl, ParseResult parsed) {
    cl.getErr().println("streamstate " + cl.getCommandName() + ": " + message(ex));
    if (System.getenv("STREAMSTATE_DEBUG") != null) {
      ex.printStackTrace(cl.getErr());
    }
    cl.getErr().flush();
    return exitCode(ex);
  }

  /** The exit code for {@code e}. */
  static int exitCode(Throwable e) {
    if (e instanceof NotACheckpointException
        || e instanceof IllegalArgumentException
        || e instanceof UnsupportedException) {
      return ExitCodes.USAGE;
    }
    if (e instanceof ConflictException || e instanceof Json.JsonException) {
      return ExitCodes.DAMAGED;
    }
    return ExitCodes.UNREADABLE;
  }

  /** {@code e}'s message on one line, with the cause that says what went wrong. */
  static String message(Throwable e) {
    String message;
    if (e instanceof StreamStateException
        || e instanceof NotACheckpointException
        || e instanceof IllegalArgumentException
        || e instanceof Json.JsonException) {
      message = e.getMessage();
    } else if (e instanceof UncheckedIOException u && u.getCause() != null) {
      message = describe(u.getCause());
    } else if (e instanceof IOException) {
      message = describe(e);
    } else {
      message =
          describe(e) + " (an error this command does not expect; STREAMSTATE_DEBUG=1 shows where)";
    }
    if (message == null) {
      message = e.getClass().getSimpleName();
    }
    return message.replace('\n', ' ').replace('\r', ' ');
  }

  private static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }
}
