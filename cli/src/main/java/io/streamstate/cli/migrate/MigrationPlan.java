package io.streamstate.cli.migrate;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.shared.StreamStateSettings;
import io.streamstate.spark.shared.checkpoint.LogJournal;
import io.streamstate.spark.shared.checkpoint.LogJournalReader;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What {@code migrate} copies, in order: every file of the source checkpoint, by its name under the
 * checkpoint's root; the state files first, then {@code sources/}, other files, the offset log, the
 * commit log, and the root {@code metadata} last (a destination without {@code metadata} is no
 * checkpoint a query would start from).
 *
 * <p>A log kept in our log journal whose destination cannot host the journal (S3: no append, no
 * fencing; our checkpoint file manager reads no journal there) is copied as spark-shared's {@link
 * LogJournal#writeOut} leaves it, the path export-logs and our manager take (docs/protocol.md, w6):
 * the log's files are copied to a local scratch directory, written out there, and the plan copies
 * the result (plain entry files, no journals). The source is never written: its journals are not
 * taken over.
 */
final class MigrationPlan implements AutoCloseable {
  /** One file to copy: its name at the destination, where its bytes are read, its length. */
  record Item(String name, Storage from, String fromName, long length) {}

  private final List<Item> items;
  private final Map<String, Long> sourceListing;
  private final List<String> notes;
  private final List<Path> scratch;

  private MigrationPlan(
      List<Item> items, Map<String, Long> sourceListing, List<String> notes, List<Path> scratch) {
    this.items = items;
    this.sourceListing = sourceListing;
    this.notes = notes;
    this.scratch = scratch;
  }

  /**
   * The plan for copying {@code source} to {@code destination}.
   *
   * @throws ConflictException a live query holds a log journal of the source, or the source is
   *     itself the destination of an unfinished migration
   */
  static MigrationPlan of(Checkpoint source, URI destination) {
    Map<String, Long> listing = listing(source.root());
    if (listing.containsKey(MigrationMarker.NAME)) {
      throw new ConflictException(
          source.location(MigrationMarker.NAME)
              + " exists: the source is itself the destination of a migration that has not"
              + " finished; finish that one first");
    }
    checkNoOpenJournal(source, listing);
    List<String> notes = new ArrayList<>();
    List<Path> scratch = new ArrayList<>();
    Map<String, Item> items = new LinkedHashMap<>();
    listing.forEach((name, length) -> items.put(name, new Item(name, source.root(), name, length)));
    try {
      for (SparkLog log : List.of(source.offsets(), source.commits())) {
        if (log.journals().isEmpty()) {
          continue;
        }
        HadoopStorage from =
            HadoopStorages.openHadoop(source.child(log.name()), source.conf(), source.resources());
        checkNoLiveWriter(from, log);
        HadoopStorage to =
            HadoopStorages.openHadoop(
                child(destination, log.name()), source.conf(), source.resources());
        if (to.appendSupported() && to.canFence()) {
          continue; // the destination hosts journals: copied as they are
        }
        Path dir = Files.createTempDirectory("streamstate-migrate-" + log.name() + "-");
        scratch.add(dir);
        int written = writeOut(source, log, dir);
        items.keySet().removeIf(n -> n.startsWith(log.name() + "/"));
        LocalStorage out = new LocalStorage(dir);
        for (FileInfo f : out.list("")) {
          String name = log.name() + "/" + f.name();
          items.put(name, new Item(name, out, f.name(), f.length()));
        }
        notes.add(
            log.name()
                + "/: "
                + written
                + " entries only in the log journal written out as files, the journals not"
                + " copied: "
                + to.describe()
                + " cannot host our log journal (no append and fencing there; our checkpoint file"
                + " manager reads no journal on it)");
      }
    } catch (IOException e) {
      scratch.forEach(MigrationPlan::deleteTree);
      throw new RetryableException(
          "Cannot write the log journal out in a scratch directory: " + e, e);
    } catch (RuntimeException e) {
      scratch.forEach(MigrationPlan::deleteTree);
      throw e;
    }
    List<Item> ordered = new ArrayList<>(items.values());
    ordered.sort(Comparator.comparingInt((Item i) -> rank(i.name())).thenComparing(Item::name));
    return new MigrationPlan(ordered, listing, notes, scratch);
  }

  /** The files in the order they are copied. */
  List<Item> items() {
    return items;
  }

  /** The source's files by name, with their lengths, as listed when the plan was made. */
  Map<String, Long> sourceListing() {
    return sourceListing;
  }

  /** What the copy does differently from a plain copy (one line each). */
  List<String> notes() {
    return notes;
  }

