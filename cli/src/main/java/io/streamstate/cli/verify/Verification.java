package io.streamstate.cli.verify;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.LogEntries;
import io.streamstate.cli.checkpoint.RecoveryPoint;
import io.streamstate.cli.checkpoint.Segments;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.cli.checkpoint.SparkStoreFiles;
import io.streamstate.cli.checkpoint.StateDirectory;
import io.streamstate.cli.checkpoint.StoreInventory;
import io.streamstate.cli.json.Json;
import io.streamstate.cli.report.BatchRanges;
import io.streamstate.cli.report.Progress;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.recovery.LineageCheck;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import io.streamstate.spark.shared.checkpoint.LogJournalReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What {@code streamstate verify} checks: every file a restart of the query could read, each with
 * the reader that restart would use, and whether the restart can load what it needs.
 *
 * <ul>
 *   <li>The offset and commit logs: each live entry whole (journals replayed, hedge copies taken as
 *       our manager takes them), the offsets continuous from the first kept to the last, the
 *       commits a prefix of them.
 *   <li>Our stores: every changelog, snapshot manifest and SST read whole and verified by core's
 *       readers ({@link StoreFiles}, {@link FramedFile}); every segment and segment-journal record
 *       through core's catalog (each member read and checked against its index); then the lineage a
 *       restart loads, from the version the commit log names down to a usable snapshot or the empty
 *       state ({@link LineageCheck}, with every SST of the snapshots it tries read).
 *   <li>Spark's providers' stores: by file name only, that what a load of the version needs is
 *       there.
 * </ul>
 *
 * Each file that does not verify is a finding that says what a restart would do about it.
 */
public final class Verification {
  /** What a restart would do with one store. */
  public record StoreVerdict(
      StateDirectory.StoreKey key,
      String provider,
      long version,
      boolean recoverable,
      String how,
      String failure) {}

  /** The outcome. */
  public record Result(
      String checkpoint,
      List<Finding> findings,
      List<StoreVerdict> stores,
      List<String> logs,
      long files,
      long bytes,
      long recoveryVersion) {
    public long damaged() {
      return findings.stream().filter(f -> f.severity() == Finding.Severity.DAMAGED).count();
    }

    public long notes() {
      return findings.stream().filter(f -> f.severity() == Finding.Severity.NOTE).count();
    }

    public boolean clean() {
      return damaged() == 0 && stores.stream().allMatch(StoreVerdict::recoverable);
    }
  }

  private final Checkpoint cp;
  private final Progress progress;
  private final List<Finding> findings = new ArrayList<>();
  private final List<StoreVerdict> verdicts = new ArrayList<>();
  private final List<String> logs = new ArrayList<>();
  private long files;
  private long bytes;

  private Verification(Checkpoint cp, Progress progress) {
    this.cp = cp;
    this.progress = progress;
  }

  /** Checks the checkpoint. */
  public static Result run(Checkpoint cp, Progress progress) {
    return new Verification(cp, progress).run();
  }

  private Result run() {
    SparkLog offsets = cp.offsets();
    SparkLog commits = cp.commits();
    StateDirectory state = cp.state();
    Segments segments = cp.segments();
    Map<StateDirectory.StoreKey, StoreInventory.Store> stores = StoreInventory.of(state, segments);
    long total = offsets.entries().size() + commits.entries().size() + segments.segments().size();
    for (StoreInventory.Store s : stores.values()) {
      total += s.files().size();
    }
    progress.total(total);

    checkMetadata();
    checkLog(offsets, commits);
    checkLog(commits, offsets);
    checkContinuity(offsets, commits);
    RecoveryPoint recovery = RecoveryPoint.of(commits);

    Map<String, String> damagedSegments = checkSegments(segments);
    List<LineageCheck.Result> lineages = new ArrayList<>();
    for (StoreInventory.Store s : stores.values()) {
      switch (s.provider()) {
        case STREAMSTATE -> lineages.add(checkOurStore(s, segments, recovery));
        case HDFS_BACKED, ROCKSDB -> checkSparkStore(s, recovery);
        case UNKNOWN -> {
          for (FileInfo f : s.files()) {
            step(f);
          }
          verdicts.add(
              new StoreVerdict(
                  s.key(),
                  s.provider().label(),
                  recovery.version(),
                  recovery.version() == 0,
                  recovery.version() == 0 ? "nothing to load (version 0)" : null,
                  recovery.version() == 0
                      ? null
                      : "no state file of a provider this command knows"));
        }
      }
    }
    classifySegments(damagedSegments, lineages, segments);
    return new Result(cp.describe(), findings, verdicts, logs, files, bytes, recovery.version());
  }

