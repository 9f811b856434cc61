package io.streamstate.cli.repair;

import java.util.List;

/** A repair plan, and what was done, as text. */
public final class RepairText {
  private RepairText() {}

  /** The plan: each fix (file, what is wrong, the fix, why it is safe), then what is left. */
  public static String plan(RepairPlan plan, boolean apply, String backupDir) {
    StringBuilder out = new StringBuilder();
    out.append("checkpoint ").append(plan.verified().checkpoint()).append('\n');
    if (plan.fixes().isEmpty() && plan.left().isEmpty()) {
      out.append(
          plan.verified().clean()
              ? "nothing to repair: verify finds nothing damaged and no stray file\n"
              : "nothing repair can do, and nothing damaged it could name\n");
      return out.toString();
    }
    if (plan.fixes().stream().anyMatch(f -> f.action() == RepairPlan.Action.BACKUP_THEN_DELETE)) {
      out.append("backup     ")
          .append(backupDir)
          .append("/ (each file moved there keeps its path in the checkpoint)\n");
    }
    for (RepairPlan.Fix f : plan.fixes()) {
      out.append('\n').append(apply ? "FIX      " : "WOULD FIX ").append(f.finding().file());
      out.append('\n');
      out.append("         wrong:  ").append(f.finding().problem()).append('\n');
      out.append("         fix:    ").append(f.fix()).append('\n');
      out.append("         safe:   ").append(f.why()).append('\n');
    }
    for (RepairPlan.Left l : plan.left()) {
      out.append('\n').append("CANNOT   ").append(l.finding().file()).append('\n');
      out.append("         wrong:  ").append(l.finding().problem()).append('\n');
      out.append("         left:   ").append(l.reason()).append('\n');
    }
    out.append('\n')
        .append(plan.fixes().size())
        .append(plan.fixes().size() == 1 ? " fix" : " fixes")
        .append(apply ? "" : " planned")
        .append(", ")
        .append(plan.left().size())
        .append(" damaged file")
        .append(plan.left().size() == 1 ? "" : "s")
        .append(" repair cannot fix")
        .append(apply || plan.fixes().isEmpty() ? "" : "; run with --apply to make the fixes")
        .append('\n');
    return out.toString();
  }

  /** What {@code --apply} did. */
  public static String done(List<RepairApplier.Done> done) {
    StringBuilder out = new StringBuilder();
    for (RepairApplier.Done d : done) {
      out.append(d.backup() == null ? "deleted  " : "moved    ")
          .append(d.fix().finding().file().replaceFirst(" \\(batch \\d+\\)$", ""));
      if (d.backup() != null) {
        out.append(" to ").append(d.backup());
      }
      out.append('\n');
      for (String a : d.alsoDeleted()) {
        out.append("deleted  ").append(a).append('\n');
      }
    }
    return out.toString();
  }
}
