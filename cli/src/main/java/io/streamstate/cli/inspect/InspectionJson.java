package io.streamstate.cli.inspect;

import io.streamstate.cli.checkpoint.StoreInventory;
import io.streamstate.cli.json.JsonWriter;
import java.util.List;
import java.util.Map;

/**
 * The report as JSON, the stable shape docs/cli.md documents ({@code "format": 1}): fields are only
 * ever added, in new versions of the format, never renamed or removed.
 */
public final class InspectionJson {
  /** The version of the JSON shape. */
  public static final int FORMAT = 1;

  private InspectionJson() {}

  public static String render(Inspection.Report r) {
    JsonWriter w = new JsonWriter();
    w.beginObject();
    w.field("format", FORMAT);
    w.field("checkpoint", r.checkpoint());
    w.field("queryId", r.queryId());
    w.name("offsets");
    log(w, r.offsets());
    w.name("commits");
    log(w, r.commits());
    w.field("lastBatch", r.lastBatch());
    w.field("lastCommittedBatch", r.lastCommittedBatch());
    w.field("recoveryVersion", r.recoveryVersion());
    w.field("providerClass", r.providerClass());
    w.field("checkpointFormatVersion", r.checkpointFormatVersion());
    w.name("shufflePartitions");
    if (r.shufflePartitions() == null) {
      w.nullValue();
    } else {
      w.value((long) r.shufflePartitions());
    }
    w.name("confs").beginObject();
    r.confs().forEach(w::field);
    w.endObject();
    w.name("operators").beginArray();
    for (Inspection.Operator op : r.operators()) {
      operator(w, op);
    }
    w.endArray();
    w.name("segments").beginObject();
    w.field("segmentFiles", r.segments().segmentFiles());
    w.field("segmentBytes", r.segments().segmentBytes());
    w.field("journals", r.segments().journals());
    w.field("journalBytes", r.segments().journalBytes());
    w.field("segments", r.segments().segments());
    w.field("unreadable", r.segments().unreadable());
    w.endObject();
    strings(w, "problems", r.problems());
    w.endObject();
    return w.toString();
  }

  private static void log(JsonWriter w, Inspection.Log log) {
    w.beginObject();
    w.field("location", log.location());
    w.field("layout", log.layout());
    w.field("entries", log.entries());
    w.field("first", log.first());
    w.field("last", log.last());
    w.field("journals", log.journals());
    w.field("journalBytes", log.journalBytes());
    w.field("fileBytes", log.fileBytes());
    w.field("hedgeCopies", log.hedgeCopies());
    strings(w, "problems", log.problems());
    w.endObject();
  }

  private static void operator(JsonWriter w, Inspection.Operator op) {
    w.beginObject();
    w.field("id", op.id());
    w.field("name", op.name());
    w.name("partitions").beginArray();
    op.partitions().forEach(p -> w.value((long) p));
    w.endArray();
    strings(w, "storeNames", op.storeNames());
    strings(w, "metadataFiles", op.metadataFiles());
    w.name("schemaFiles").beginArray();
    for (Inspection.Schema s : op.schemas()) {
      w.beginObject();
      w.field("location", s.location());
      w.field("bytes", s.bytes());
      w.field("version", s.version());
      w.field("keySchema", s.keySchema());
      w.field("valueSchema", s.valueSchema());
      w.endObject();
    }
    w.endArray();
    w.name("stores").beginArray();
    for (Inspection.Store s : op.stores()) {
      store(w, s);
    }
    w.endArray();
    w.endObject();
  }

  private static void store(JsonWriter w, Inspection.Store s) {
    w.beginObject();
    w.field("partition", s.key().partition());
    w.field("storeName", s.key().storeNameOrDefault());
    w.field("provider", s.provider());
    w.field("location", s.location());
    w.field("newestVersion", s.newestVersion());
    w.field("oldestVersion", s.oldestVersion());
    w.field("recoveryVersion", s.recoveryVersion());
    w.field("oldestRecoverableVersion", s.oldestRecoverableVersion());
    w.field("baseVersion", s.baseVersion());
    w.field("recoverable", s.recoverable());
    w.field("problem", s.problem());
    w.name("files").beginObject();
    for (Map.Entry<String, StoreInventory.Count> e : s.files().entrySet()) {
      w.name(e.getKey()).beginObject();
      w.field("count", e.getValue().count());
      w.field("bytes", e.getValue().bytes());
      w.endObject();
    }
    w.endObject();
    w.endObject();
  }

  private static void strings(JsonWriter w, String name, List<String> values) {
    w.name(name).beginArray();
    values.forEach(w::value);
    w.endArray();
  }
}