  private void step(FileInfo f) {
    files++;
    bytes += f.length();
    progress.step(f.name());
  }

  private void damaged(String file, String problem, String recovery) {
    damaged(file, problem, recovery, null);
  }

  private void damaged(String file, String problem, String recovery, Finding.Target target) {
    findings.add(new Finding(Finding.Severity.DAMAGED, file, problem, recovery, target));
  }

  private void note(String file, String problem, String recovery) {
    note(file, problem, recovery, null);
  }

  private void note(String file, String problem, String recovery, Finding.Target target) {
    findings.add(new Finding(Finding.Severity.NOTE, file, problem, recovery, target));
  }

  // ---- metadata and logs ----

  private void checkMetadata() {
    files++;
    try {
      cp.queryId();
    } catch (MissingFileException e) {
      note(
          cp.location("metadata"),
          "missing",
          "Spark writes a new one at restart: the query gets a new id");
    } catch (Json.JsonException | StreamStateException e) {
      damaged(
          cp.location("metadata"),
          "does not hold Spark's query id: " + e.getMessage(),
          "Spark fails to start the query on it");
    }
  }

  private void checkLog(SparkLog log, SparkLog other) {
    boolean offsets = log.name().equals(SparkLog.OFFSETS);
    for (SparkLog.Entry e : log.entries().values()) {
      files++;
      bytes += e.bytes() == null ? 0 : e.bytes().length;
      progress.step(e.location());
      String where =
          e.location()
              + (e.source() == SparkLog.Source.JOURNAL ? " (batch " + e.batchId() + ")" : "");
      boolean newest = e.batchId() == log.last();
      // Only a plain file N is repair's to move away: a journal's torn record ends the journal.
      Finding.Target lastFile =
          newest && e.source() == SparkLog.Source.FILE && e.hasFile()
              ? new Finding.Target(Finding.Kind.LAST_LOG_ENTRY, log.name() + "/" + e.batchId(), 0)
              : null;
      if (!e.whole()) {
        damaged(
            where,
            "batch " + e.batchId() + " is " + e.problem(),
            newest
                ? "if its batch did not commit (a driver died while writing it), our checkpoint"
                    + " file manager sets it aside when the query restarts and Spark runs the batch"
                    + " again; Spark's own manager fails reading it (repair moves it away)"
                : "a restart reads the newest entries only, but Spark's purge and the state data"
                    + " source read this one and fail",
            lastFile);
        continue;
      }
      if (offsets) {
        try {
          LogEntries.parseOffset(e.text());
        } catch (Json.JsonException bad) {
          damaged(
              where,
              "not an offset log entry: " + bad.getMessage(),
              "Spark fails reading it",
              lastFile);
        }
      } else {
        try {
          LogEntries.parseCommit(e.text());
        } catch (Json.JsonException bad) {
          damaged(
              where,
              "not a commit log entry: " + bad.getMessage(),
              "Spark fails reading it",
              lastFile);
        }
      }
      if (e.source() == SparkLog.Source.HEDGE_COPY) {
        note(
            log.location() + "/" + e.batchId(),
            "torn at its name; its whole content is in its hedge copy " + e.location(),
            "our checkpoint file manager reads the copy; Spark's own manager would read the torn"
                + " entry and fail: keep RenameFreeCheckpointFileManager, and never delete the copy");
      }
    }
    for (LogJournalReader.JournalRead j : log.journals()) {
      if (j.stopReason() != null) {
        note(
            log.location() + "/" + j.name(),
            "ends with " + j.stopReason() + " after " + j.records() + " whole records",
            "the append in flight or the one that failed when its writer stopped: readers stop"
                + " there, the batch it held was not committed by it");
      }
    }
    for (FileInfo h : log.hedgeCopies()) {
      checkHedgeCopy(log, h);
    }
    for (SparkLog.Stray s : log.strays()) {
      note(s.location(), s.what(), "our manager ignores it; export-logs deletes it");
    }
  }

