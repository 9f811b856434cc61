package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The read side of a log journal (docs/protocol.md, "Spark log journal"): a replay of one log
 * directory, every journal in epoch order ({@link LogJournalFile}) over the plain entry files of
 * the directory. Within a journal it stops at the first record that is incomplete or does not
 * verify (the append that failed or is in flight). Stateless: every replay lists and reads again.
 *
 * <p>Public for the streamstate CLI ({@code cli} module), which reads a checkpoint's logs without a
 * checkpoint file manager; not an API.
 */
public final class LogJournalReader {
  private static final Logger LOG = LoggerFactory.getLogger(LogJournalReader.class);

  private final Storage storage;

  /** A reader of the log directory {@code storage} is rooted at (it lists and reads only). */
  public LogJournalReader(Storage storage) {
    this.storage = storage;
  }

  /**
   * What a replay of the directory found: live entries (journaled or not: their bytes as the
   * journals hold them), the plain entry files among the live entries, the newest epoch (-1: no
   * journal), and what each journal held.
   */
  public record Log(
      NavigableMap<Long, byte[]> entries,
      Set<Long> plain,
      long maxEpoch,
      List<JournalRead> journals) {}

  /**
   * One journal as a replay read it: its name, length, complete records, and where and why its
   * reading stopped before its end (null when it ends with a complete record, or was gone).
   */
  public record JournalRead(String name, long length, int records, String stopReason) {}

  /** Whether {@code name} is an entry file's name (a batch id). */
  public static boolean isEntryName(String name) {
    return !name.isEmpty() && name.chars().allMatch(Character::isDigit);
  }

  /** Whether the directory holds journals (one listing). */
  boolean hasJournals() {
    return storage.list("").stream().anyMatch(f -> LogJournalFile.isName(f.name()));
  }

  /** Lists the directory and replays its journals over its plain entry files. */
  public Log replay() {
    List<FileInfo> listed = storage.list("");
    NavigableMap<Long, String> journals = new TreeMap<>();
    Set<Long> plain = new TreeSet<>();
    for (FileInfo f : listed) {
      if (LogJournalFile.isName(f.name())) {
        journals.put(LogJournalFile.epochOf(f.name()), f.name());
      } else if (isEntryName(f.name())) {
        plain.add(Long.parseLong(f.name()));
      }
    }
    NavigableMap<Long, byte[]> replayed = new TreeMap<>();
    List<JournalRead> read = new ArrayList<>();
    for (String journal : journals.values()) {
      JournalRead r = readJournal(journal, replayed, plain);
      if (r != null) {
        read.add(r);
      }
    }
    return new Log(replayed, plain, journals.isEmpty() ? -1 : journals.lastKey(), read);
  }

  /**
   * Applies one journal's complete records to {@code into}; a delete also hides a plain file.
   * Returns what it read, or null if the journal was gone.
   */
  private JournalRead readJournal(String name, NavigableMap<Long, byte[]> into, Set<Long> plain) {
    byte[] bytes;
    try (InputStream in = storage.open(name)) {
      bytes = in.readAllBytes();
    } catch (MissingFileException e) {
      return null; // rolled away meanwhile: its entries are in a newer journal
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + where(name) + ": " + e, e);
    }
    LogJournalFile.Contents contents = LogJournalFile.read(bytes, where(name));
    if (contents.stopReason() != null) {
      LOG.debug("{} ends with {}", where(name), contents.stopReason());
    }
    for (LogJournalFile.Record r : contents.records()) {
      if (r.isPut()) {
        into.put(r.batchId(), r.payload());
      } else {
        into.remove(r.batchId());
        plain.remove(r.batchId());
      }
    }
    return new JournalRead(name, bytes.length, contents.records().size(), contents.stopReason());
  }

  /** The file {@code name} of this log directory, for messages. */
  public String where(String name) {
    return storage.describe() + "/" + name;
  }
}
