package io.streamstate.cli.inspect;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.LogEntries;
import io.streamstate.cli.checkpoint.RecoveryPoint;
import io.streamstate.cli.checkpoint.Segments;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.cli.checkpoint.SparkSchemaFile;
import io.streamstate.cli.checkpoint.SparkStoreFiles;
import io.streamstate.cli.checkpoint.StateDirectory;
import io.streamstate.cli.checkpoint.StoreInventory;
import io.streamstate.cli.json.Json;
import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.recovery.LineageCheck;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storages;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What {@code streamstate inspect} reports of a checkpoint, gathered without writing anything: the
 * query id, the two logs, the confs pinned in the newest offset entry, and per operator its
 * metadata, schemas and stores, each store with its files by kind and its versions (for ours, the
 * lineage a restart would load, found by core's {@link LineageCheck} reading manifests but no SST;
 * for Spark's providers, by file name).
 */
public final class Inspection {
  /** One of Spark's logs. */
  public record Log(
      String location,
      String layout,
      int entries,
      Long first,
      Long last,
      int journals,
      long journalBytes,
      long fileBytes,
      int hedgeCopies,
      List<String> problems) {}

  /** A schema file of an operator, decoded where Spark's format allows it without Spark. */
  public record Schema(
      String location, long bytes, String version, String keySchema, String valueSchema) {}

  /** One store. */
  public record Store(
      StateDirectory.StoreKey key,
      String provider,
      String location,
      Map<String, StoreInventory.Count> files,
      Long newestVersion,
      Long oldestVersion,
      long recoveryVersion,
      Long oldestRecoverableVersion,
      Long baseVersion,
      boolean recoverable,
      String problem) {}

  /** One stateful operator. */
  public record Operator(
      long id,
      String name,
      List<String> metadataFiles,
      List<Schema> schemas,
      List<Integer> partitions,
      List<String> storeNames,
      List<Store> stores) {}

  /** Our group commits under {@code state/_segments/}. */
  public record SegmentTotals(
      long segmentFiles,
      long segmentBytes,
      long journals,
      long journalBytes,
      long segments,
      long unreadable) {}

  /** The whole report. */
  public record Report(
      String checkpoint,
      String queryId,
      Log offsets,
      Log commits,
      Long lastBatch,
      Long lastCommittedBatch,
      long recoveryVersion,
      Map<String, String> confs,
      String providerClass,
      String checkpointFormatVersion,
      Integer shufflePartitions,
      List<Operator> operators,
      SegmentTotals segments,
      List<String> problems) {}

  private Inspection() {}

  /**
   * Gathers the report.
   *
   * @param progress told of each store as it is looked at (for a progress bar)
   */
  public static Report of(Checkpoint cp, Consumer<String> progress) {
    List<String> problems = new ArrayList<>();
    MigrationMarker.read(cp.root())
        .ifPresent(source -> problems.add(MigrationMarker.incomplete(cp.describe(), source)));
    String queryId = null;
    try {
      queryId = cp.queryId();
    } catch (StreamStateException | Json.JsonException e) {
      problems.add("query id: " + e.getMessage());
    }
    SparkLog offsets = cp.offsets();
    SparkLog commits = cp.commits();
    Map<String, String> confs = Map.of();
    for (SparkLog.Entry e : offsets.entries().descendingMap().values()) {
      if (e.whole()) {
        try {
          confs = LogEntries.parseOffset(e.text()).conf();
        } catch (Json.JsonException bad) {
          problems.add(e.location() + ": " + bad.getMessage());
        }
        break;
      }
    }
    RecoveryPoint recovery = RecoveryPoint.of(commits);
    StateDirectory state = cp.state();
    Segments segments = cp.segments();
    Map<StateDirectory.StoreKey, StoreInventory.Store> stores = StoreInventory.of(state, segments);
    List<Operator> operators = new ArrayList<>();
    java.util.Set<Long> operatorIds = new java.util.TreeSet<>(state.operators().keySet());
    stores.keySet().forEach(k -> operatorIds.add(k.operator()));
    for (long op : operatorIds) {
      StateDirectory.OperatorDir dir = state.operators().get(op);
      List<Store> opStores = new ArrayList<>();
      java.util.Set<Integer> partitions = new java.util.TreeSet<>();
      java.util.Set<String> names = new java.util.TreeSet<>();
      for (StoreInventory.Store s : stores.values()) {
        if (s.key().operator() != op) {
          continue;
        }
        progress.accept(s.key().display());
        partitions.add(s.key().partition());
        names.add(s.key().storeNameOrDefault());
        opStores.add(store(cp, s, recovery, segments));
      }
      List<String> metadataFiles = new ArrayList<>();
      List<Schema> schemas = new ArrayList<>();
      String name = null;
      if (dir != null) {
        for (FileInfo f : dir.metadata()) {
          if (isChecksum(f.name())) {
            continue;
          }
          metadataFiles.add(FramedFile.location(cp.stateStorage(), f.name()));
          if (f.name().endsWith("/_metadata/metadata") && name == null) {
            name = operatorName(cp, f);
          }
        }
        for (FileInfo f : dir.schemas()) {
          if (!isChecksum(f.name())) {
            schemas.add(schema(cp, f));
          }
        }
      }
      operators.add(
          new Operator(
              op,
              name,
              metadataFiles,
              schemas,
              new ArrayList<>(partitions),
              new ArrayList<>(names),
              opStores));
    }
    Map<String, long[]> totals = segments.fileTotals();
    long unreadable = segments.segments().stream().filter(l -> l.index() == null).count();
    SegmentTotals segmentTotals =
        new SegmentTotals(
            totals.get("segments")[0],
            totals.get("segments")[1],
            totals.get("journals")[0],
            totals.get("journals")[1],
            segments.segments().size(),
            unreadable);
    String shuffle = confs.get(LogEntries.SHUFFLE_PARTITIONS);
    Integer shufflePartitions = null;
    try {
      shufflePartitions = shuffle == null ? null : Integer.valueOf(shuffle);
    } catch (NumberFormatException e) {
      problems.add("pinned " + LogEntries.SHUFFLE_PARTITIONS + " is not a number: " + shuffle);
    }
    return new Report(
        cp.describe(),
        queryId,
        log(offsets),
        log(commits),
        offsets.last(),
        recovery.lastCommittedBatch(),
        recovery.version(),
        confs,
        confs.get(LogEntries.PROVIDER_CLASS),
        confs.getOrDefault(LogEntries.CHECKPOINT_FORMAT_VERSION, recovery.formatVersion()),
        shufflePartitions,
        operators,
        segmentTotals,
        problems);
  }

  private static boolean isChecksum(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    return base.startsWith(".") && base.endsWith(".crc");
  }

  private static Log log(SparkLog log) {
    List<String> problems = new ArrayList<>();
    for (SparkLog.Entry e : log.entries().values()) {
      if (!e.whole()) {
        problems.add(e.location() + ": " + e.problem());
      }
    }
    for (SparkLog.Stray s : log.strays()) {
      problems.add(s.location() + ": " + s.what());
    }
    return new Log(
        log.location(),
        log.layout(),
        log.entries().size(),
        log.first(),
        log.last(),
        log.journals().size(),
        log.journalBytes(),
        log.fileBytes(),
        log.hedgeCopies().size(),
        problems);
  }

  private static String operatorName(Checkpoint cp, FileInfo f) {
    try {
      String text =
          new String(Storages.readAll(cp.stateStorage(), f.name()), StandardCharsets.UTF_8);
      String[] lines = text.split("\n");
      if (lines.length < 2) {
        return null;
      }
      Object info = Json.parseObject(lines[1]).get("operatorInfo");
      if (info instanceof Map<?, ?> m && m.get("operatorName") instanceof String name) {
        return name;
      }
    } catch (RuntimeException e) {
      return null;
    }
    return null;
  }

  private static Schema schema(Checkpoint cp, FileInfo f) {
    String location = FramedFile.location(cp.stateStorage(), f.name());
    if (f.length() > (4 << 20)) {
      return new Schema(location, f.length(), null, null, null);
    }
    SparkSchemaFile.Schema decoded;
    try {
      decoded = SparkSchemaFile.decode(Storages.readAll(cp.stateStorage(), f.name()));
    } catch (StreamStateException e) {
      decoded = null;
    }
    return decoded == null
        ? new Schema(location, f.length(), null, null, null)
        : new Schema(
            location, f.length(), decoded.version(), decoded.keySchema(), decoded.valueSchema());
  }

  /**
   * One store as {@link #of} reports it: its versions and whether a restart loads it, by the same
   * rules (for {@code dump}, which reads one store).
   */
  public static Store storeOf(Checkpoint cp, StoreInventory.Store s, RecoveryPoint recovery) {
    return store(cp, s, recovery, cp.segments());
  }

  private static Store store(
      Checkpoint cp, StoreInventory.Store s, RecoveryPoint recovery, Segments segments) {
    String location = FramedFile.location(cp.stateStorage(), s.key().prefix());
    long recoveryVersion = recovery.version();
    switch (s.provider()) {
      case STREAMSTATE -> {
        Long newest = null;
        Long oldest = null;
        for (FileInfo f : s.files()) {
          String rel = s.relative(f);
          StoreLayout.ChangelogName c = StoreLayout.parseChangelog(rel);
          StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(rel);
          long v = c != null ? c.version() : n != null ? n.version() : -1;
          if (v >= 0) {
            newest = newest == null ? v : Math.max(newest, v);
            oldest = oldest == null ? v : Math.min(oldest, v);
          }
        }
        for (Segments.Member m : s.members()) {
          newest = newest == null ? m.version() : Math.max(newest, m.version());
          oldest = oldest == null ? m.version() : Math.min(oldest, m.version());
        }
        LineageCheck.Result lineage =
            new LineageCheck(
                    s.key().display(),
                    cp.stateStorage(),
                    new StoreLayout(s.key().prefix()),
                    segments.catalog(),
                    LineageCheck.SnapshotChecks.MANIFESTS)
                .check(recoveryVersion, recovery.commitOf(s.key()));
        return new Store(
            s.key(),
            s.provider().label(),
            location,
            s.counts(),
            newest,
            oldest,
            recoveryVersion,
            lineage.loadable() ? lineage.oldestLoadable() : null,
            lineage.loadable() ? lineage.baseVersion() : null,
            lineage.loadable(),
            lineage.loadable() ? null : oneLine(lineage.failure().getMessage()));
      }
      case HDFS_BACKED, ROCKSDB -> {
        List<FileInfo> relative = new ArrayList<>();
        for (FileInfo f : s.files()) {
          relative.add(new FileInfo(s.relative(f), f.length(), f.lastModifiedMillis()));
        }
        SparkStoreFiles.Versions versions = SparkStoreFiles.versions(s.provider(), relative);
        SparkStoreFiles.Lineage lineage = versions.lineageOf(recoveryVersion);
        return new Store(
            s.key(),
            s.provider().label(),
            location,
            s.counts(),
            versions.newest() < 0 ? null : versions.newest(),
            versions.oldest() < 0 ? null : versions.oldest(),
            recoveryVersion,
            lineage.loadable() ? versions.oldestLoadable(recoveryVersion) : null,
            lineage.loadable() ? lineage.base() : null,
            lineage.loadable(),
            lineage.loadable()
                ? null
                : "no file of version "
                    + lineage.missing()
                    + " ("
                    + (s.provider() == StateDirectory.Provider.HDFS_BACKED
                        ? lineage.missing() + ".delta"
                        : lineage.missing() + ".changelog")
                    + ") to load version "
                    + recoveryVersion
                    + " by name");
      }
      default -> {
        return new Store(
            s.key(),
            s.provider().label(),
            location,
            s.counts(),
            null,
            null,
            recoveryVersion,
            null,
            null,
            recoveryVersion == 0,
            recoveryVersion == 0 ? null : "no state file of a provider this command knows");
      }
    }
  }

  static String oneLine(String s) {
    return s == null ? null : s.replace('\n', ' ');
  }
}