  /**
   * A hedge copy {@code .N.hedge} of the log: one that stands in for a torn {@code N} is noted with
   * its entry; any other is read by no one, or holds what {@code N} holds (sl5).
   */
  private void checkHedgeCopy(SparkLog log, FileInfo h) {
    String location = FramedFile.location(log.storage(), h.name());
    String path = log.name() + "/" + h.name();
    String copied = h.name().substring(1, h.name().length() - HedgeCopyFile.NAME_SUFFIX.length());
    SparkLog.Entry entry =
        copied.chars().allMatch(Character::isDigit) && !copied.isEmpty()
            ? log.entries().get(Long.parseLong(copied))
            : null;
    byte[] payload;
    try {
      payload = HedgeCopyFile.decode(Storages.readAll(log.storage(), h.name()), location);
    } catch (CorruptFileException torn) {
      note(
          location,
          withoutLocation(torn.getMessage(), location),
          "a torn hedge copy (its writer died): readers ignore it and read the entry itself",
          new Finding.Target(Finding.Kind.HEDGE_COPY_UNREAD, path, h.lastModifiedMillis()));
      return;
    } catch (MissingFileException gone) {
      return; // deleted since the listing
    }
    if (entry == null) {
      note(
          location,
          "the hedge copy of no live entry (batch " + copied + " is not in the log)",
          "readers take a copy only for an entry that exists: never read",
          new Finding.Target(Finding.Kind.HEDGE_COPY_UNREAD, path, h.lastModifiedMillis()));
    } else if (entry.source() == SparkLog.Source.FILE
        && entry.whole()
        && payload.length == entry.bytes().length
        && !java.util.Arrays.equals(payload, entry.bytes())) {
      // As long as N: the manager reads the copy (sl5), Spark's own manager reads N.
      note(
          location,
          "a hedge copy of the whole entry " + copied + " with other bytes of the same length",
          "our manager reads the copy, Spark's own manager the entry: compare them by hand");
    } else if (entry.source() == SparkLog.Source.FILE && entry.whole()) {
      boolean same = java.util.Arrays.equals(payload, entry.bytes());
      note(
          location,
          same
              ? "a hedge copy of the whole entry "
                  + copied
                  + ", the same bytes (a hedge whose"
                  + " clean-up did not run)"
              : "a hedge copy of "
                  + payload.length
                  + " bytes of the whole entry "
                  + copied
                  + " ("
                  + entry.bytes().length
                  + " bytes)",
          same
              ? "our manager reads the copy in place of the entry: the same bytes, harmless"
              : "readers read the entry, which is longer: the copy is never read",
          new Finding.Target(
              same ? Finding.Kind.HEDGE_COPY_SAME_AS_ENTRY : Finding.Kind.HEDGE_COPY_UNREAD,
              path,
              h.lastModifiedMillis()));
    }
  }

  private void checkContinuity(SparkLog offsets, SparkLog commits) {
    Long first = offsets.first();
    Long last = offsets.last();
    if (first == null) {
      logs.add("offsets: no entries (the query never planned a batch)");
    } else {
      List<Long> gaps = new ArrayList<>();
      for (long b = first; b <= last; b++) {
        if (!offsets.entries().containsKey(b)) {
          gaps.add(b);
        }
      }
      if (!gaps.isEmpty()) {
        damaged(
            offsets.location(),
            "not continuous: no entry of batch"
                + (gaps.size() == 1 ? " " : "es ")
                + BatchRanges.of(gaps),
            "a restart reads the newest entries and goes on, but the log is not what Spark wrote:"
                + " entries were deleted by hand or lost");
      }
      logs.add(
          "offsets: "
              + offsets.entries().size()
              + " entries, batches "
              + first
              + "-"
              + last
              + " ("
              + offsets.layout()
              + ")"
              + (gaps.isEmpty() ? ", continuous" : ", NOT continuous"));
    }
    Long lastCommit = commits.last();
    if (lastCommit == null) {
      logs.add("commits: no entries (no batch committed)");
      return;
    }
    List<Long> without = new ArrayList<>();
    for (long b : commits.entries().keySet()) {
      if (first != null && b >= first && !offsets.entries().containsKey(b)) {
        without.add(b);
      }
    }
    if (first == null || lastCommit > last) {
      damaged(
          commits.location(),
          "batch "
              + lastCommit
              + " is committed but the offsets log "
              + (first == null ? "is empty" : "ends at batch " + last),
          "Spark cannot resume: the commit log is ahead of the offset log");
    } else if (!without.isEmpty()) {
      damaged(
          commits.location(),
          "committed batches without an offset entry: " + BatchRanges.of(without),
          "the commit log is not a prefix of the offset log");
    }
    if (last != null && last > lastCommit + 1) {
      damaged(
          offsets.location(),
          "batches "
              + (lastCommit + 2)
              + "-"
              + last
              + " are planned beyond batch "
              + (lastCommit + 1)
              + ", the only one a query plans before its last commit",
          "Spark resumes at the newest offset entry: the batches between were never run");
    }
    logs.add(
        "commits: "
            + commits.entries().size()
            + " entries, batches "
            + commits.first()
            + "-"
            + lastCommit
            + " ("
            + commits.layout()
            + ")"
            + (without.isEmpty() && (last == null || lastCommit <= last)
                ? ", a prefix of the offsets"
                : ""));
  }

