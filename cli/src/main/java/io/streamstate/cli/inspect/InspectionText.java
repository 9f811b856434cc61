package io.streamstate.cli.inspect;

import io.streamstate.cli.checkpoint.LogEntries;
import io.streamstate.cli.checkpoint.StoreInventory;
import io.streamstate.cli.report.Sizes;
import io.streamstate.cli.report.Table;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The report as text for people: a header of the checkpoint, then a table per operator. */
public final class InspectionText {
  /** Pinned confs shown by name in the header; the others only with {@code --all-confs}. */
  private static final List<String> HEADLINE_CONFS =
      List.of(
          LogEntries.PROVIDER_CLASS,
          LogEntries.CHECKPOINT_FORMAT_VERSION,
          LogEntries.SHUFFLE_PARTITIONS);

  private InspectionText() {}

  public static String render(Inspection.Report r, boolean allConfs) {
    StringBuilder out = new StringBuilder();
    Table head = new Table();
    head.row("checkpoint", r.checkpoint());
    head.row("query id", r.queryId() == null ? "(none)" : r.queryId());
    head.row("offsets", log(r.offsets()));
    head.row("commits", log(r.commits()));
    head.row(
        "batches",
        "last planned "
            + orNone(r.lastBatch())
            + ", last committed "
            + orNone(r.lastCommittedBatch())
            + "; a restart runs batch "
            + r.recoveryVersion()
            + " on state version "
            + r.recoveryVersion());
    head.row("state provider", orNone(r.providerClass()));
    head.row(
        "checkpoint format",
        r.checkpointFormatVersion() == null
            ? "unknown (no commit yet; Spark's default is 1)"
            : r.confs().containsKey(LogEntries.CHECKPOINT_FORMAT_VERSION)
                ? r.checkpointFormatVersion() + " (pinned)"
                : r.checkpointFormatVersion() + " (as the commit log is written)");
    head.row(
        "shuffle partitions",
        r.shufflePartitions() == null ? "not pinned" : String.valueOf(r.shufflePartitions()));
    if (allConfs) {
      for (Map.Entry<String, String> e : r.confs().entrySet()) {
        head.row("conf", e.getKey() + " = " + e.getValue());
      }
    } else {
      int others = 0;
      for (String k : r.confs().keySet()) {
        if (!HEADLINE_CONFS.contains(k)) {
          others++;
        }
      }
      if (others > 0) {
        head.row("other pinned confs", others + " (--all-confs lists them)");
      }
    }
    Inspection.SegmentTotals s = r.segments();
    if (s.segmentFiles() + s.journals() > 0) {
      head.row(
          "segments",
          s.segments()
              + " group commits: "
              + s.journals()
              + " journals ("
              + Sizes.bytes(s.journalBytes())
              + "), "
              + s.segmentFiles()
              + " segment files ("
              + Sizes.bytes(s.segmentBytes())
              + ")"
              + (s.unreadable() > 0 ? ", " + s.unreadable() + " unreadable" : ""));
    }
    head.row("operators", String.valueOf(r.operators().size()));
    out.append(head.render(false));
    for (String p : r.problems()) {
      out.append("problem: ").append(p).append('\n');
    }
    for (Inspection.Log l : List.of(r.offsets(), r.commits())) {
      for (String p : l.problems()) {
        out.append("problem: ").append(p).append('\n');
      }
    }
    for (Inspection.Operator op : r.operators()) {
      out.append('\n');
      out.append("operator ")
          .append(op.id())
          .append(op.name() == null ? "" : " (" + op.name() + ")")
          .append(": ")
          .append(op.partitions().size())
          .append(" partitions, stores ")
          .append(String.join(", ", op.storeNames()))
          .append('\n');
      for (String m : op.metadataFiles()) {
        out.append("  metadata ").append(m).append('\n');
      }
      for (Inspection.Schema schema : op.schemas()) {
        out.append("  schema   ").append(schema.location());
        out.append(" (").append(Sizes.bytes(schema.bytes())).append(")");
        if (schema.keySchema() != null) {
          out.append("\n           key: ")
              .append(schema.keySchema())
              .append("; value: ")
              .append(schema.valueSchema());
        } else {
          out.append(" not decoded");
        }
        out.append('\n');
      }
      Table stores = new Table();
      stores.row(
          "store",
          "provider",
          "newest",
          "restart",
          "oldest recoverable",
          "base",
          "files (count, bytes)");
      List<String> problems = new ArrayList<>();
      for (Inspection.Store st : op.stores()) {
        stores.row(
            st.key().partition() + (st.key().storeName() == null ? "" : "/" + st.key().storeName()),
            st.provider(),
            orNone(st.newestVersion()),
            st.recoveryVersion() + (st.recoverable() ? "" : " (NOT recoverable)"),
            orNone(st.oldestRecoverableVersion()),
            st.baseVersion() == null
                ? "-"
                : st.baseVersion() == 0 ? "empty" : "snapshot " + st.baseVersion(),
            files(st.files()));
        if (st.problem() != null) {
          problems.add(st.key().display() + ": " + st.problem());
        }
      }
      out.append(indent(stores.render(true)));
      for (String p : problems) {
        out.append("  problem: ").append(p).append('\n');
      }
    }
    return out.toString();
  }

  private static String log(Inspection.Log l) {
    if (l.entries() == 0) {
      return "no entries (" + l.location() + ")";
    }
    StringBuilder sb = new StringBuilder();
    sb.append(l.entries())
        .append(l.entries() == 1 ? " entry, batch " : " entries, batches ")
        .append(l.first());
    if (!l.first().equals(l.last())) {
      sb.append("-").append(l.last());
    }
    switch (l.layout()) {
      case "journal" ->
          sb.append(", in a log journal (")
              .append(l.journals())
              .append(l.journals() == 1 ? " journal, " : " journals, ")
              .append(Sizes.bytes(l.journalBytes()))
              .append(")");
      case "journal+files" ->
          sb.append(", in a log journal and files (")
              .append(Sizes.bytes(l.journalBytes() + l.fileBytes()))
              .append(")");
      default -> sb.append(", files (").append(Sizes.bytes(l.fileBytes())).append(")");
    }
    if (l.hedgeCopies() > 0) {
      sb.append(", ").append(l.hedgeCopies()).append(" hedge copies");
    }
    return sb.toString();
  }

  private static String files(Map<String, StoreInventory.Count> counts) {
    List<String> parts = new ArrayList<>();
    for (Map.Entry<String, StoreInventory.Count> e : counts.entrySet()) {
      if (e.getValue().count() > 0) {
        parts.add(
            e.getKey() + " " + e.getValue().count() + " " + Sizes.bytes(e.getValue().bytes()));
      }
    }
    return parts.isEmpty() ? "none" : String.join(", ", parts);
  }

  private static String orNone(Object o) {
    return o == null ? "-" : String.valueOf(o);
  }

  private static String indent(String s) {
    StringBuilder sb = new StringBuilder();
    for (String line : s.split("\n")) {
      sb.append("  ").append(line).append('\n');
    }
    return sb.toString();
  }
}
