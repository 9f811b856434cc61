package io.streamstate.cli.checkpoint;

import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Our group commits under {@code state/_segments/}, as core's {@link SegmentCatalog} reads them:
 * segment files and the records of segment journals (each record one segment, named {@code
 * <journal>@<offset>}), their indexes, and so the commits each store has in them.
 */
public final class Segments {
  /** One store's commit in a segment. */
  public record Member(
      String segment, long version, long commitId, long parentId, int length, boolean inJournal) {}

  /** A segment (file or journal record) and its index, or why the index does not read. */
  public record Listed(String name, long version, Segment.Index index, String unreadable) {
    public boolean inJournal() {
      return SegmentCatalog.isJournalRecord(name);
    }
  }

  private final Storage storage;
  private final SegmentCatalog catalog;
  private final List<Listed> segments;
  private final Map<String, List<Member>> byPrefix;
  private final List<FileInfo> files;

  private Segments(
      Storage storage,
      SegmentCatalog catalog,
      List<Listed> segments,
      Map<String, List<Member>> byPrefix,
      List<FileInfo> files) {
    this.storage = storage;
    this.catalog = catalog;
    this.segments = segments;
    this.byPrefix = byPrefix;
    this.files = files;
  }

  /**
   * Lists the segments of the state root {@code storage} and reads each index (segment journals are
   * read record by record up to their first incomplete record, as loads read them).
   *
   * @param files the files under {@code _segments/}, as listed
   */
  static Segments read(Storage storage, SegmentCatalog catalog, List<FileInfo> files) {
    List<Listed> segments = new ArrayList<>();
    Map<String, List<Member>> byPrefix = new TreeMap<>();
    for (List<SegmentCatalog.SegmentFile> ofVersion : catalog.list(files).values()) {
      for (SegmentCatalog.SegmentFile f : ofVersion) {
        String name = f.name().name();
        Segment.Index index;
        try {
          index = catalog.index(name);
        } catch (CorruptFileException | MissingFileException e) {
          segments.add(new Listed(name, f.name().version(), null, e.getMessage()));
          continue;
        }
        segments.add(new Listed(name, f.name().version(), index, null));
        for (Segment.IndexEntry e : index.entries()) {
          byPrefix
              .computeIfAbsent(e.storePrefix(), p -> new ArrayList<>())
              .add(
                  new Member(
                      name,
                      index.version(),
                      e.commitId(),
                      e.parentId(),
                      e.length(),
                      SegmentCatalog.isJournalRecord(name)));
        }
      }
    }
    return new Segments(storage, catalog, segments, byPrefix, files);
  }

  /** The catalog the segments were read through. */
  public SegmentCatalog catalog() {
    return catalog;
  }

  /** Every segment found (files and journal records), oldest version first. */
  public List<Listed> segments() {
    return segments;
  }

  /** The commits of the store with prefix {@code prefix} found in segments. */
  public List<Member> membersOf(String prefix) {
    return byPrefix.getOrDefault(prefix, List.of());
  }

  /** The store prefixes segments hold commits of. */
  public java.util.Set<String> prefixes() {
    return byPrefix.keySet();
  }

  /** The files under {@code _segments/}: segment files and journals. */
  public List<FileInfo> files() {
    return files;
  }

  /** Segment files and journals, counted apart: file count and bytes of each. */
  public Map<String, long[]> fileTotals() {
    Map<String, long[]> totals = new LinkedHashMap<>();
    totals.put("segments", new long[2]);
    totals.put("journals", new long[2]);
    for (FileInfo f : files) {
      long[] t = totals.get(f.name().endsWith(".journal") ? "journals" : "segments");
      t[0]++;
      t[1] += f.length();
    }
    return totals;
  }

  /** How messages name a segment file or journal record. */
  public String location(String segment) {
    if (SegmentCatalog.isJournalRecord(segment)) {
      String journal = SegmentCatalog.journalOf(segment);
      return FramedFile.location(storage, journal)
          + " (record at offset "
          + Long.parseLong(segment.substring(segment.lastIndexOf('@') + 1))
          + ")";
    }
    return FramedFile.location(storage, segment);
  }
}