  // ---- segments ----

  /** Every segment and journal record read whole; returns the damaged ones and why. */
  private Map<String, String> checkSegments(Segments segments) {
    Map<String, String> damaged = new LinkedHashMap<>();
    Map<String, Long> fileLengths = new HashMap<>();
    for (FileInfo f : segments.files()) {
      fileLengths.put(f.name(), f.length());
      bytes += f.length();
    }
    for (Segments.Listed s : segments.segments()) {
      files++;
      progress.step(s.name());
      if (s.index() == null) {
        damaged.put(s.name(), s.unreadable());
        continue;
      }
      for (Segment.IndexEntry e : s.index().entries()) {
        try {
          segments.catalog().member(s.name(), e.storePrefix(), e.commitId());
        } catch (CorruptFileException | MissingFileException | UnsupportedException bad) {
          damaged.put(s.name(), bad.getMessage());
          break;
        }
      }
    }
    return damaged;
  }

  private void classifySegments(
      Map<String, String> damagedSegments, List<LineageCheck.Result> lineages, Segments segments) {
    for (Map.Entry<String, String> d : damagedSegments.entrySet()) {
      String location = segments.location(d.getKey());
      String needed = null;
      for (LineageCheck.Result r : lineages) {
        if (!r.loadable() && r.failure().getMessage().contains(location)) {
          needed = r.store();
          break;
        }
      }
      damaged(
          location,
          withoutLocation(d.getValue(), location),
          needed != null
              ? "needed by the lineage "
                  + needed
                  + " loads at restart: recovery fails (see the store below)"
              : "recovery treats it as absent: none of the lineages a restart loads needs a"
                  + " commit it holds");
    }
  }

  // ---- our stores ----

