package io.streamstate.cli.checkpoint;

import io.streamstate.cli.json.Json;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import io.streamstate.spark.shared.checkpoint.LogJournalReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One of Spark's two logs of a checkpoint ({@code offsets/} or {@code commits/}), read as our
 * checkpoint file manager reads it (docs/protocol.md, "Spark log journal" w1 and "Hedged Spark log
 * writes" sl5), through spark-shared's and core's readers: the journals ({@code .journal-<epoch>},
 * {@link LogJournalReader}) replayed over the plain entry files, an entry's bytes taken from its
 * journal if one holds it, else from its hedge copy {@code .N.hedge} ({@link HedgeCopyFile}) when
 * that is complete and {@link HedgedLogWrites#copyStandsIn stands in} for {@code N}, else from the
 * file {@code N}. Each entry is then checked to be whole: a version line and lines of JSON, as
 * Spark writes them.
 */
public final class SparkLog {
  public static final String OFFSETS = "offsets";
  public static final String COMMITS = "commits";

  /** Where an entry's bytes were read. */
  public enum Source {
    /** The plain file {@code N}, as Spark's own manager reads it. */
    FILE,
    /** A log journal: Spark's own manager cannot read it. */
    JOURNAL,
    /** The hedge copy {@code .N.hedge}: {@code N} is shorter (torn after its hedge won). */
    HEDGE_COPY
  }

  /**
   * One live entry of the log.
   *
   * @param location the file it was read from (a journal's name for a journaled entry)
   * @param bytes its content, or null if it could not be read
   * @param problem why it is not a whole entry (torn, unparseable, unreadable), or null
   * @param hasFile whether the plain file {@code N} exists (what Spark's own manager reads)
   */
  public record Entry(
      long batchId, Source source, String location, byte[] bytes, String problem, boolean hasFile) {
    public boolean whole() {
      return problem == null;
    }

    public String text() {
      return bytes == null ? "" : new String(bytes, StandardCharsets.UTF_8);
    }
  }

  /** A file of the log directory that is not a live entry, and what it is. */
  public record Stray(String location, long length, String what) {}

  private final String name;
  private final String location;
  private final Storage storage;
  private final NavigableMap<Long, Entry> entries;
  private final List<LogJournalReader.JournalRead> journals;
  private final List<FileInfo> hedgeCopies;
  private final List<Stray> strays;
  private final long fileBytes;

  private SparkLog(
      String name,
      String location,
      Storage storage,
      NavigableMap<Long, Entry> entries,
      List<LogJournalReader.JournalRead> journals,
      List<FileInfo> hedgeCopies,
      List<Stray> strays,
      long fileBytes) {
    this.name = name;
    this.location = location;
    this.storage = storage;
    this.entries = entries;
    this.journals = journals;
    this.hedgeCopies = hedgeCopies;
    this.strays = strays;
    this.fileBytes = fileBytes;
  }

  /** Reads the log {@code name} ({@link #OFFSETS} or {@link #COMMITS}) of {@code checkpoint}. */
  static SparkLog read(Checkpoint checkpoint, String name) {
    Storage storage = checkpoint.storageAt(name);
    String location = checkpoint.location(name);
    List<FileInfo> listed = storage.list("");
    Map<String, FileInfo> byName = new HashMap<>();
    for (FileInfo f : listed) {
      byName.put(f.name(), f);
    }
    LogJournalReader.Log log = new LogJournalReader(storage).replay();
    TreeSet<Long> live = new TreeSet<>(log.entries().keySet());
    live.addAll(log.plain());
    NavigableMap<Long, Entry> entries = new TreeMap<>();
    for (long id : live) {
      entries.put(id, entry(storage, id, log.entries().get(id), byName));
    }
    List<FileInfo> hedgeCopies = new ArrayList<>();
    List<Stray> strays = new ArrayList<>();
    long fileBytes = 0;
    for (FileInfo f : listed) {
      String n = f.name();
      if (n.contains("/")) {
        strays.add(new Stray(where(storage, n), f.length(), "not an entry (in a subdirectory)"));
      } else if (LogJournalFile.isName(n)) {
        continue;
      } else if (HedgedLogWrites.isHedgeName(n)) {
        hedgeCopies.add(f);
      } else if (LogJournalReader.isEntryName(n)) {
        long id = Long.parseLong(n);
        fileBytes += f.length();
        if (!live.contains(id)) {
          strays.add(
              new Stray(
                  where(storage, n),
                  f.length(),
                  "an entry file a log journal deleted (Spark's own manager would read it as"
                      + " batch "
                      + id
                      + ")"));
        }
      } else if (!isChecksumFile(n)) {
        strays.add(new Stray(where(storage, n), f.length(), "not an entry"));
      }
    }
    return new SparkLog(
        name, location, storage, entries, log.journals(), hedgeCopies, strays, fileBytes);
  }

  /** Hadoop's checksum side files ({@code .N.crc}), which its local file system writes. */
  static boolean isChecksumFile(String name) {
    return name.startsWith(".") && name.endsWith(".crc");
  }

  private static Entry entry(
      Storage storage, long id, byte[] journaled, Map<String, FileInfo> byName) {
    String file = Long.toString(id);
    FileInfo plain = byName.get(file);
    boolean hasFile = plain != null;
    if (journaled != null) {
      return checked(id, Source.JOURNAL, journalOf(storage, byName), journaled, hasFile);
    }
    FileInfo hedge = byName.get(HedgeCopyFile.nameOf(file));
    if (hedge != null && plain != null) {
      try {
        byte[] payload =
            HedgeCopyFile.decode(
                Storages.readAll(storage, hedge.name()), where(storage, hedge.name()));
        // The manager reads a copy that stands in for N (sl5); when N is as long, they hold the
        // same bytes and N is what Spark's own manager reads too: reported as the file.
        if (HedgedLogWrites.copyStandsIn(plain.length(), payload)
            && plain.length() < payload.length) {
          return checked(id, Source.HEDGE_COPY, where(storage, hedge.name()), payload, true);
        }
      } catch (CorruptFileException | MissingFileException torn) {
        // A torn copy (its writer died): absent, as the manager takes it.
      }
    }
    try {
      byte[] bytes = Storages.readAll(storage, file);
      return checked(id, Source.FILE, where(storage, file), bytes, true);
    } catch (MissingFileException e) {
      return new Entry(id, Source.FILE, where(storage, file), null, "missing", false);
    }
  }

  /** The newest journal's name (an entry's record may be in any of them; it names the log). */
  private static String journalOf(Storage storage, Map<String, FileInfo> byName) {
    String newest = null;
    for (String n : byName.keySet()) {
      if (LogJournalFile.isName(n) && (newest == null || n.compareTo(newest) > 0)) {
        newest = n;
      }
    }
    return newest == null ? storage.describe() : where(storage, newest);
  }

  private static Entry checked(
      long id, Source source, String location, byte[] bytes, boolean hasFile) {
    return new Entry(id, source, location, bytes, problemOf(bytes), hasFile);
  }

  /**
   * Why {@code bytes} is not a whole entry of Spark's offset or commit log, or null: an entry is a
   * version line ({@code v1}), then lines that are each one JSON value, or {@code -} (Spark's
   * missing offset). Spark's entries carry no checksum: a torn one is known by its JSON.
   */
  static String problemOf(byte[] bytes) {
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    if (bytes.length == 0) {
      return "empty (torn: its write did not complete)";
    }
    if (lines.length < 2 || !lines[0].startsWith("v")) {
      return "torn or not an entry: it does not start with a version line and a JSON line ("
          + bytes.length
          + " bytes)";
    }
    for (int i = 1; i < lines.length; i++) {
      if (lines[i].equals("-")) {
        continue;
      }
      try {
        Json.parse(lines[i]);
      } catch (Json.JsonException e) {
        return "torn or unparseable: line "
            + (i + 1)
            + " is not complete JSON ("
            + bytes.length
            + " bytes; "
            + e.getMessage()
            + ")";
      }
    }
    return null;
  }

  private static String where(Storage storage, String name) {
    return FramedFile.location(storage, name);
  }

  /** {@code offsets} or {@code commits}. */
  public String name() {
    return name;
  }

  /** The log's directory. */
  public String location() {
    return location;
  }

  /** A storage rooted at the log's directory. */
  public Storage storage() {
    return storage;
  }

  /** The live entries by batch id, as our manager reads them. */
  public NavigableMap<Long, Entry> entries() {
    return entries;
  }

  /** The first live batch id, or null. */
  public Long first() {
    return entries.isEmpty() ? null : entries.firstKey();
  }

  /** The newest live batch id, or null. */
  public Long last() {
    return entries.isEmpty() ? null : entries.lastKey();
  }

  /** The log's journals, oldest first, with what each held. */
  public List<LogJournalReader.JournalRead> journals() {
    return journals;
  }

  /** Hedge copies ({@code .N.hedge}) in the directory. */
  public List<FileInfo> hedgeCopies() {
    return hedgeCopies;
  }

  /** Files of the directory that are not live entries (Spark's own manager may read some). */
  public List<Stray> strays() {
    return strays;
  }

  /** Bytes of the plain entry files. */
  public long fileBytes() {
    return fileBytes;
  }

  /** Bytes of the journals. */
  public long journalBytes() {
    long n = 0;
    for (LogJournalReader.JournalRead j : journals) {
      n += j.length();
    }
    return n;
  }

  /** Entries whose bytes only a journal holds: Spark's own manager does not see them. */
  public List<Entry> journaledOnly() {
    List<Entry> out = new ArrayList<>();
    for (Entry e : entries.values()) {
      if (e.source() == Source.JOURNAL && !e.hasFile()) {
        out.add(e);
      }
    }
    return out;
  }

  /** How the log is kept: {@code files}, {@code journal}, or {@code journal+files}. */
  public String layout() {
    boolean journal = !journals.isEmpty();
    boolean files = fileBytes > 0 || entries.values().stream().anyMatch(Entry::hasFile);
    if (journal && files) {
      return "journal+files";
    }
    return journal ? "journal" : "files";
  }
}
