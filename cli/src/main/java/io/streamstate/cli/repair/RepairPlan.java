package io.streamstate.cli.repair;

import io.streamstate.cli.report.Sizes;
import io.streamstate.cli.verify.Finding;
import io.streamstate.cli.verify.Verification;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code repair} would do about what {@code verify} found: a fix for each finding whose file
 * verification classified as one a restart either fails on (the newest log entry, torn) or never
 * reads (a changelog off the lineage, a hedge copy no reader takes), and, for every other damaged
 * finding, why it is left. The classification is verification's ({@link Finding.Target}); this
 * class only decides what may be done about it now (the grace rule, the order of the logs).
 */
public final class RepairPlan {
  /** How a fix treats the file. */
  public enum Action {
    /** Copy it into the backup directory, check the copy, then delete it. */
    BACKUP_THEN_DELETE,
    /** Delete it: another file holds the same bytes. */
    DELETE
  }

  /**
   * One planned fix.
   *
   * @param path the file, relative to the checkpoint's root
   * @param fix what is done
   * @param why why that is safe
   */
  public record Fix(Finding finding, Action action, String path, String fix, String why) {}

  /** A damaged finding left as it is, and why. */
  public record Left(Finding finding, String reason) {}

  private final List<Fix> fixes;
  private final List<Left> left;
  private final Verification.Result verified;

  private RepairPlan(List<Fix> fixes, List<Left> left, Verification.Result verified) {
    this.fixes = List.copyOf(fixes);
    this.left = List.copyOf(left);
    this.verified = verified;
  }

  /**
   * Plans the fixes for {@code verified}.
   *
   * @param graceMillis the torn-file grace period: a changelog younger than this may still be being
   *     written (docs/protocol.md, I8), and is left
   * @param nowMillis the time to measure ages against
   */
  public static RepairPlan of(Verification.Result verified, long graceMillis, long nowMillis) {
    List<Fix> fixes = new ArrayList<>();
    List<Left> left = new ArrayList<>();
    // A torn last commit entry is moved away first: then the offset entry of that batch is the
    // newest one no commit names, and may go too.
    for (Finding f : verified.findings()) {
      if (f.target() == null || f.target().kind() != Finding.Kind.LAST_LOG_ENTRY) {
        continue;
      }
      if (f.target().path().startsWith("commits/")) {
        fixes.add(lastEntryFix(f, "commits"));
      }
    }
    Long lastCommit = verified.recoveryVersion() == 0 ? null : verified.recoveryVersion() - 1;
    for (Finding f : verified.findings()) {
      Finding.Target t = f.target();
      if (t == null) {
        if (f.severity() == Finding.Severity.DAMAGED) {
          left.add(new Left(f, "repair has no fix for it: " + f.recovery()));
        }
        continue;
      }
      switch (t.kind()) {
        case LAST_LOG_ENTRY -> {
          if (t.path().startsWith("offsets/")) {
            long batch = Long.parseLong(t.path().substring("offsets/".length()));
            if (lastCommit != null && lastCommit >= batch) {
              left.add(
                  new Left(
                      f,
                      "batch "
                          + batch
                          + " is committed (commits/"
                          + lastCommit
                          + "): without its offsets Spark cannot resume; restore the entry from a"
                          + " backup or by hand"));
            } else {
              fixes.add(lastEntryFix(f, "offsets"));
            }
          }
        }
        case UNREAD_CHANGELOG -> {
          long age = nowMillis - t.modifiedMillis();
          // Not age >= grace: a store's whole-second time may make the file look older than it is.
          if (!io.streamstate.core.storage.FileInfo.isSurelyOlderThan(
              t.modifiedMillis(), nowMillis, graceMillis)) {
            left.add(
                new Left(
                    f,
                    "modified "
                        + Sizes.millis(Math.max(0, age))
                        + " ago, within the torn-file grace period ("
                        + Sizes.millis(graceMillis)
                        + "): its writer may still be writing it; run repair again later"));
          } else {
            fixes.add(
                new Fix(
                    f,
                    Action.BACKUP_THEN_DELETE,
                    t.path(),
                    "move it into the backup directory (copy, check the copy, delete)",
                    "it does not verify and no restart reads it ("
                        + f.recovery()
                        + "); it is older than the torn-file grace period ("
                        + Sizes.millis(graceMillis)
                        + "), so no writer is still writing it; retention would delete it too"));
          }
        }
        case HEDGE_COPY_SAME_AS_ENTRY ->
            fixes.add(
                new Fix(
                    f,
                    Action.DELETE,
                    t.path(),
                    "delete it (no backup: the entry holds the same bytes)",
                    "its entry is whole and byte-identical; a reader of the entry reads the same"
                        + " bytes from the entry itself (docs/protocol.md, sl5)"));
        case HEDGE_COPY_UNREAD ->
            fixes.add(
                new Fix(
                    f,
                    Action.BACKUP_THEN_DELETE,
                    t.path(),
                    "move it into the backup directory (copy, check the copy, delete)",
                    "no reader takes it: " + f.recovery()));
      }
    }
    return new RepairPlan(fixes, left, verified);
  }

  private static Fix lastEntryFix(Finding f, String log) {
    return new Fix(
        f,
        Action.BACKUP_THEN_DELETE,
        f.target().path(),
        "move it into the backup directory (copy, check the copy, delete), with Hadoop's checksum"
            + " side file if there is one",
        "it is the newest entry of "
            + log
            + "/, so no later entry depends on it; a restart fails on it as it is, and without it"
            + (log.equals("commits")
                ? " Spark runs that batch again (its state versions are committed again, as after"
                    + " a crash before the commit entry)"
                : " Spark plans that batch again from the last committed offsets"));
  }

  public List<Fix> fixes() {
    return fixes;
  }

  public List<Left> left() {
    return left;
  }

  /** The verification it was planned from. */
  public Verification.Result verified() {
    return verified;
  }
}
