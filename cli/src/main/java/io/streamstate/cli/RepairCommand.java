package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.repair.LiveQueryCheck;
import io.streamstate.cli.repair.RepairApplier;
import io.streamstate.cli.repair.RepairPlan;
import io.streamstate.cli.repair.RepairText;
import io.streamstate.cli.report.Progress;
import io.streamstate.cli.verify.Verification;
import io.streamstate.cli.verify.VerificationText;
import io.streamstate.core.ProcessResources;
import io.streamstate.spark.shared.StreamStateSettings;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate repair CHECKPOINT [--apply] [--min-idle DURATION]}: plans a fix for each thing
 * {@code verify} finds that repair can fix (a torn newest offset or commit entry, a torn changelog
 * no restart reads once past the grace period, hedge copies no reader needs), says why each is safe
 * and what it cannot fix; with {@code --apply} makes the fixes (every deleted file first copied
 * into a backup directory, unless another file holds its bytes) and verifies again. Refuses a
 * checkpoint a live query may hold ({@link LiveQueryCheck}).
 */
@Command(
    name = "repair",
    mixinStandardHelpOptions = true,
    description = {
      "Plans a fix for what verify finds that repair can fix: a torn or unparseable newest offset"
          + " or commit entry written as a plain file (moved into a backup so that Spark runs the"
          + " batch again), a changelog of streamstate's that does not verify and that no restart"
          + " reads, older than the torn-file grace period (moved into a backup), and hedge copies"
          + " of log entries no reader needs (deleted; backed up unless the entry holds the same"
          + " bytes). Lists each with what is wrong, the fix and why it is safe, and what it"
          + " cannot fix. Dry run unless --apply; with --apply, verifies again after. Backups go"
          + " to CHECKPOINT/_streamstate_backup/<UTC time>/. Refuses a checkpoint a live query"
          + " may hold: a log journal with a live writer, or logs modified within --min-idle.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 nothing to do, or all fixed (--apply: verify is clean after), 1 something"
          + " repair cannot fix, or refused (a live query), 2 usage (also: not a checkpoint),"
          + " 3 could not read or write."
    })
final class RepairCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(names = "--apply", description = "Make the fixes (default: only say what they would be).")
  boolean apply;

  @Option(
      names = "--min-idle",
      paramLabel = "DURATION",
      defaultValue = "10m",
      description =
          "Refuse unless the offset and commit logs were last modified at least this long ago"
              + " (a running query writes both every batch): 500ms, 30s, 10m, 2h; 0 turns the"
              + " check off. Default: ${DEFAULT-VALUE}.")
  String minIdle;

  @Override
  public Integer call() {
    long minIdleMillis = parseDuration(minIdle);
    PrintWriter out = spec.commandLine().getOut();
    Instant now = Instant.now();
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources)) {
      LiveQueryCheck.check(cp, minIdleMillis, now.toEpochMilli());
      long grace =
          cp.conf()
              .getLong(
                  StreamStateSettings.TORN_FILE_GRACE_MS,
                  StreamStateSettings.DEFAULT_TORN_FILE_GRACE_MS);
      Verification.Result verified;
      try (Progress progress = Progress.onTerminal(spec.commandLine().getErr(), "verifying")) {
        verified = Verification.run(cp, progress);
      }
      RepairPlan plan = RepairPlan.of(verified, grace, now.toEpochMilli());
      String backupDir = cp.location(RepairApplier.backupDir(now));
      out.print(RepairText.plan(plan, apply, backupDir));
      out.flush();
      if (!apply || plan.fixes().isEmpty()) {
        return plan.left().isEmpty() ? ExitCodes.OK : ExitCodes.DAMAGED;
      }
      List<RepairApplier.Done> done = RepairApplier.apply(cp, plan, now);
      out.println();
      out.print(RepairText.done(done));
      out.flush();
    }
    // Verify again, on the checkpoint as it is now (a fresh read: the logs were read before).
    long start = System.nanoTime();
    Verification.Result after;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources);
        Progress progress = Progress.onTerminal(spec.commandLine().getErr(), "verifying")) {
      after = Verification.run(cp, progress);
    }
    out.println();
    out.println("verify after the repair:");
    out.print(VerificationText.render(after, (System.nanoTime() - start) / 1_000_000));
    out.flush();
    return after.clean() ? ExitCodes.OK : ExitCodes.DAMAGED;
  }

  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|min|h|d)?");

  /** {@code 500ms}, {@code 30s}, {@code 10m}, {@code 2h}, {@code 1d}; a bare number is seconds. */
  static long parseDuration(String text) {
    Matcher m = DURATION.matcher(text.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "--min-idle '" + text + "' is not a duration (for example 500ms, 30s, 10m, 2h)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2);
    return switch (unit) {
      case "ms" -> n;
      case "s" -> n * 1000;
      case "m", "min" -> n * 60_000;
      case "h" -> n * 3_600_000;
      default -> n * 86_400_000;
    };
  }
}