  private LineageCheck.Result checkOurStore(
      StoreInventory.Store s, Segments segments, RecoveryPoint recovery) {
    Storage storage = cp.stateStorage();
    StoreLayout layout = new StoreLayout(s.key().prefix());
    Map<String, String> damagedFiles = new LinkedHashMap<>();
    Map<String, FileInfo> byName = new HashMap<>();
    Map<String, Long> sstPayloads = new HashMap<>();
    Map<StoreLayout.SnapshotName, SnapshotManifest> manifests = new LinkedHashMap<>();
    for (FileInfo f : s.files()) {
      byName.put(f.name(), f);
    }
    // Every file, whole, by core's readers.
    for (FileInfo f : s.files()) {
      step(f);
      String rel = s.relative(f);
      String location = FramedFile.location(storage, f.name());
      try {
        StoreLayout.ChangelogName c = StoreLayout.parseChangelog(f.name());
        StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(f.name());
        StoreLayout.SstName t = StoreLayout.parseSst(f.name());
        if (c != null && rel.startsWith(StoreLayout.CHANGELOG_DIR)) {
          StoreFiles.readChangelog(storage, c);
        } else if (n != null && rel.startsWith(StoreLayout.SNAPSHOT_DIR)) {
          manifests.put(n, StoreFiles.readManifest(storage, n));
        } else if (t != null && rel.startsWith(StoreLayout.SST_DIR)) {
          sstPayloads.put(
              f.name(), FramedFile.verifiedPayloadLength(storage, f.name(), FileKind.SST));
        }
      } catch (CorruptFileException | MissingFileException | UnsupportedException e) {
        damagedFiles.put(f.name(), withoutLocation(e.getMessage(), location));
      }
    }
    // What every manifest names must be there, whole, with its length.
    Map<String, List<StoreLayout.SnapshotName>> referencedBy = new HashMap<>();
    for (Map.Entry<StoreLayout.SnapshotName, SnapshotManifest> m : manifests.entrySet()) {
      for (SnapshotManifest.Entry e : m.getValue().files()) {
        if (!e.isShared()) {
          continue;
        }
        referencedBy.computeIfAbsent(e.sharedName(), x -> new ArrayList<>()).add(m.getKey());
        Long payload = sstPayloads.get(e.sharedName());
        String sst = FramedFile.location(storage, e.sharedName());
        if (!byName.containsKey(e.sharedName())) {
          damagedFiles.putIfAbsent(m.getKey().name(), "names SST " + sst + ", which is missing");
        } else if (payload != null && payload != e.length()) {
          damagedFiles.putIfAbsent(
              e.sharedName(),
              "holds "
                  + payload
                  + " bytes but snapshot "
                  + m.getKey().version()
                  + " lists "
                  + e.length());
        }
      }
    }
    // The lineage a restart loads.
    long version = recovery.version();
    LineageCheck.Result lineage =
        new LineageCheck(
                s.key().display(),
                storage,
                layout,
                segments.catalog(),
                LineageCheck.SnapshotChecks.FULL)
            .check(version, recovery.commitOf(s.key()));
    for (Map.Entry<String, String> d : damagedFiles.entrySet()) {
      String location = FramedFile.location(storage, d.getKey());
      FileInfo f = byName.get(d.getKey());
      String age = f == null ? "" : " (modified " + age(f.lastModifiedMillis()) + " ago)";
      Consequence c = consequence(d.getKey(), location, lineage, version, referencedBy);
      damaged(
          location,
          d.getValue() + age,
          c.text(),
          c.unreadChangelog()
              ? new Finding.Target(
                  Finding.Kind.UNREAD_CHANGELOG,
                  "state/" + d.getKey(),
                  f == null ? 0 : f.lastModifiedMillis())
              : null);
    }
    verdicts.add(
        new StoreVerdict(
            s.key(),
            s.provider().label(),
            version,
            lineage.loadable(),
            lineage.loadable() ? how(lineage) : null,
            lineage.loadable() ? null : lineage.failure().getMessage()));
    return lineage;
  }

  private static String how(LineageCheck.Result r) {
    int commits = 0;
    for (LineageCheck.Commit c : r.lineage()) {
      if (c.version() > r.baseVersion()) {
        commits++;
      }
    }
    if (r.version() == 0) {
      return "nothing to load (version 0)";
    }
    String base = r.baseVersion() == 0 ? "the empty state" : "snapshot " + r.baseVersion();
    return "loads " + base + " + " + commits + (commits == 1 ? " commit" : " commits");
  }

  /**
   * What a restart does about a damaged store file.
   *
   * @param unreadChangelog it is a changelog no restart reads
   */
  private record Consequence(String text, boolean unreadChangelog) {
    static Consequence of(String text) {
      return new Consequence(text, false);
    }

    static Consequence unread(String text) {
      return new Consequence(text, true);
    }
  }

