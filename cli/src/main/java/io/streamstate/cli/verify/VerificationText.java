package io.streamstate.cli.verify;

import io.streamstate.cli.report.Sizes;
import io.streamstate.cli.report.Table;

/** The outcome of {@code verify} as text: findings, then a verdict per store, then a summary. */
public final class VerificationText {
  private VerificationText() {}

  public static String render(Verification.Result r, long elapsedMillis) {
    StringBuilder out = new StringBuilder();
    out.append("checkpoint ").append(r.checkpoint()).append('\n');
    for (String l : r.logs()) {
      out.append(l).append('\n');
    }
    for (Finding f : r.findings()) {
      out.append('\n');
      out.append(f.severity() == Finding.Severity.DAMAGED ? "DAMAGED  " : "note     ")
          .append(f.file())
          .append('\n');
      out.append("         what:     ").append(f.problem()).append('\n');
      out.append("         recovery: ").append(f.recovery()).append('\n');
    }
    if (!r.stores().isEmpty()) {
      out.append('\n');
      Table t = new Table();
      t.row("store", "provider", "restart loads", "verdict");
      for (Verification.StoreVerdict v : r.stores()) {
        t.row(
            v.key().display(),
            v.provider(),
            "version " + v.version(),
            v.recoverable() ? v.how() : "FAILS (below)");
      }
      out.append(t.render(true));
      if (r.stores().stream().anyMatch(v -> !v.recoverable())) {
        out.append('\n');
      }
      for (Verification.StoreVerdict v : r.stores()) {
        if (!v.recoverable()) {
          out.append("FAILS    ")
              .append(v.key().display())
              .append(": ")
              .append(oneLine(v.failure()))
              .append('\n');
        }
      }
    }
    long recoverable = r.stores().stream().filter(Verification.StoreVerdict::recoverable).count();
    out.append('\n')
        .append(r.clean() ? "clean: " : "DAMAGED: ")
        .append("checked ")
        .append(r.files())
        .append(" files (")
        .append(Sizes.bytes(r.bytes()))
        .append(") in ")
        .append(Sizes.millis(elapsedMillis))
        .append("; ")
        .append(r.damaged())
        .append(" damaged, ")
        .append(r.notes())
        .append(r.notes() == 1 ? " note; " : " notes; ")
        .append(recoverable)
        .append(" of ")
        .append(r.stores().size())
        .append(" stores recoverable at version ")
        .append(r.recoveryVersion())
        .append('\n');
    return out.toString();
  }

  private static String oneLine(String s) {
    return s == null ? "" : s.replace('\n', ' ');
  }
}
