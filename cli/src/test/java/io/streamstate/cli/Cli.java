package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.cli.json.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;

/** Runs the command in-process, as {@code bin/streamstate} would run it, capturing its output. */
final class Cli {
  private Cli() {}

  /** What one run printed and returned. */
  record Run(int exit, String out, String err) {
    /** Standard output as the JSON object {@code inspect --json} prints. */
    Map<String, Object> json() {
      return Json.parseObject(out);
    }

    /** Never a stack trace, whatever happened. */
    Run withoutStackTrace() {
      assertThat(out + err).doesNotContain("\tat ").doesNotContain("Exception in thread");
      return this;
    }

    @Override
    public String toString() {
      return "exit " + exit + "\n--- out\n" + out + "--- err\n" + err;
    }
  }

  static Run run(String... args) {
    return run(cl -> {}, args);
  }

  /** {@code run}, after {@code setup} saw the command line (to set a command's test hook). */
  static Run run(java.util.function.Consumer<CommandLine> setup, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine();
    setup.accept(cl);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int exit = cl.execute(args);
    return new Run(exit, out.toString(), err.toString()).withoutStackTrace();
  }

  /** {@code run} with {@code --conf k=v} for each setting, after the arguments. */
  static Run run(Map<String, String> conf, String... args) {
    List<String> all = new java.util.ArrayList<>(List.of(args));
    conf.forEach((k, v) -> all.add("--conf=" + k + "=" + v));
    return run(all.toArray(new String[0]));
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(Object o) {
    return (List<Map<String, Object>>) o;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object o) {
    return (Map<String, Object>) o;
  }
}