  /** What a restart does about the damaged store file {@code name}. */
  private static Consequence consequence(
      String name,
      String location,
      LineageCheck.Result r,
      long version,
      Map<String, List<StoreLayout.SnapshotName>> referencedBy) {
    StoreLayout.SnapshotName s = StoreLayout.parseSnapshot(name);
    if (s != null) {
      return Consequence.of(snapshotConsequence(s, r, version));
    }
    if (!r.loadable() && r.failure().getMessage().contains(location)) {
      return Consequence.of(
          "needed by the lineage of version "
              + version
              + " (which a restart loads): recovery fails");
    }
    StoreLayout.ChangelogName c = StoreLayout.parseChangelog(name);
    if (c != null) {
      if (c.version() > version) {
        return Consequence.unread(
            "newer than version "
                + version
                + ", which a restart loads (a batch that did not commit wrote it): recovery"
                + " never reads it, and a load of its version treats it as absent");
      }
      if (r.onLineage(c.version(), c.commitId())) {
        if (r.loadable() && c.version() <= r.baseVersion()) {
          return Consequence.unread(
              "on the lineage but at or below its base (snapshot "
                  + r.baseVersion()
                  + "): recovery does not read it; retention deletes it");
        }
        return Consequence.unread(
            "a copy of a commit the lineage needs: recovery reads its other copy");
      }
      if (c.version() == version) {
        return Consequence.unread(
            "another commit of version "
                + version
                + " than the one a restart picks: recovery treats it as absent");
      }
      return Consequence.unread(
          "not on the lineage a restart follows (a retried or re-run commit): recovery never"
              + " reads it; retention deletes it");
    }
    List<StoreLayout.SnapshotName> users = referencedBy.getOrDefault(name, List.of());
    if (users.isEmpty()) {
      return Consequence.of(
          "referenced by no snapshot: recovery never reads it; retention deletes it after the"
              + " grace period");
    }
    Set<String> consequences = new TreeSet<>();
    for (StoreLayout.SnapshotName u : users) {
      consequences.add("snapshot " + u.version() + ": " + snapshotConsequence(u, r, version));
    }
    return Consequence.of(
        "makes the snapshots that name it unusable; " + String.join("; ", consequences));
  }

  private static String snapshotConsequence(
      StoreLayout.SnapshotName s, LineageCheck.Result r, long version) {
    if (s.version() > version) {
      return "newer than version " + version + ", which a restart loads: never read by it";
    }
    if (!r.onLineage(s.version(), s.commitId())) {
      return "not on the lineage a restart follows: never read by it";
    }
    if (!r.loadable()) {
      return "an unusable snapshot on the lineage: recovery skips it and finds no other base:"
          + " recovery fails";
    }
    if (s.version() > r.baseVersion()) {
      return "an unusable snapshot on the lineage: recovery skips it and loads "
          + (r.baseVersion() == 0 ? "from the empty state" : "snapshot " + r.baseVersion())
          + " instead";
    }
    return "below the base recovery uses (snapshot " + r.baseVersion() + "): not read";
  }

  // ---- Spark's providers ----

  private void checkSparkStore(StoreInventory.Store s, RecoveryPoint recovery) {
    List<FileInfo> relative = new ArrayList<>();
    for (FileInfo f : s.files()) {
      step(f);
      relative.add(new FileInfo(s.relative(f), f.length(), f.lastModifiedMillis()));
    }
    long version = recovery.version();
    SparkStoreFiles.Versions versions = SparkStoreFiles.versions(s.provider(), relative);
    SparkStoreFiles.Lineage lineage = versions.lineageOf(version);
    String increment =
        s.provider() == StateDirectory.Provider.HDFS_BACKED ? ".delta" : ".changelog";
    if (!lineage.loadable()) {
      String missing =
          FramedFile.location(cp.stateStorage(), s.key().prefix() + lineage.missing() + increment);
      damaged(
          missing,
          "missing (by name: no file of version " + lineage.missing() + ")",
          "needed to load version " + version + " (which a restart loads): recovery fails");
    }
    verdicts.add(
        new StoreVerdict(
            s.key(),
            s.provider().label(),
            version,
            lineage.loadable(),
            lineage.loadable()
                ? "by name: "
                    + (lineage.base() == 0
                        ? "the empty state"
                        : (s.provider() == StateDirectory.Provider.HDFS_BACKED
                                ? "snapshot "
                                : "zip ")
                            + lineage.base())
                    + " + "
                    + (version - lineage.base())
                    + (increment.equals(".delta") ? " deltas" : " changelogs")
                : null,
            lineage.loadable()
                ? null
                : "no "
                    + lineage.missing()
                    + increment
                    + " to load version "
                    + version
                    + " by name"));
  }

  // ---- helpers ----

  /** {@code message} without the file's location at its start (the finding names the file). */
  static String withoutLocation(String message, String location) {
    if (message != null && message.startsWith(location)) {
      return message.substring(location.length()).trim();
    }
    return message;
  }

  private static String age(long modifiedMillis) {
    long s = Math.max(0, (System.currentTimeMillis() - modifiedMillis) / 1000);
    if (s < 120) {
      return s + " s";
    }
    if (s < 7200) {
      return s / 60 + " min";
    }
    return s / 3600 + " h";
  }
}
