package io.streamstate.spark.shared;

import java.util.List;

/**
 * docs/configuration.md, written from {@link StreamStateKeys}: the reference of every key. {@code
 * ConfigReferenceTest} fails when the committed file differs from {@link #markdown()} and prints
 * the command that rewrites it.
 */
public final class ConfigReference {
  private ConfigReference() {}

  /** The whole of docs/configuration.md. */
  public static String markdown() {
    StringBuilder md = new StringBuilder();
    md.append("# Configuration reference\n\n")
        .append(
            "<!-- Generated from spark-shared's StreamStateKeys by ConfigReferenceTest: do not"
                + " edit by hand. -->\n\n")
        .append(
            "Set these as SQL confs (`spark.conf.set`, `--conf`, `spark-defaults.conf`) under `"
                + StreamStateSettings.PREFIX
                + "`: Spark hands a state store provider only the confs under"
                + " `spark.sql.streaming.stateStore.`, and copies every SQL conf into the Hadoop"
                + " configuration of checkpoint file managers and file-sink tasks.\n\n")
        .append(
            "Spark's `SET -v` lists the keys of the first table, each with its meaning, type,"
                + " scope and default (computed defaults show as `<undefined>`, their rule in the"
                + " meaning), once our provider, checkpoint file manager or metrics plugin has been"
                + " loaded in the JVM (in the driver: after the first query on our provider or"
                + " checkpoint file manager, or from the start with the metrics plugin). They are"
                + " registered as string SQL confs, on every Spark line: Spark takes any value for"
                + " them as before, and only our reader checks it; an unset key keeps the default"
                + " our reader computes.\n\n")
        .append("How values are read, as Spark reads its own:\n\n")
        .append(
            "- **size**: bytes, or a number with Spark's binary suffixes `b`, `k`/`kb`,"
                + " `m`/`mb`, `g`/`gb`, `t`/`tb`, `p`/`pb` (`256m` = 268435456);"
                + " no fractions.\n")
        .append(
            "- **duration**: milliseconds, or a number with Spark's suffixes `us`, `ms`, `s`,"
                + " `m`/`min`, `h`, `d` (`2min` = 120000). A key ending in `Ms` keeps"
                + " milliseconds for a bare number, one ending in `Bytes` bytes.\n")
        .append(
            "- **boolean**: `true` or `false` only (any case, spaces trimmed); anything else"
                + " (`yes`, `1`, `ture`) is refused, naming the key.\n")
        .append(
            "- **count**, **decimal**: a number; `_` may group digits (`1_000`). **choice**:"
                + " one of the values the key names (any case).\n")
        .append(
            "- An invalid value fails the store (or checkpoint file manager) that reads it, with"
                + " the key, the value and what was expected in the message.\n\n")
        .append("Who shares one value (scope):\n\n")
        .append(
            "- **query**: each store, checkpoint file manager or file-sink task reads its own.\n")
        .append(
            "- **JVM**: one value per executor JVM, fixed by the first store opened there. A later"
                + " store asking for another value gets the one in force; for `memoryCapBytes` the"
                + " JVM logs once, at WARN, the key, the value in force and the value ignored:"
                + " `... is one per JVM and 268435456 is in force (the first store opened here"
                + " fixed it): this store's 1073741824 is ignored`. The `hedge.*` keys are not"
                + " process-wide: stores with other hedge settings get a hedger of their own.\n")
        .append(
            "- **log**: one value per Spark log (offsets, commits), fixed by the first checkpoint"
                + " file manager of the driver that opens the log's journal.\n\n")
        .append(
            "A key under `"
                + StreamStateSettings.PREFIX
                + "` that is none of these is ignored, and logged once per JVM at WARN with the"
                + " key most likely meant: `Unknown configuration key "
                + StreamStateSettings.PREFIX
                + "logJurnal.enabled (ignored); did you mean "
                + StreamStateSettings.LOG_JOURNAL
                + "? Every key: docs/configuration.md`\n\n")
        .append("## Spark SQL keys\n\n");
    table(md, StreamStateKeys.sqlKeys());
    md.append("\n## Hadoop keys\n\n")
        .append(
            "Read from the Hadoop configuration (`spark.hadoop.` + key in Spark, `--conf` with"
                + " the `streamstate` command).\n\n");
    table(md, StreamStateKeys.hadoopKeys());
    md.append("\n## Spark's settings\n\n")
        .append(
            "Honoured: `spark.sql.streaming.minBatchesToRetain` (retention, default 100),"
                + " `spark.sql.streaming.stateStore.minDeltasForSnapshot` (default of"
                + " `snapshotInterval`), `spark.sql.streaming.stateStore.maintenanceInterval`"
                + " (how often maintenance runs),"
                + " `spark.sql.streaming.stateStore.commitValidation.enabled`,"
                + " `spark.sql.streaming.stateStore.formatValidation.enabled`.\n\n")
        .append(
            "Refused by name (spark/README.md, \"Limitations\"):"
                + " `spark.sql.streaming.stateStore.encodingFormat=avro`,"
                + " `spark.sql.streaming.stateStore.rowChecksum.enabled=true`.\n\n")
        .append(
            "Not honoured: `"
                + ConfigWarnings.SPARK_COMPRESSION_CODEC
                + "` (default `lz4`; `lzf`, `snappy`, `zstd` or a codec class). It is the codec of"
                + " Spark's own providers' delta, snapshot and changelog files. Our changelogs"
                + " and segments use `changelog.codec` (`lz4`, the default, `deflate` or `none`) whatever"
                + " Spark's key says (Spark sets its key in every query's offset log), and"
                + " our snapshots carry RocksDB's SST files, whose blocks are LZ4 whatever the"
                + " setting. Spark pins the key in each query's offset log and sets it again on"
                + " restart, so its presence does not prove a user set it: a value other than"
                + " `lz4` is logged once per JVM at INFO, naming `changelog.codec`. A checkpoint"
                + " moved from Spark's providers with `zstd` (`streamstate convert`) keeps"
                + " working.\n");
    return md.toString();
  }

  private static void table(StringBuilder md, List<ConfigKey> keys) {
    md.append("| key | type | default | scope | meaning |\n|---|---|---|---|---|\n");
    for (ConfigKey key : keys) {
      String type =
          key.type() == ConfigKey.Type.CHOICE
              ? "`" + String.join("`, `", key.choices()) + "`"
              : key.type().label();
      String shown =
          key.defaultDoc().equals(key.defaultValue())
              ? "`" + key.defaultValue() + "`"
              : key.defaultDoc();
      md.append("| `")
          .append(key.name())
          .append("` | ")
          .append(type)
          .append(" | ")
          .append(shown)
          .append(" | ")
          .append(key.scope().label())
          .append(" | ")
          .append(key.doc())
          .append(" |\n");
    }
  }
}