  long bytes() {
    return items.stream().mapToLong(Item::length).sum();
  }

  /** Every file of {@code storage} with its length, sorted by name. */
  static Map<String, Long> listing(Storage storage) {
    Map<String, Long> files = new LinkedHashMap<>();
    for (FileInfo f : storage.list("")) {
      files.put(f.name(), f.length());
    }
    return files;
  }

  /** Copy order: state, sources, other files, offsets, commits, metadata. */
  private static int rank(String name) {
    if (name.startsWith("state/")) {
      return 0;
    }
    if (name.startsWith("sources/")) {
      return 1;
    }
    if (name.startsWith("offsets/")) {
      return 3;
    }
    if (name.startsWith("commits/")) {
      return 4;
    }
    if (name.equals("metadata")) {
      return 5;
    }
    return 2;
  }

  /**
   * On local disk, refuses a log whose journal a live query holds, as export-logs' take-over does
   * ({@link HadoopStorage#fence}: on local disk it only tries the lock a live writer holds, and
   * writes nothing). Elsewhere a take-over would write to the source, and on HDFS stop the query:
   * there an open journal is found by {@link #checkNoOpenJournal}.
   */
  private static void checkNoLiveWriter(HadoopStorage dir, SparkLog log) {
    if (!"file".equals(dir.fileSystem().getUri().getScheme())) {
      return;
    }
    for (LogJournalReader.JournalRead j : log.journals()) {
      try {
        dir.fence(j.name());
      } catch (ConflictException e) {
        throw new ConflictException(
            "refused: " + e.getMessage() + " (stop the query that writes the source first)", e);
      }
    }
  }

  /**
   * On HDFS, refuses a source whose log journal or segment journal ({@code
   * state/_segments/*.journal}) is still open for writing: a live query appends to it, and the
   * NameNode lists it with the length of its completed blocks only, so no copy of it could be
   * checked. (On local disk a file's listed length is its length: a file that grows while it is
   * copied is caught by the copy's length check.)
   */
  private static void checkNoOpenJournal(Checkpoint source, Map<String, Long> listing) {
    if (!(source.root() instanceof HadoopStorage root)) {
      return;
    }
    Method isFileClosed = isFileClosed(root);
    if (isFileClosed == null) {
      return;
    }
    List<String> open = new ArrayList<>();
    for (String name : listing.keySet()) {
      if (name.endsWith(".journal")
          || LogJournalFile.isName(name.substring(name.lastIndexOf('/') + 1))) {
        try {
          if (!(Boolean)
              isFileClosed.invoke(
                  root.fileSystem(), new org.apache.hadoop.fs.Path(root.root(), name))) {
            open.add(source.location(name));
          }
        } catch (ReflectiveOperationException e) {
          throw new RetryableException(
              "Cannot ask whether " + source.location(name) + " is open: " + e.getCause(), e);
        }
      }
    }
    if (!open.isEmpty()) {
      throw new ConflictException(
          "refused: "
              + open.get(0)
              + (open.size() > 1 ? " (and " + (open.size() - 1) + " more journals)" : "")
              + " is open for writing: a live query holds it, or one that died less than the"
              + " HDFS lease's hard limit ago; stop the query first (the lease of a dead one's"
              + " file is recovered by hdfs debug recoverLease -path FILE)");
    }
  }

  private static Method isFileClosed(HadoopStorage dir) {
    try {
      return dir.fileSystem().getClass().getMethod("isFileClosed", org.apache.hadoop.fs.Path.class);
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  /**
   * Copies the log's files into {@code dir} and writes its journal out there ({@link
   * LogJournal#writeOut}).
   *
   * @return the entries written out
   */
  private static int writeOut(Checkpoint source, SparkLog log, Path dir) throws IOException {
    String prefix = log.name() + "/";
    for (FileInfo f : source.root().list(prefix)) {
      Path to = dir.resolve(f.name().substring(prefix.length()));
      Files.createDirectories(to.getParent());
      try (InputStream in = source.root().open(f.name())) {
        Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
      }
    }
    HadoopStorage scratch =
        HadoopStorages.openHadoop(dir.toUri(), source.conf(), source.resources());
    LogJournal journal =
        LogJournals.of(source.resources())
            .journal(scratch, null, StreamStateSettings.logJournalRollRecords(source.conf()));
    return journal.writeOut();
  }

  static URI child(URI root, String relative) {
    String base = root.toString();
    return URI.create((base.endsWith("/") ? base : base + "/") + relative);
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a scratch directory left in the temporary directory: harmless
    }
  }

  @Override
  public void close() {
    scratch.forEach(MigrationPlan::deleteTree);
  }
}
